// Package proc is kb-bench's one supervisor of child processes: the local
// control plane's etcd, kube-apiserver and kube-controller-manager, a
// distributed run's shard processes and a leader-election run's candidate
// processes. It starts them tied to kb-bench's life or outliving it, keeps
// the end of what they say, stops them with a grace period (continuing a
// stopped one first), and, with a Janitor, cleans up after a kb-bench that
// was killed.
package proc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Process is one child process of kb-bench (Exited is not nil), or one
// found again by its pid and start time, such as a `local up` control
// plane's (Exited is nil, and liveness comes from /proc).
type Process struct {
	// Name names it in messages.
	Name string
	Pid  int
	// StartTicks is its start time from /proc/<pid>/stat; with the pid it
	// tells the process from a later one that reused the pid.
	StartTicks uint64
	// Log is the file its output is appended to ("": kept in memory).
	Log string

	tail    *Tail
	exited  chan struct{}
	waitErr error
	state   *os.ProcessState
}

// Start starts cmd and returns at once; the process is reaped in the
// background (Exited). Its stdout and stderr, unless cmd sets them, are
// appended to the file log, or, when log is "", their end is kept in
// memory (Last). A detached process has a session of its own and outlives
// kb-bench; an attached one has a process group of its own (a Ctrl-C at
// the terminal reaches only kb-bench, which stops it in order) and is
// SIGKILLed by the kernel when kb-bench dies. name names it in messages.
func Start(cmd *exec.Cmd, name, log string, detached bool) (*Process, error) {
	p := &Process{Name: name, Log: log, exited: make(chan struct{})}
	var out io.Writer
	if log != "" {
		f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child has its own descriptor
		out = f
	} else {
		p.tail = &Tail{}
		out = p.tail
	}
	cmd.Stdout, cmd.Stderr = cmp.Or(cmd.Stdout, out), cmp.Or(cmd.Stderr, out)
	reap := func() {
		p.waitErr = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}
	var err error
	if detached {
		cmd.SysProcAttr = detachedAttr()
		if err = cmd.Start(); err == nil {
			go reap()
		}
	} else {
		cmd.SysProcAttr = attachedAttr()
		err = startOnLockedThread(cmd, reap)
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p.Pid = cmd.Process.Pid
	p.StartTicks, _ = Stat(p.Pid)
	return p, nil
}

// detachedAttr gives a child its own session so it outlives kb-bench.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// startOnLockedThread starts cmd from a goroutine locked to its OS thread
// that stays there until the child is reaped (reap).
//
// The parent-death signal (prctl PR_SET_PDEATHSIG) fires when the *thread*
// that forked the child exits, not the process (golang/go#27505). The Go
// runtime ends a thread when a goroutine exits while locked to it, which any
// library may do, and that thread could be the one that forked our child:
// the child would be killed mid-run. Keeping the forking thread locked
// to a goroutine that only waits for the child means no other goroutine
// ever runs on it, so it lives exactly as long as the child needs it.
func startOnLockedThread(cmd *exec.Cmd, reap func()) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Once the child is gone (or never started), the thread may serve
		// other goroutines again.
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			reap()
		}
	}()
	return <-started
}

// Exited is closed once the child has been reaped (nil for a process
// found again: never).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitCode is an exited child's exit status (-1 when a signal ended it).
func (p *Process) ExitCode() int {
	<-p.exited
	return p.state.ExitCode()
}

// Running reports whether the process still runs (a zombie does not).
func (p *Process) Running() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
			return true
		}
	}
	return Alive(p.Pid, p.StartTicks)
}

// ExitStatus describes how an exited child ended.
func (p *Process) ExitStatus() string {
	if p.exited == nil {
		return "exited"
	}
	if p.Running() {
		return "running"
	}
	if p.waitErr == nil {
		return "exited with status 0"
	}
	return "exited: " + p.waitErr.Error()
}

// Err is how an exited child ended (nil: status 0).
func (p *Process) Err() error {
	<-p.exited
	return p.waitErr
}

// Signal sends sig to the process (not its group).
func (p *Process) Signal(sig syscall.Signal) error { return syscall.Kill(p.Pid, sig) }

// waitGone waits until the process no longer runs, for at most d or until
// ctx ends; it reports whether it is gone.
func (p *Process) waitGone(ctx context.Context, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for p.Running() {
		select {
		case <-p.exited: // nil for non-children: never ready
		case <-time.After(25 * time.Millisecond):
		case <-ctx.Done():
			return !p.Running()
		}
	}
	return true
}

// Stop asks the process to stop (ask; nil sends SIGTERM), continues it in
// case it is stopped (SIGSTOP, a debugger: it acts on the request only
// once it runs again), and waits up to grace, less if ctx ends first;
// then it SIGKILLs the process's group and waits for it. It reports
// whether the process had to be killed.
func (p *Process) Stop(ctx context.Context, grace time.Duration, ask func()) (killed bool, err error) {
	if !p.Running() {
		return false, nil
	}
	if ask != nil {
		ask()
	} else if err := p.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return false, fmt.Errorf("stopping %s (pid %d): %w", p.Name, p.Pid, err)
	}
	_ = p.Signal(syscall.SIGCONT)
	if p.waitGone(ctx, grace) {
		return false, nil
	}
	// Its own process group (Setpgid or Setsid): pgid == pid. Checked
	// running just above, so the pid is still ours.
	if p.Running() {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	if p.waitGone(context.Background(), 10*time.Second) {
		return true, nil
	}
	return true, fmt.Errorf("%s (pid %d) is still running after SIGKILL: kill it by hand (kill -9 %d)", p.Name, p.Pid, p.Pid)
}

// Last is what a process without a log file said last, as ": line" (see
// Tail.Last).
func (p *Process) Last() string {
	if p.tail == nil {
		return ""
	}
	return p.tail.Last()
}

// LogTail returns the last n lines of the process's log file.
func (p *Process) LogTail(n int) string {
	f, err := os.Open(p.Log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	// Only the end matters; the apiserver log can be long.
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(fi.Size()-window, 0)
	}
	b, _ := io.ReadAll(f)
	if len(b) == 0 {
		return "(empty log)"
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
