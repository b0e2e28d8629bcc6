package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kb-bench/kb-bench/internal/procattr"
)

// process is one control-plane process: a child of this kb-bench (exited is
// set) or one found again from a `local up` state file (exited is nil, and
// liveness comes from /proc).
type process struct {
	name string
	pid  int
	// startTicks is the process start time from /proc/<pid>/stat; with the
	// pid it tells the process from a later one that reused the pid.
	startTicks uint64
	logPath    string
	// exited is closed once the child has been reaped; waitErr is then its
	// exit status.
	exited  chan struct{}
	waitErr error
}

// startProcess runs path with args, stdout and stderr appended to logPath.
// An attached process gets its own process group and SIGKILL when kb-bench
// dies; a detached one gets its own session and outlives kb-bench.
func startProcess(name, path string, args []string, logPath string, detached bool) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p := &process{name: name, logPath: logPath, exited: make(chan struct{})}
	if detached {
		cmd.SysProcAttr = procattr.Detached()
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
		go func() {
			p.waitErr = cmd.Wait()
			close(p.exited)
		}()
	} else {
		cmd.SysProcAttr = procattr.Attached()
		if err := startOnLockedThread(cmd, p); err != nil {
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
	}
	p.pid = cmd.Process.Pid
	p.startTicks, _ = procStat(p.pid)
	return p, nil
}

// startOnLockedThread starts cmd from a goroutine locked to its OS thread
// that stays there until the child is reaped.
//
// The parent-death signal (prctl PR_SET_PDEATHSIG) fires when the *thread*
// that forked the child exits, not the process (golang/go#27505). The Go
// runtime ends a thread when a goroutine exits while locked to it, which any
// library may do, and that thread could be the one that forked our child:
// the apiserver would be killed mid-run. Keeping the forking thread locked
// to a goroutine that only waits for the child means no other goroutine
// ever runs on it, so it lives exactly as long as the child needs it.
func startOnLockedThread(cmd *exec.Cmd, p *process) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			runtime.UnlockOSThread()
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.exited)
		// The child is gone; the thread may serve other goroutines again.
		runtime.UnlockOSThread()
	}()
	return <-started
}

// running reports whether the process still runs (a zombie does not).
func (p *process) running() bool {
	if p == nil {
		return false
	}
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
			return true
		}
	}
	return alive(p.pid, p.startTicks)
}

// exitStatus describes how an exited child ended.
func (p *process) exitStatus() string {
	if p.exited == nil {
		return "exited"
	}
	select {
	case <-p.exited:
	default:
		return "running"
	}
	if p.waitErr == nil {
		return "exited with status 0"
	}
	return "exited: " + p.waitErr.Error()
}

// waitGone waits until the process no longer runs, for at most d or until
// ctx ends; it reports whether it is gone.
func (p *process) waitGone(ctx context.Context, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for p.running() {
		var exited <-chan struct{} = p.exited // nil for non-children: never ready
		select {
		case <-exited:
		case <-tick.C:
		case <-deadline.C:
			return !p.running()
		case <-ctx.Done():
			return !p.running()
		}
	}
	return true
}

// terminate asks the process to stop with SIGTERM, waits up to grace (less
// if ctx ends first), then SIGKILLs its process group and waits for it.
func (p *process) terminate(ctx context.Context, grace time.Duration) error {
	if !p.running() {
		return nil
	}
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s (pid %d): %w", p.name, p.pid, err)
	}
	// A stopped process (SIGSTOP, a debugger) acts on SIGTERM only once
	// it runs again: without this it would wait out the grace period.
	_ = syscall.Kill(p.pid, syscall.SIGCONT)
	if p.waitGone(ctx, grace) {
		return nil
	}
	// Its own process group (Setpgid or Setsid): pgid == pid. Checked
	// running just above, so the pid is still ours.
	if p.running() {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	if p.waitGone(context.Background(), 10*time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) is still running after SIGKILL: kill it by hand (kill -9 %d)", p.name, p.pid, p.pid)
}

// logTail returns the last n lines of the process's log.
func (p *process) logTail(n int) string {
	if p == nil {
		return ""
	}
	return fileTail(p.logPath, n)
}

func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	// Only the end matters; the apiserver log can be long.
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(fi.Size()-window, 0)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	if len(lines) == 0 {
		return "(empty log)"
	}
	return strings.Join(lines, "\n")
}

// janitorScript is run by `sh -c` in its own session with a pipe from
// kb-bench on stdin. kb-bench sends "pg PID" for each process group and
// "dir PATH" for each directory to clean, and "done" when it has cleaned up
// itself. EOF without "done" means kb-bench died (kill -9, crash): then the
// janitor kills the process groups, waits for them to be gone (a zombie
// counts as gone) and removes the directories.
const janitorScript = `# kb-bench janitor: cleans up the local control plane if kb-bench dies
pgs=
set --
while IFS= read -r line; do
	case "$line" in
	"pg "*) pgs="$pgs ${line#pg }" ;;
	"dir "*) set -- "$@" "${line#dir }" ;;
	done) exit 0 ;;
	esac
done
for p in $pgs; do kill -9 "-$p" 2>/dev/null; done
i=0
while [ "$i" -lt 100 ]; do
	left=
	for p in $pgs; do
		st=
		if [ -r "/proc/$p/stat" ]; then read -r _ _ st _ < "/proc/$p/stat"; fi
		if [ -n "$st" ] && [ "$st" != Z ]; then left=1; fi
	done
	[ -z "$left" ] && break
	sleep 0.1
	i=$((i+1))
done
rm -rf -- "$@"
`

// janitor cleans up after a kb-bench that was killed before it could: see
// janitorScript.
type janitor struct {
	mu   sync.Mutex
	w    *os.File
	done chan struct{}
}

func startJanitor() (*janitor, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", janitorScript, "kb-bench-janitor")
	cmd.Stdin = r
	// Its own session: a Ctrl-C at the terminal or a kill of kb-bench's
	// process group does not reach it.
	cmd.SysProcAttr = procattr.Detached()
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the cleanup helper (/bin/sh): %w", err)
	}
	j := &janitor{w: w, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(j.done)
	}()
	return j, nil
}

func (j *janitor) send(line string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.w != nil {
		_, _ = fmt.Fprintln(j.w, line)
	}
}

func (j *janitor) watchGroup(pid int)  { j.send(fmt.Sprintf("pg %d", pid)) }
func (j *janitor) watchDir(dir string) { j.send("dir " + dir) }

// release tells the janitor that kb-bench cleaned up itself, so it exits
// without touching anything.
func (j *janitor) release() {
	if j == nil {
		return
	}
	j.send("done")
	j.mu.Lock()
	if j.w != nil {
		j.w.Close()
		j.w = nil
	}
	j.mu.Unlock()
	select {
	case <-j.done:
	case <-time.After(5 * time.Second):
	}
}
