package leaderelection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/internal/proc"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// With the pause fault every candidate is a process of its own (RunCandidate),
// so that SIGSTOP freezes all of a leader at once (its renewals, watch,
// leader-only writes and timers), as a long GC or VM pause does.

// processStartTimeout bounds how long a candidate process may take to say
// hello. It only turns a process that never starts into an error.
const processStartTimeout = 30 * time.Second

// processStopGrace is how long a stopped candidate process gets, beyond
// two requests' timeouts (a releasing leader's read and write), before it
// is killed.
const processStopGrace = 5 * time.Second

// candidateProcess is a candidate slot running as a process of its own.
type candidateProcess struct {
	slot  int
	proc  *proc.Process
	stdin io.WriteCloser
	hello chan struct{} // closed when it has said hello
	// exited is closed when its output has ended and it has exited.
	exited chan struct{}
	// stopping is set once the run has told it to stop.
	stopping atomic.Bool
}

// startProcesses starts the proxy and one candidate process per slot, and
// waits for each to say hello (the campaigns begin at Start).
func (r *election) startProcesses(ctx context.Context) (err error) {
	if os.Getenv(CandidateEnv) != "" {
		// A binary that did not look for CandidateEnv first (a test binary
		// without CandidateMain in its TestMain) would start candidates of
		// its own in every candidate: stop at the first level.
		return fmt.Errorf("leader election: this process is itself a candidate process (%s is set), so it starts none: its main must call bench.Child (or leaderelection.CandidateMain) first", CandidateEnv)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("leader election: the pause fault runs candidates as kb-bench processes, but kb-bench's executable is not known: %w", err)
	}
	if r.proxy, err = startProxy(r.env); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			r.stopProcesses()
		}
	}()
	var pids []string
	for slot := range r.env.Spec.Writers {
		p, err := r.startProcess(exe, slot)
		if err != nil {
			return err
		}
		r.procs, pids = append(r.procs, p), append(pids, strconv.Itoa(p.proc.Pid))
	}
	timeout := time.After(processStartTimeout)
	for _, p := range r.procs {
		select {
		case <-p.hello:
		case <-p.exited:
			return fmt.Errorf("leader election: candidate process %d (%s) exited before it started: %v%s", p.slot, exe, p.proc.Err(), p.proc.Last())
		case <-timeout:
			return fmt.Errorf("leader election: candidate process %d (%s, pid %d) did not start within %s: is the machine overloaded?%s", p.slot, exe, p.proc.Pid, processStartTimeout, p.proc.Last())
		case <-ctx.Done():
			return fmt.Errorf("leader election: starting the candidate processes: %w", ctx.Err())
		}
	}
	fmt.Fprintf(r.env.Log, "leader election: for the pause fault each candidate is a process of its own (pids %s), reaching the apiserver through the run's clients by a proxy on http://%s\n",
		strings.Join(pids, ", "), r.proxy.Addr)
	return nil
}

// startProcess starts slot's candidate process and the goroutine that
// reads its events. Its stdout is a pipe of kb-bench's own (not one that
// exec closes at Wait), so that its events are read to the end whenever
// it exits.
func (r *election) startProcess(exe string, slot int) (*candidateProcess, error) {
	p := &candidateProcess{slot: slot, hello: make(chan struct{}), exited: make(chan struct{})}
	fromChild, stdout, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: exe, Args: []string{fmt.Sprintf("kb-bench-candidate-%d", slot)}, Env: append(os.Environ(), CandidateEnv+"=1"), Stdout: stdout}
	if p.stdin, err = cmd.StdinPipe(); err == nil {
		p.proc, err = proc.Start(cmd, fmt.Sprintf("candidate process %d", slot), "", false)
	}
	stdout.Close() // the child's end
	if err != nil {
		fromChild.Close()
		return nil, fmt.Errorf("leader election: starting candidate process %d (%s): %w", slot, exe, err)
	}
	go func() {
		defer close(p.exited)
		defer fromChild.Close()
		var bad error
		for dec := json.NewDecoder(fromChild); bad == nil; {
			var e event
			switch bad = dec.Decode(&e); {
			case bad != nil:
			case e.Kind == evHello:
				close(p.hello)
			default:
				bad = r.observe(slot, e)
			}
		}
		if errors.Is(bad, io.EOF) {
			bad = nil // its output ended
		} else {
			_ = p.proc.Signal(syscall.SIGKILL)
			_, _ = io.Copy(io.Discard, fromChild)
		}
		exitErr := p.proc.Err()
		// A process that is gone believes nothing any more.
		_ = r.observe(slot, event{Kind: evEnded, End: time.Now()})
		// One that ended before the run stopped it is a warning now, and
		// a failed check at the end.
		var lost string
		switch {
		case bad != nil:
			lost = fmt.Sprintf("candidate process %d (pid %d) wrote what is not an event (%v) and was killed", slot, p.proc.Pid, bad)
		case !p.stopping.Load():
			lost = fmt.Sprintf("candidate process %d (pid %d) exited: %v%s", slot, p.proc.Pid, exitErr, p.proc.Last())
		default:
			return
		}
		r.env.Warn("leader election: %s", lost)
		r.mu.Lock()
		r.procsLost = append(r.procsLost, lost)
		r.mu.Unlock()
	}()
	return p, nil
}

// begin starts the process's campaign and returns what stops it.
func (r *election) begin(p *candidateProcess) func() {
	cfg := r.config(p.slot)
	cfg.Server = "http://" + r.proxy.Addr + slotPrefix(p.slot)
	// One line of JSON, written at once.
	if err := json.NewEncoder(p.stdin).Encode(cfg); err != nil {
		r.env.Warn("leader election: starting candidate process %d's campaign: %v", p.slot, err)
	}
	return func() { r.stopProcess(p) }
}

// stopProcess tells p to stop (its stdin ends), continues it if it is
// paused, and waits for it to exit; one that does not within two request
// timeouts and processStopGrace is killed. Calling it again waits no more.
func (r *election) stopProcess(p *candidateProcess) {
	p.stopping.Store(true)
	grace := 2*r.env.Spec.OpTimeout.Duration + processStopGrace
	_ = p.stdin.Close() // asks it to stop (again: harmless)
	killed, _ := p.proc.Stop(context.Background(), grace, func() {})
	<-p.exited
	if killed {
		r.env.Warn("leader election: candidate process %d did not stop within %s of being told to: killed", p.slot, grace)
	}
}

// stopProcesses stops every candidate process and then the proxy.
func (r *election) stopProcesses() {
	var wg sync.WaitGroup
	for _, p := range r.procs {
		wg.Go(func() { r.stopProcess(p) })
	}
	wg.Wait()
	if r.proxy != nil {
		_ = r.proxy.Close()
	}
}

func slotPrefix(slot int) string { return "/slot/" + strconv.Itoa(slot) }

// startProxy starts the proxy by which candidate processes reach the
// apiserver through the run's clients: a request to /slot/N/... goes out
// through the transport of Env.Client(N), so that the engine counts it,
// holds it at the measured window's edges and sees its errors. It listens
// on loopback only, at http://Addr.
func startProxy(env *scenario.Env) (*http.Server, error) {
	mux := http.NewServeMux()
	for slot := range env.Spec.Writers {
		rc, ok := env.Client(slot).CoordinationV1().RESTClient().(*rest.RESTClient)
		if !ok || rc.Client == nil || rc.Client.Transport == nil {
			return nil, fmt.Errorf("leader election: the run's clients are not client-go REST clients with a transport, which candidate processes need (a bug in kb-bench: please report it)")
		}
		// The client's URLs are its server's (with any path the kubeconfig
		// gives it) followed by the group's versioned path.
		target := rc.Get().URL()
		base := strings.TrimSuffix(target.Path, rest.DefaultVersionedAPIPath("/apis", coordinationv1.SchemeGroupVersion))
		prefix := slotPrefix(slot)
		mux.Handle(prefix+"/", &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
				pr.Out.URL.Path = base + strings.TrimPrefix(pr.In.URL.Path, prefix)
				pr.Out.URL.RawPath = ""
				pr.Out.Host = ""
				// The run's client says who it is.
				pr.Out.Header.Del("User-Agent")
			},
			Transport:     stampSent{rc.Client.Transport},
			FlushInterval: -1, // watch events as they come
			ErrorHandler:  proxyError,
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("leader election: the candidate processes' proxy cannot listen on loopback: %w", err)
	}
	srv := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// stampSent tells the candidate process when its request left the run's
// client for the apiserver (sentHeader).
type stampSent struct{ next http.RoundTripper }

func (s stampSent) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, sent := withSent(req.Context())
	resp, err := s.next.RoundTrip(req.WithContext(ctx))
	if t := sent.Load(); err == nil && t != nil {
		resp.Header.Set(sentHeader, strconv.FormatInt(t.UnixNano(), 10))
	}
	return resp, err
}

// proxyError answers a request the apiserver did not answer, saying why
// (errorHeader) for the candidate process's client to rebuild the error.
func proxyError(w http.ResponseWriter, _ *http.Request, err error) {
	kind := "other"
	switch {
	case errors.Is(err, k8s.ErrNotSent):
		kind = "not-sent"
	case metrics.Classify(err) == metrics.Timeout:
		kind = "timeout"
	}
	w.Header().Set(errorHeader, kind)
	w.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(w, err.Error())
}
