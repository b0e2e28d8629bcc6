// Package workload is kb-bench's engine: it sets up a run's namespace and
// objects on the target apiserver, runs the writers (strategies, key
// choosers, closed or open loop) for the counter scenario or hands over to a
// scenario package, checks the objects for lost updates, cleans up, and
// returns what was measured as a results.Result. It knows nothing of flags,
// files or terminals.
package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/metrics/clientgo"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/controllerstatus"
	"github.com/kb-bench/kb-bench/workload/leaderelection"
	"github.com/kb-bench/kb-bench/workload/quota"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Options are what Run needs besides the Spec.
type Options struct {
	// Config is the target's base config (host, TLS, auth); Run applies
	// spec.Client (QPS/Burst, content type, user agent) to copies.
	Config *rest.Config
	// RunID names the run: the namespace is "kb-bench-"+RunID, labelled
	// app.kubernetes.io/managed-by=kb-bench and kb-bench.io/run-id=RunID.
	RunID string
	// Version is kb-bench's version; the default user agent is
	// "kb-bench/"+Version.
	Version string
	// Progress, when set, is called about once a second from one goroutine
	// during the measured window, with the time since it began and the
	// interval that just ended.
	Progress func(elapsed time.Duration, p metrics.SeriesPoint)
	// Log receives warnings and notes (may be nil).
	Log io.Writer
	// FinalizeNamespace is for targets that run no namespace controller
	// (kb-bench's local control plane): after deleting its contents, Run
	// finalizes the namespace itself so it is really gone. Never set it for
	// a real cluster, whose controller also removes what others added.
	FinalizeNamespace bool
}

// scenarioFunc runs a scenario other than the counter.
type scenarioFunc func(ctx context.Context, env scenario.Env) error

// scenarioFor returns the scenario package's Run for name.
func scenarioFor(name string) (scenarioFunc, error) {
	switch name {
	case spec.ScenarioControllerStatus:
		return controllerstatus.Run, nil
	case spec.ScenarioLeaderElection:
		return leaderelection.Run, nil
	case spec.ScenarioQuota:
		return quota.Run, nil
	}
	return nil, spec.Input(fmt.Errorf("scenario %q is not known: use %s, %s, %s or %s", name,
		spec.ScenarioCounter, spec.ScenarioLeaderElection, spec.ScenarioQuota, spec.ScenarioControllerStatus))
}

// run is one Run in progress: what every scenario shares.
type run struct {
	spec    spec.Spec
	opts    Options
	log     io.Writer
	cfg     *rest.Config         // the base config with spec.Client applied
	clients []*client            // the writers' clients, Spec.Clients of them
	admin   kubernetes.Interface // setup, checks, scrapes and clean-up, on connections apart from the writers'
	ns      string
	result  *results.Result
}

// warn writes a warning to the log and keeps it in the result.
func (r *run) warn(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(r.log, "warning: %s\n", msg)
	r.result.Warnings = append(r.result.Warnings, msg)
}

// Run runs the benchmark s (already defaulted and validated) against the
// apiserver o.Config points at, writing only in its own namespace, which it
// deletes at the end unless s.Keep, also after Ctrl-C. Cancelling ctx stops
// the run early: operations in flight finish or hit their timeout, the
// figures so far are kept and the Result says Interrupted. Result.Target is
// left for the caller to fill.
func Run(ctx context.Context, s spec.Spec, o Options) (*results.Result, error) {
	var body func(context.Context, *run) error
	if s.Scenario == spec.ScenarioCounter {
		body = runCounter
	} else {
		sc, err := scenarioFor(s.Scenario)
		if err != nil {
			return nil, err
		}
		body = func(ctx context.Context, r *run) error { return r.runScenario(ctx, sc) }
	}
	if o.Config == nil {
		return nil, errors.New("workload.Run needs Options.Config: open the target first (cluster.Open)")
	}
	if o.RunID == "" {
		return nil, errors.New("workload.Run needs Options.RunID: it names the run's namespace")
	}
	r := &run{spec: s, opts: o, log: o.Log, ns: "kb-bench-" + o.RunID}
	if r.log == nil {
		r.log = io.Discard
	}
	r.result = &results.Result{
		APIVersion: results.APIVersion,
		Kind:       results.KindResult,
		RunID:      o.RunID,
		Version:    o.Version,
		Spec:       s,
		Namespace:  r.ns,
	}
	r.cfg = restConfig(o.Config, s.Client, o.Version)
	clients, note, err := newClients(r.cfg, s.Clients)
	if err != nil {
		return nil, err
	}
	if note != "" {
		r.warn("%s", note)
	}
	r.clients = clients
	if r.admin, err = kubernetes.NewForConfig(r.cfg); err != nil {
		return nil, fmt.Errorf("building the setup client: %w (check the target's kubeconfig)", err)
	}

	if err := createNamespace(ctx, r.admin, r.ns, o.RunID); err != nil {
		return nil, err
	}
	runErr := body(ctx, r)
	if s.Keep {
		fmt.Fprintf(r.log, "note: keeping namespace %s (keep is set)\n", r.ns)
	} else if err := deleteNamespace(ctx, r.admin, r.ns, o.FinalizeNamespace); err != nil {
		r.warn("%v", err)
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", runErr)
		}
		return nil, runErr
	}
	return r.result, nil
}

// runScenario runs a scenario package with the shared frame: recorder,
// progress ticks and the result's measurements.
func (r *run) runScenario(ctx context.Context, sc scenarioFunc) error {
	kubes := make([]kubernetes.Interface, len(r.clients))
	for i, c := range r.clients {
		kubes[i] = c.kube
	}
	// Scenario requests go through client-go code kb-bench does not drive
	// request by request (leader election, for one), so client-go's own
	// retry hooks count them; those are process-wide (see clientgo).
	hooks, hookErr := clientgo.Install()
	var hooksBefore clientgo.Stats
	if hookErr != nil {
		r.warn("client-go's hidden retries are not counted: %v", hookErr)
	} else {
		hooksBefore = hooks.Read()
	}
	started := time.Now().Add(r.spec.Warmup.Duration)
	rec := metrics.NewRecorder(started, metrics.DefaultShards(r.spec.Writers), r.spec.Rate > 0)
	stopTicks := tick(rec, started, r.opts.Progress)
	err := sc(ctx, scenario.Env{
		Config:    r.cfg,
		Clients:   kubes,
		Namespace: r.ns,
		Spec:      r.spec,
		Recorder:  rec,
		Result:    r.result,
		Log:       r.log,
	})
	ended := time.Now()
	stopTicks()
	if err != nil {
		return err
	}
	// The scenario's own window, when it says (see scenario.Env).
	if !r.result.Started.IsZero() {
		started = r.result.Started
	}
	if !r.result.Ended.IsZero() && r.result.Ended.Before(ended) {
		ended = r.result.Ended
	}
	r.result.Interrupted = ctx.Err() != nil
	// The scenario's requests are not counted one by one, so the clients'
	// counters give only the limiter wait; retries come from the hooks.
	counts := readClientCounts(r.clients)
	stats := results.ClientStats{RateLimiterWait: counts.waited, RateLimited: counts.limited}
	if hookErr == nil {
		stats.Retries = hooks.Read().Sub(hooksBefore).Retries
	}
	r.measure(rec.Snapshot(ended), stats, started, ended)
	return r.summarize()
}

// measure fills the result's window, measurements and series.
func (r *run) measure(snap metrics.Snapshot, stats results.ClientStats, started, ended time.Time) {
	if started.After(ended) {
		started = ended // stopped during the warm-up: nothing measured
	}
	res := r.result
	res.Started, res.Ended = started, ended
	res.Measurements = results.FromSnapshot(snap, stats)
	res.Series = snap.Series
}

// summarize derives the result's summary from its measurements and checks.
func (r *run) summarize() error {
	res := r.result
	sum, err := results.Summarize(res.Measurements, res.Ended.Sub(res.Started).Seconds(), res.Checks)
	if err != nil {
		return fmt.Errorf("summarizing the run: %w", err)
	}
	res.Summary = sum
	return nil
}

// tick closes the recorder's per-second interval once a second from from
// on, and reports each to progress (when set). The returned func stops it.
func tick(rec *metrics.Recorder, from time.Time, progress func(time.Duration, metrics.SeriesPoint)) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTimer(time.Until(from.Add(time.Second)))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			now := time.Now()
			p := rec.Tick(now)
			if progress != nil {
				progress(now.Sub(from), p)
			}
			next := from.Add((now.Sub(from)/time.Second + 1) * time.Second)
			t.Reset(time.Until(next))
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
