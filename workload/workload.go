// Package workload is kb-bench's engine. It runs a registered scenario
// (registry.go; the contract is package workload/scenario) against the
// target apiserver and owns everything scenarios share: the run's
// namespace, the clients and the count of every request they send, the
// warm-up, the measured window, the recorder and its per-second series,
// client-go's figures, the /metrics scrapes around the window and the
// server cross-check, and the assembly of the results.Result. It knows
// nothing of flags, files or terminals.
package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/metrics/apiserver"
	"github.com/kb-bench/kb-bench/metrics/clientgo"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
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
	// Ephemeral says the target goes away with the run (a local control
	// plane of its own): when it is lost, nothing is left to clean up.
	Ephemeral bool
	// ClientLog, when set, returns what client-go logged during the run
	// (and forgets it); each line becomes a warning of the result.
	ClientLog func() []string
	// Scenarios is the registry to look the Spec's scenario up in; nil
	// means Scenarios(). Tests of a scenario pass just theirs.
	Scenarios []scenario.Definition
	// Runner starts the shards of a distributed run (Spec.Shards > 0).
	Runner ShardRunner
	// ShardTimeout bounds the wait for every shard to join (default
	// DefaultShardTimeout).
	ShardTimeout time.Duration
}

// Outcome is a finished run: its Result, and the scenario's live Report,
// which renders the scenario's own summary lines.
type Outcome struct {
	Result *results.Result
	Report scenario.Report
}

// run is one Run in progress.
type run struct {
	spec     spec.Spec
	def      scenario.Definition
	settings scenario.Settings
	opts     Options
	log      io.Writer
	gate     *gate
	health   *health
	clients  []*client
	admin    kubernetes.Interface
	env      *scenario.Env
	result   *results.Result
}

// warnClientLog makes what client-go logged during the run warnings.
func (r *run) warnClientLog() {
	if r.opts.ClientLog == nil {
		return
	}
	for _, line := range r.opts.ClientLog() {
		r.warn("%s", line)
	}
}

// warn writes a warning to the log and keeps it in the result.
func (r *run) warn(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(r.log, "warning: %s\n", msg)
	r.result.Warnings = append(r.result.Warnings, msg)
}

// Run runs the benchmark s against the apiserver o.Config points at,
// writing only in its own namespace, which it deletes at the end unless
// s.Keep, also after Ctrl-C; or, with s.Namespace, only its own labelled
// objects in that existing namespace, after checking every permission it
// needs. s is resolved (Resolve) first. Cancelling ctx stops the run
// early: operations in flight finish or hit their timeout, the figures so
// far are kept and the Result says Interrupted. An apiserver that stops
// answering ends it too, and the Result says TargetLost.
// Result.Target is left for the caller to fill.
func Run(ctx context.Context, s spec.Spec, o Options) (*Outcome, error) {
	registry := o.Scenarios
	if registry == nil {
		registry = Scenarios()
	}
	def, settings, errs := resolve(registry, &s)
	if len(errs) > 0 {
		return nil, spec.Input(errors.New(spec.Describe(errs)))
	}
	if o.Config == nil {
		return nil, errors.New("workload.Run needs Options.Config: open the target first (cluster.Open)")
	}
	if o.RunID == "" {
		return nil, errors.New("workload.Run needs Options.RunID: it names the run's namespace")
	}
	clients := s.Clients
	if s.Shards > 0 {
		// The shards send the load; the coordinator only sets up and checks.
		clients = 1
	}
	r, sc, err := newRun(s, def, settings, o, clients)
	if err != nil {
		return nil, err
	}

	rules := rulesFor(def, settings, s)
	if s.Namespace != "" {
		// An existing namespace: check every permission first, and touch
		// nothing but the run's own labelled objects.
		pctx, cancel := context.WithTimeout(ctx, s.OpTimeout.Duration)
		err := checkPermissions(pctx, r.admin, s.Namespace, rules)
		cancel()
		if err != nil {
			return nil, err
		}
	} else if err := createNamespace(ctx, r.admin, r.env.Namespace, o.RunID, s.OpTimeout.Duration); err != nil {
		return nil, err
	} else if s.Target.ControllerManager {
		// kube-controller-manager puts a ConfigMap (kube-root-ca.crt) in
		// every new namespace; wait for it, so that it is neither in the
		// measured window's requests nor counted late by a scenario.
		if err := waitForRootCA(ctx, r.admin, r.env.Namespace); err != nil {
			r.warn("%v", err)
		}
	}
	// A target that stops answering ends the run at once (ErrTargetLost).
	runCtx, cancelRun := context.WithCancelCause(ctx)
	stopWatching := r.health.watch(cancelRun)
	// A caller that sees the target go (its own control plane died)
	// cancels ctx with ErrTargetLost: abandon what waits on it too.
	stopAbandon := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), ErrTargetLost) {
			r.health.abandon()
		}
	})
	defer stopAbandon()
	var report scenario.Report
	var runErr error
	if s.Shards > 0 {
		report, runErr = r.coordinate(runCtx, sc)
	} else {
		report, runErr = r.run(runCtx, sc)
	}
	if lost := stopWatching(); lost != "" {
		r.result.TargetLost, r.result.Interrupted = ErrTargetLost.Error()+": "+lost, false
		runErr = nil
	} else if errors.Is(runErr, ErrTargetLost) {
		// A distributed run's shard saw it: the shards' figures are gone
		// with them.
		r.result.TargetLost, r.result.Interrupted = runErr.Error(), false
		runErr = nil
	} else if cause := context.Cause(ctx); errors.Is(cause, ErrTargetLost) {
		// The caller saw the target go (its own control plane died).
		r.result.TargetLost, r.result.Interrupted = cause.Error(), false
		runErr = nil
	}
	cancelRun(nil)
	if report == nil {
		report = noReport{} // the run ended before the scenario could report
	}
	switch {
	case r.result.TargetLost != "" && o.Ephemeral:
		// Its data goes with it.
	case r.result.TargetLost != "" && s.Namespace != "":
		r.warn("the run's objects are left on the target, which stopped answering: once it answers, delete them with kubectl delete -n %s %s -l %s=%s", s.Namespace, OwnKinds, scenario.LabelRunID, o.RunID)
	case r.result.TargetLost != "":
		r.warn("the run's namespace is left on the target, which stopped answering: once it answers, delete it with kubectl delete namespace %s", r.env.Namespace)
	case s.Keep && s.Namespace != "":
		fmt.Fprintf(r.log, "note: keeping the run's objects in namespace %s (keep is set; they are labelled %s=%s)\n", r.env.Namespace, scenario.LabelRunID, o.RunID)
	case s.Keep:
		fmt.Fprintf(r.log, "note: keeping namespace %s (keep is set)\n", r.env.Namespace)
	case s.Namespace != "":
		if err := deleteOwn(ctx, r.admin, r.env.Namespace, o.RunID, cleanupResources(rules)); err != nil {
			r.warn("%v", err)
		}
	default:
		if err := deleteNamespace(ctx, r.admin, r.env.Namespace, cleanupResources(rules), o.FinalizeNamespace); err != nil {
			r.warn("%v", err)
		}
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", runErr)
		}
		if s.Namespace != "" && namespaceMissing(runErr, s.Namespace) {
			return nil, spec.Input(fmt.Errorf("namespace %s does not exist (%w): create it, or drop --namespace to run in a namespace of the run's own", s.Namespace, runErr))
		}
		return nil, runErr
	}
	return &Outcome{Result: r.result, Report: report}, nil
}

// newRun builds a run of s with n measured clients, and its scenario.
func newRun(s spec.Spec, def scenario.Definition, settings scenario.Settings, o Options, n int) (*run, scenario.Scenario, error) {
	r := &run{spec: s, def: def, settings: settings, opts: o, log: o.Log, gate: newGate(), health: newHealth()}
	if r.log == nil {
		r.log = io.Discard
	}
	r.result = &results.Result{
		APIVersion: results.APIVersion,
		Kind:       results.KindResult,
		RunID:      o.RunID,
		Version:    o.Version,
		Spec:       s,
		Namespace:  namespaceOf(s, o.RunID),
		Workload:   describe(def, settings, &s),
	}
	cfg := scenario.ClientConfig(o.Config, s.Client, o.Version)
	clients, note, err := newClients(cfg, n, r.gate, r.health)
	if err != nil {
		return nil, nil, err
	}
	if note != "" {
		r.warn("%s", note)
	}
	r.clients = clients
	// The admin client is not measured: it sends what client-go prefers,
	// and no request of its own (setup, read-back, scrape, clean-up) waits
	// longer than an operation may: a hung apiserver cannot hold the run.
	adminCfg := scenario.ClientConfig(o.Config, spec.Client{QPS: s.Client.QPS, Burst: s.Client.Burst}, o.Version)
	adminCfg.Timeout = s.OpTimeout.Duration
	if r.admin, err = kubernetes.NewForConfig(adminCfg); err != nil {
		return nil, nil, fmt.Errorf("building the setup client: %w (check the target's kubeconfig)", err)
	}
	kubes := make([]kubernetes.Interface, len(clients))
	for i, c := range clients {
		kubes[i] = c.kube
	}
	r.env = &scenario.Env{
		Spec:      s,
		RunID:     o.RunID,
		Namespace: r.result.Namespace,
		Clients:   kubes,
		Admin:     r.admin,
		Log:       r.log,
		Warn:      r.warn,
		Gone:      r.health.gone,
	}
	sc, err := def.New(r.env, settings)
	if err != nil {
		return nil, nil, err
	}

	return r, sc, nil
}

// run sets the scenario up, runs the warm-up and the measured window, and
// fills the result.
func (r *run) run(ctx context.Context, sc scenario.Scenario) (scenario.Report, error) {
	s := r.spec
	driven, isDriven := sc.(scenario.Driven)
	continuous, isContinuous := sc.(scenario.Continuous)
	workers := 1
	switch {
	case isDriven:
		workers = driven.Workers()
	case !isContinuous:
		return nil, fmt.Errorf("scenario %s is neither Driven nor Continuous (a bug in kb-bench: please report it)", r.def.Name)
	}
	// Nothing is measured until the window starts (MeasureFrom(started)):
	// not the warm-up, nor what a Continuous scenario does while the
	// engine reads its counters at the window's edge.
	rec := metrics.NewRecorder(notYet, metrics.DefaultShards(workers), s.Rate > 0)
	r.env.Recorder = rec
	if err := sc.Setup(ctx); err != nil {
		return nil, err
	}
	r.connect(ctx)
	if s.Client.ContentType == spec.ContentCBOR {
		r.probeCBOR(ctx)
	}

	// The warm-up is a phase of its own. At its end the gate holds new
	// requests until those in flight have finished, and only then are the
	// clients' counters read and the apiserver's /metrics scraped; the same
	// at the end of the window. So the server cross-check covers exactly
	// the measured window's requests.
	start := time.Now()
	warmupEnd := start.Add(s.Warmup.Duration)
	loop := func(plan) {}
	done := make(chan struct{})
	var before reading
	var started time.Time
	beginWindow := func() {
		before = r.takeReading(ctx)
		started = time.Now()
		rec.MeasureFrom(started)
		r.gate.release()
	}
	switch {
	case isDriven:
		loop = func(p plan) { drive(ctx, p, workers, s.Rate, rec, driven.Do) }
		if s.Warmup.Duration > 0 {
			loop(plan{start: start, measureFrom: warmupEnd, deadline: warmupEnd, thinkTime: s.ThinkTime.Duration})
		}
	case s.Warmup.Duration == 0:
		// Read before the scenario starts, so that its first requests
		// do not wait for the scrape.
		beginWindow()
		continuous.Start(ctx, sync.OnceFunc(func() { close(done) }))
	default:
		continuous.Start(ctx, sync.OnceFunc(func() { close(done) }))
		sleepUntil(ctx, warmupEnd, done)
	}
	if ctx.Err() != nil && started.IsZero() {
		if isContinuous {
			continuous.Stop()
		}
		now := time.Now()
		r.result.Interrupted = true
		r.result.Server = results.UnavailableServerCheck("the run stopped before the warm-up ended, so there is no measured window to compare")
		return r.finish(ctx, sc, rec, now, now, nil, nil)
	}
	if started.IsZero() {
		beginWindow()
	}

	stopTicks := tick(rec, started, r.opts.Progress)
	var deadline time.Time
	if s.Duration.Duration > 0 {
		deadline = started.Add(s.Duration.Duration)
	}
	if isDriven {
		loop(plan{start: started, measureFrom: started, deadline: deadline, operations: s.Operations, thinkTime: s.ThinkTime.Duration})
	} else {
		sleepUntil(ctx, deadline, done)
		continuous.Stop()
	}
	ended := time.Now()
	stopTicks()
	r.result.Interrupted = ctx.Err() != nil
	after := r.takeReading(ctx)
	r.gate.release()
	return r.finish(ctx, sc, rec, started, ended, &before, &after)
}

// connect opens each client's connection before the clock starts, as a
// long-running controller's is: the TLS handshake is not the benchmark.
func (r *run) connect(ctx context.Context) {
	for i, c := range r.env.Clients {
		cctx, cancel := context.WithTimeout(ctx, r.spec.OpTimeout.Duration)
		_, err := discovery.ToServerVersionInterfaceWithContext(c.Discovery()).ServerVersionWithContext(cctx) // needs no permission
		cancel()
		if err != nil {
			r.warn("client %d: connecting before the run: %v", i+1, err)
		}
	}
}

// probeCBOR sends each client's first CBOR request body before the clock
// starts: a dry-run create. An apiserver that does not take CBOR answers
// 415, and client-go then sends that client's bodies as JSON, so the
// measured window holds no 415s; the result's content-type counts show
// what was sent.
func (r *run) probeCBOR(ctx context.Context) {
	refused := 0
	for i, c := range r.env.Clients {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kb-bench-cbor-probe"}}
		pctx, cancel := context.WithTimeout(ctx, r.spec.OpTimeout.Duration)
		_, err := c.CoreV1().ConfigMaps(r.env.Namespace).Create(pctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		cancel()
		if apierrors.IsUnsupportedMediaType(err) {
			refused++
		} else if err != nil {
			r.warn("client %d: probing CBOR: %v", i+1, err)
		}
	}
	if refused > 0 {
		r.warn("the apiserver does not take CBOR request bodies (its feature gate CBORServingAndStorage is alpha and off by default): the clients send JSON bodies instead")
	}
}

// reading is what the engine reads at each edge of the measured window.
type reading struct {
	clients clientReading
	hooks   clientgo.Stats
	hookErr error
	server  metrics.ServerSample
	err     error // the scrape's
}

// takeReading holds the clients' new requests, waits for those in flight,
// and reads the clients' counters and the apiserver's /metrics. The gate
// stays held: release it when the window starts or is over.
func (r *run) takeReading(ctx context.Context) reading {
	rd := r.quiesce()
	rd.server, rd.err = r.scrape(ctx)
	return rd
}

// quiesce holds the clients' new requests, waits for those in flight, and
// reads the clients' counters. The gate stays held.
func (r *run) quiesce() reading {
	if n := r.gate.hold(r.spec.OpTimeout.Duration); n > 0 {
		r.warn("%d requests were still in flight %s after the window's edge; the server cross-check may be off by as many", n, r.spec.OpTimeout)
	}
	rd := reading{clients: readClients(r.clients)}
	var hooks *clientgo.Counters
	if hooks, rd.hookErr = clientgo.Install(); rd.hookErr == nil {
		rd.hooks = hooks.Read()
	}
	return rd
}

// scrape reads the apiserver's /metrics, bounded by scrapeTimeout.
func (r *run) scrape(ctx context.Context) (metrics.ServerSample, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scrapeTimeout)
	defer cancel()
	return apiserver.Scrape(sctx, r.admin.CoreV1().RESTClient())
}

// notYet is a time no operation is due at: the measured window's start
// until the engine knows it.
var notYet = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// scrapeTimeout bounds one /metrics scrape.
const scrapeTimeout = 10 * time.Second

// finish assembles the result from the recorder and the readings at the
// window's edges (nil when the run stopped before the window), and asks
// the scenario for its report.
func (r *run) finish(ctx context.Context, sc scenario.Scenario, rec *metrics.Recorder, started, ended time.Time, before, after *reading) (scenario.Report, error) {
	res := r.result
	window := r.measure(rec, started, ended, before, after)
	switch {
	case before == nil:
	case before.err != nil || after.err != nil:
		// The first failure says why; the other edge fails the same way.
		err := before.err
		if err == nil {
			err = after.err
		}
		r.warn("no server cross-check: %v", err)
		res.Server = results.UnavailableServerCheck(err.Error())
	default:
		res.Server = results.NewServerCheck(before.server, after.server, window.requests, r.def.ServerResources, res.Measurements)
	}
	return r.conclude(ctx, sc)
}

// conclude asks the scenario for its checks and report and summarizes the
// result, whose measurements are in.
func (r *run) conclude(ctx context.Context, sc scenario.Scenario) (scenario.Report, error) {
	res := r.result
	budget := cleanupTimeout
	lost := errors.Is(context.Cause(ctx), ErrTargetLost)
	if lost {
		budget = lostTargetBudget // it answers nothing: do not wait for it
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	report, err := sc.Finish(fctx)
	switch {
	case err != nil && lost:
		r.warn("the scenario's checks could not be made on a target that stopped answering: %v", err)
		report = noReport{}
	case err != nil:
		return nil, err
	}
	res.Checks = report.Checks()
	r.warnClientLog()
	if b, err := json.Marshal(report); err == nil && string(b) != "{}" && string(b) != "null" {
		res.Details = b
	}
	sum, err := results.Summarize(res.Measurements, res.Ended.Sub(res.Started).Seconds(), res.Checks)
	if err != nil {
		return nil, fmt.Errorf("summarizing the run: %w", err)
	}
	res.Summary = sum
	return report, nil
}

// measure puts the recorder's figures and the clients' between the two
// readings (nil when the run stopped before the window) into the result,
// and returns the clients' requests in the window.
func (r *run) measure(rec *metrics.Recorder, started, ended time.Time, before, after *reading) clientReading {
	res := r.result
	res.Started, res.Ended = started, ended
	snap := rec.Snapshot(ended)
	var stats results.ClientStats
	var window clientReading
	if before != nil {
		window = after.clients.since(before.clients)
		var retries int64
		if before.hookErr == nil {
			retries = after.hooks.Sub(before.hooks).Retries
		} else {
			r.warn("client-go's hidden retries are not counted: %v", before.hookErr)
		}
		stats = window.stats(retries)
	}
	res.Measurements = results.FromSnapshot(snap, stats)
	res.Series = snap.Series
	return window
}

// lostTargetBudget bounds the end phase (reading objects back) of a run
// whose target stopped answering.
const lostTargetBudget = 2 * time.Second

// noReport is the report of a scenario that could not finish.
type noReport struct{}

func (noReport) Checks() []results.Check { return nil }
func (noReport) Rows() [][2]string       { return nil }

// sleepUntil waits until t (forever when t is zero), ctx is done or stop
// is closed.
func sleepUntil(ctx context.Context, t time.Time, stop <-chan struct{}) {
	var at <-chan time.Time
	if !t.IsZero() {
		timer := time.NewTimer(time.Until(t))
		defer timer.Stop()
		at = timer.C
	}
	select {
	case <-ctx.Done():
	case <-at:
	case <-stop:
	}
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
