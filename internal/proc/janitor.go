package proc

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// janitorScript is run by `sh -c` in its own session with a pipe from
// kb-bench on stdin. kb-bench sends "pg PID" for each process group,
// "dir PATH" for each directory to clean and "sh COMMAND" for each shell
// command to run (one line each, e.g. the removal of a kind cluster's
// containers), and "done" when it has cleaned up itself. EOF without
// "done" means kb-bench died (kill -9, crash): then the janitor kills the
// process groups, waits for them to be gone (a zombie counts as gone),
// runs the commands and removes the directories.
const janitorScript = `# kb-bench janitor: cleans up the local control plane if kb-bench dies
pgs=
run=
set --
while IFS= read -r line; do
	case "$line" in
	"pg "*) pgs="$pgs ${line#pg }" ;;
	"dir "*) set -- "$@" "${line#dir }" ;;
	"sh "*) run="$run
${line#sh }" ;;
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
eval "$run"
rm -rf -- "$@"
`

// Janitor cleans up after a kb-bench that was killed before it could:
// it kills the process groups, runs the commands and removes the
// directories it was told to watch, unless released first (see
// janitorScript).
type Janitor struct {
	mu   sync.Mutex
	w    io.WriteCloser
	done chan struct{}
}

// StartJanitor starts the janitor, a shell in a session of its own.
func StartJanitor() (*Janitor, error) {
	cmd := exec.Command("/bin/sh", "-c", janitorScript, "kb-bench-janitor")
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Its own session: a Ctrl-C at the terminal or a kill of kb-bench's
	// process group does not reach it.
	cmd.SysProcAttr = detachedAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the cleanup helper (/bin/sh): %w", err)
	}
	j := &Janitor{w: w, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(j.done)
	}()
	return j, nil
}

func (j *Janitor) send(line string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.w != nil {
		_, _ = fmt.Fprintln(j.w, line)
	}
}

// WatchGroup has the janitor kill process group pid.
func (j *Janitor) WatchGroup(pid int) { j.send(fmt.Sprintf("pg %d", pid)) }

// WatchDir has the janitor remove dir.
func (j *Janitor) WatchDir(dir string) { j.send("dir " + dir) }

// RunOnDeath has the janitor run the shell command line cmd if kb-bench
// dies before Release.
func (j *Janitor) RunOnDeath(cmd string) { j.send("sh " + cmd) }

// Release tells the janitor that kb-bench cleaned up itself, so it exits
// without touching anything.
func (j *Janitor) Release() {
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
