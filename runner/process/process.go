// Package process starts a distributed run's shards as local kb-bench
// processes (kb-bench run --shards N --runner process): for tests without
// nodes, and for big machines where one Go process is the bottleneck. Each
// shard reaches the target through a kubeconfig it reads from its stdin.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/internal/procattr"
	"github.com/kb-bench/kb-bench/internal/proctail"
	"github.com/kb-bench/kb-bench/workload"
)

// Runner starts shards as child processes of Executable.
type Runner struct {
	// Executable is the kb-bench binary to run ("kb-bench shard ...").
	Executable string
	// Config is the target's connection, handed to each shard.
	Config *rest.Config
}

var _ workload.ShardRunner = Runner{}

// Start starts the shards and returns at once.
func (r Runner) Start(ctx context.Context, run workload.ShardRun) (workload.ShardGroup, error) {
	kc, err := cluster.Kubeconfig(r.Config)
	if err != nil {
		return nil, fmt.Errorf("handing the target to the shard processes: %w", err)
	}
	g := &group{failed: make(chan error, run.Shards), stopping: make(chan struct{})}
	for i := range run.Shards {
		cmd := exec.Command(r.Executable, "shard",
			"--namespace", run.Namespace, "--run-id", run.RunID, "--index", strconv.Itoa(i), "--kubeconfig", "-")
		// The credentials go through a pipe, never a file that a killed
		// coordinator would leave behind.
		cmd.Stdin = bytes.NewReader(kc)
		cmd.SysProcAttr = procattr.Attached() // a Ctrl-C reaches only the coordinator, and the shards die with it
		out := &proctail.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			// The shards started wait for a run that will not come: stop
			// them now.
			stopNow, cancel := context.WithCancel(context.WithoutCancel(ctx))
			cancel()
			_ = g.Stop(stopNow)
			return nil, fmt.Errorf("starting shard %d (%s): %w", i, r.Executable, err)
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			err := cmd.Wait()
			select {
			case <-g.stopping:
				return // stopped on purpose
			default:
			}
			if err != nil {
				err = fmt.Errorf("shard %d (pid %d) exited before the run ended (%v)%s", i, cmd.Process.Pid, err, out.Last())
				if cmd.ProcessState.ExitCode() == workload.ExitTargetLost {
					err = fmt.Errorf("%w: %w", workload.ErrTargetLost, err)
				}
				g.failed <- err
			}
		}()
		g.procs = append(g.procs, cmd.Process)
	}
	return g, nil
}

// group is the started shard processes.
type group struct {
	procs    []*os.Process
	wg       sync.WaitGroup
	failed   chan error
	stopping chan struct{}
	once     sync.Once
}

func (g *group) Failed() <-chan error { return g.failed }

// Status lists the shard processes.
func (g *group) Status() string {
	pids := make([]string, len(g.procs))
	for i, p := range g.procs {
		pids[i] = fmt.Sprintf("shard %d pid %d", i, p.Pid)
	}
	return strings.Join(pids, ", ")
}

// Stop waits for the shards to exit; those still running when ctx is done
// (or at once, when ctx is already done) get SIGTERM, and SIGKILL a few
// seconds later.
func (g *group) Stop(ctx context.Context) error {
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		g.once.Do(func() { close(g.stopping) })
		g.signal(syscall.SIGTERM)
		g.signal(syscall.SIGCONT) // a stopped shard acts on SIGTERM only once it runs
		t := time.NewTimer(killAfter)
		select {
		case <-done:
		case <-t.C:
			g.signal(syscall.SIGKILL)
			<-done
			err = errors.New("shard processes that did not stop on SIGTERM were killed")
		}
		t.Stop()
	}
	return err
}

// killAfter is how long a shard has to stop after SIGTERM.
const killAfter = 5 * time.Second

func (g *group) signal(sig os.Signal) {
	for _, p := range g.procs {
		_ = p.Signal(sig)
	}
}
