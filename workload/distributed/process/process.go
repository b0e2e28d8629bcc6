// Package process starts a distributed run's shards as local kb-bench
// processes (kb-bench run --shards N --runner process): for tests without
// nodes, and for big machines where one Go process is the bottleneck. Each
// shard reaches the target through a kubeconfig it reads from its stdin,
// and hands its result back through a pipe of its own too, so that a run
// whose apiserver is lost keeps what the shards measured up to the loss.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/internal/proc"
	"github.com/kb-bench/kb-bench/workload/distributed"
)

// Runner starts shards as child processes of Executable.
type Runner struct {
	// Executable is the kb-bench binary to run ("kb-bench shard ...").
	Executable string
	// Config is the target's connection, handed to each shard.
	Config *rest.Config
}

var _ distributed.ShardRunner = Runner{}

// Start starts the shards and returns at once.
func (r Runner) Start(ctx context.Context, run distributed.ShardRun) (distributed.ShardGroup, error) {
	kc, err := cluster.Kubeconfig(r.Config)
	if err != nil {
		return nil, fmt.Errorf("handing the target to the shard processes: %w", err)
	}
	g := &group{failed: make(chan error, run.Shards), stopping: make(chan struct{})}
	for i := range run.Shards {
		cmd := exec.Command(r.Executable, "shard",
			"--namespace", run.Namespace, "--run-id", run.RunID, "--index", strconv.Itoa(i), "--kubeconfig", "-")
		// The shard's result also comes back through a pipe, which needs
		// no apiserver: what a run that lost its target keeps.
		handed, w, err := handoff()
		if err != nil {
			return nil, g.abort(err)
		}
		defer w.Close() // the child has its own copy once started
		g.handed = append(g.handed, handed)
		cmd.ExtraFiles = []*os.File{w}
		cmd.Args = append(cmd.Args, "--result-fd", "3")
		if run.Live {
			// The shard serves its figures on a loopback listener made
			// here and handed down, so the coordinator knows where
			// without asking, and no port is guessed.
			f, url, err := liveListener()
			if err != nil {
				return nil, g.abort(err)
			}
			defer f.Close() // the child has its own copy once started
			cmd.ExtraFiles = append(cmd.ExtraFiles, f)
			cmd.Args = append(cmd.Args, "--live-fd", "4")
			g.urls = append(g.urls, url)
		}
		// The credentials go through a pipe, never a file that a killed
		// coordinator would leave behind.
		cmd.Stdin = bytes.NewReader(kc)
		// Attached: a Ctrl-C reaches only the coordinator, and the shards
		// die with it.
		p, err := proc.Start(cmd, fmt.Sprintf("shard %d", i), "", false)
		if err != nil {
			w.Close() // and so the pipe's reader ends
			return nil, g.abort(fmt.Errorf("starting shard %d (%s): %w", i, r.Executable, err))
		}
		g.wg.Go(func() {
			<-p.Exited()
			select {
			case <-g.stopping:
				return // stopped on purpose
			default:
			}
			if err := p.Err(); err != nil {
				err = fmt.Errorf("shard %d (pid %d) exited before the run ended (%v)%s", i, p.Pid, err, p.Last())
				g.failed <- distributed.ShardExited(p.ExitCode(), err)
			}
		})
		g.procs = append(g.procs, p)
	}
	return g, nil
}

// abort stops the shards started so far, which wait for a run that will
// not come, at once, and returns err.
func (g *group) abort(err error) error {
	stopNow, cancel := context.WithCancel(context.Background())
	cancel()
	_ = g.Stop(stopNow)
	return err
}

// liveListener listens on a free loopback port for a shard's figures and
// returns the listener as a file to hand down, and its URL.
func liveListener() (*os.File, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listening for a shard's live figures: %w", err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, "", fmt.Errorf("handing a shard its listener: %w", err)
	}
	return f, "http://" + ln.Addr().String() + "/", nil
}

// maxHanded bounds a shard's result read from its pipe: a result holds a
// few histograms, kilobytes to a few megabytes.
const maxHanded = 256 << 20

// handedResult is what one shard writes to its pipe, read until the shard
// closes it (it exits).
type handedResult struct {
	done chan struct{}
	data []byte
	err  error
}

// handoff makes a shard's result pipe: it returns the reading side's
// result, read in the background, and the writing side to hand down.
func handoff() (*handedResult, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("making a shard's result pipe: %w", err)
	}
	h := &handedResult{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		defer r.Close()
		h.data, h.err = io.ReadAll(io.LimitReader(r, maxHanded))
		_, _ = io.Copy(io.Discard, r) // past the bound: let the shard finish
	}()
	return h, w, nil
}

// Handed waits until each shard has closed its result pipe (it exited) or
// ctx ends, and returns what each wrote there (nil: nothing, or not yet).
func (g *group) Handed(ctx context.Context) [][]byte {
	out := make([][]byte, len(g.handed))
	for i, h := range g.handed {
		select {
		case <-h.done:
			if h.err == nil && len(h.data) > 0 && len(h.data) < maxHanded {
				out[i] = h.data
			}
		case <-ctx.Done():
		}
	}
	return out
}

// LiveURLs are where the shards serve their figures (ShardRun.Live).
func (g *group) LiveURLs() []string { return g.urls }

// group is the started shard processes.
type group struct {
	handed   []*handedResult
	urls     []string
	procs    []*proc.Process
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
// (or at once, when ctx is already done) are stopped: SIGTERM, and
// SIGKILL killAfter later.
func (g *group) Stop(ctx context.Context) error {
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	g.once.Do(func() { close(g.stopping) })
	var killed atomic.Bool
	var stops sync.WaitGroup
	for _, p := range g.procs {
		stops.Go(func() {
			if k, _ := p.Stop(context.Background(), killAfter, nil); k {
				killed.Store(true)
			}
		})
	}
	stops.Wait()
	<-done
	if killed.Load() {
		return errors.New("shard processes that did not stop on SIGTERM were killed")
	}
	return nil
}

// killAfter is how long a shard has to stop after SIGTERM.
const killAfter = 5 * time.Second
