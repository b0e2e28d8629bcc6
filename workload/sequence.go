package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/discovery"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/metrics/apiserver"
	"github.com/kb-bench/kb-bench/metrics/clientgo"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/transport"
)

// A role is what a run is in the phase sequence: a run whose load this
// process makes, alone or as one shard of a distributed run (inProcess),
// or a distributed run's coordinator, whose load the shards make
// (coordinator). Roles differ only in who makes the load and where the
// figures come from; the sequence, the window's edges and the Result are
// the engine's.
type role interface {
	// ready readies the run: the scenario's objects made (or, for a
	// shard, found), the load's clients connected, the shards joined.
	ready(ctx context.Context) error
	// warmup runs the warm-up. A run interrupted meanwhile returns nil
	// when it has nothing to wait for, and an error when it has.
	warmup(ctx context.Context) error
	// open returns the measured window's bounds (a zero end: bounded by
	// operations), once the window's first edge is read.
	open(ctx context.Context) (start, end time.Time, err error)
	// load makes the window's load until end, until the operations are
	// done, or until ctx is done (Ctrl-C: the window ends now); it returns
	// when the window ended, and whether it was stopped early.
	load(ctx context.Context, start, end time.Time) (ended time.Time, stopped bool, err error)
	// figures are the window's figures, read once its last edge is.
	figures(ctx context.Context, w window) (figures, error)
	// close ends the role's part once the sequence is over; err is how
	// the sequence ended.
	close(ctx context.Context, err error) error
}

// window is the measured window as this process saw it: its bounds and
// the readings at its edges (nil when the run stopped before it).
type window struct {
	start, ended  time.Time
	before, after *reading
}

// figures are a window's figures, from this process's recorder and
// clients or from the shards'.
type figures struct {
	started, ended time.Time
	measurements   results.Measurements
	series         []metrics.SeriesPoint
	// requests are the clients' requests in the window, for the server
	// cross-check.
	requests map[metrics.RequestKey]int64
	// shard is a shard's own part; shards the coordinator's merged ones,
	// with their warnings.
	shard    *results.ShardInfo
	shards   []results.ShardInfo
	warnings []string
}

// run is the one phase sequence of every run.
//
//	ready    the scenario's objects, the clients connected, the shards joined
//	warm-up  a phase of its own: nothing in it is measured
//	edge 1   new requests held, those in flight waited for, the
//	         apiserver's /metrics scraped, an idle second (its background
//	         CPU), then the clients' counters read and /metrics scraped
//	window   the measured load, its per-second series, until its end,
//	         its operations or Ctrl-C
//	edge 2   as edge 1, so the server cross-check covers exactly the
//	         window's requests
//	finish   the figures, the server cross-check, the scenario's checks
//	         and report, the summary: the Result
func (e *engine) run(ctx context.Context) error {
	if err := e.role.ready(ctx); err != nil {
		return err
	}
	if err := e.role.warmup(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		now := time.Now()
		e.result.Interrupted = true
		e.result.Server = results.UnavailableServerCheck("the run stopped before the warm-up ended, so there is no measured window to compare")
		return e.finish(ctx, window{start: now, ended: now})
	}
	before := e.edge(ctx, 1)
	start, end, err := e.role.open(ctx)
	if err != nil {
		return err
	}
	e.rec.MeasureFrom(start)
	e.window.Store(&window{start: start, before: &before})
	e.hold.Release()
	e.env.Window.Open(start)
	faultDone := e.inject(start)
	ended, stopped, err := e.role.load(ctx, start, end)
	faultDone()
	if err != nil {
		return err
	}
	e.result.Interrupted = ctx.Err() != nil || stopped
	after := e.edge(ctx, 2)
	w := window{start: start, ended: ended, before: &before, after: &after}
	e.window.Store(&w)
	e.hold.Release()
	return e.finish(ctx, w)
}

// reading is what the engine reads at each edge of the measured window.
type reading struct {
	clients transport.Reading
	hooks   int64 // client-go's hidden retries so far
	hookErr error
	server  metrics.ServerSample   // every apiserver's, added
	servers []metrics.ServerSample // each apiserver's, when there are several
	err     error                  // the scrape's
	// dead are the apiservers (of several) found dead, not scraped;
	// answered what each apiserver answered the clients so far.
	dead     []bool
	answered []map[metrics.RequestKey]int64
	// etcd is etcd's process figures (when Options.EtcdMetrics is set);
	// self this process's CPU time.
	etcd    metrics.ProcessSample
	etcdErr error
	self    metrics.ProcessSample
	selfErr error
	// idle, at the first edge, is the apiserver's process figures an idle
	// interval before server was scraped (nil: not read).
	idle *analysis.IdleEdge
}

// idleInterval is how long the first edge keeps the run's requests back
// before its scrape, to read the apiserver's background CPU: long enough
// for its 10 ms clock ticks to be a few percent of a core.
const idleInterval = time.Second

// edge holds the clients' new requests, waits for those in flight, and
// reads the clients' counters, and, in a process that scrapes, the
// apiserver's /metrics. The hold stays engaged: release it when the
// window starts or is over.
func (e *engine) edge(ctx context.Context, n int) reading {
	if held := e.hold.Engage(e.Spec.OpTimeout.Duration); held > 0 {
		e.warn("%d requests were still in flight %s after the window's edge; the server cross-check may be off by as many", held, e.Spec.OpTimeout)
	}
	if e.opts.OnEdge != nil {
		e.opts.OnEdge(n, false)
		defer e.opts.OnEdge(n, true)
	}
	var idleFrom metrics.ServerSample
	var idleAt time.Time
	if e.scrapes && n == 1 {
		idleFrom, idleAt = e.idleStart(ctx)
	}
	rd := e.readClients()
	rd.self, rd.selfErr = metrics.ReadSelf()
	if e.scrapes {
		// Each scrape has its whole timeout: on a loaded machine a slow
		// apiserver scrape must not leave etcd's none.
		bounded(ctx, func(ctx context.Context) { rd.server, rd.servers, rd.dead, rd.err = e.scrape(ctx) })
		if !idleAt.IsZero() && rd.err == nil {
			rd.idle = &analysis.IdleEdge{Process: idleFrom.Process, Seconds: time.Since(idleAt).Seconds()}
		}
		if e.opts.EtcdMetrics != "" {
			bounded(ctx, func(ctx context.Context) {
				rd.etcd, rd.etcdErr = apiserver.ScrapeProcess(ctx, http.DefaultClient, e.opts.EtcdMetrics)
			})
		}
	}
	return rd
}

// idleStart scrapes the apiserver and waits idleInterval with the run's
// requests held: the start of the interval that measures its background
// CPU, and the time the scrape returned (zero when it failed or ctx ended
// the wait).
func (e *engine) idleStart(ctx context.Context) (metrics.ServerSample, time.Time) {
	var s metrics.ServerSample
	var err error
	bounded(ctx, func(ctx context.Context) { s, _, _, err = e.scrape(ctx) })
	if err != nil || !s.Process.Has {
		return s, time.Time{}
	}
	at := time.Now()
	select {
	case <-time.After(idleInterval):
		return s, at
	case <-ctx.Done():
		return s, time.Time{}
	}
}

// bounded runs read with scrapeTimeout from now, whether or not ctx has
// ended: an edge is read after Ctrl-C too.
func bounded(ctx context.Context, read func(context.Context)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scrapeTimeout)
	defer cancel()
	read(ctx)
}

// readClients reads the clients' counters and client-go's.
func (e *engine) readClients() reading {
	rd := reading{clients: transport.Read(e.clients)}
	if e.servers != nil {
		rd.answered = e.servers.Answered()
	}
	var hooks *clientgo.Counters
	if hooks, rd.hookErr = clientgo.Install(); rd.hookErr == nil {
		rd.hooks = hooks.Retries()
	}
	return rd
}

// since is what the clients did between two readings: their figures,
// client-go's hidden retries among them, and their requests.
func since(before, now *reading) (results.ClientStats, map[metrics.RequestKey]int64) {
	var retries int64
	if before.hookErr == nil {
		retries = now.hooks - before.hooks
	}
	w := now.clients.Since(before.clients)
	return w.Stats(retries), w.Requests
}

// scrape reads every apiserver's /metrics (one after the other: the hold
// keeps the clients' requests back meanwhile) and adds them up; of
// several, those the clients found dead (a refused connection) are left
// out, and dead says which.
func (e *engine) scrape(ctx context.Context) (metrics.ServerSample, []metrics.ServerSample, []bool, error) {
	if len(e.scrapers) == 0 {
		s, err := apiserver.Scrape(ctx, e.admin.CoreV1().RESTClient())
		return s, nil, nil, err
	}
	each := make([]metrics.ServerSample, len(e.scrapers))
	dead := make([]bool, len(e.scrapers))
	var living []metrics.ServerSample
	for i, sc := range e.scrapers {
		if dead[i] = !e.servers.Down(i).IsZero(); dead[i] {
			continue
		}
		s, err := apiserver.Scrape(ctx, sc)
		if errors.Is(err, syscall.ECONNREFUSED) {
			dead[i] = true // died since its clients last sent to it
			continue
		}
		if err != nil {
			return metrics.ServerSample{}, nil, nil, fmt.Errorf("apiserver %s: %w", e.opts.Servers[i], err)
		}
		each[i] = s
		living = append(living, s)
	}
	return metrics.Sum(living...), each, dead, nil
}

// scrapeTimeout bounds one /metrics scrape.
const scrapeTimeout = 10 * time.Second

// finish assembles the Result, in one place for every role: the window's
// figures, the server cross-check, the scenario's checks and figures (a
// shard's are the coordinator's), the summary.
func (e *engine) finish(ctx context.Context, w window) error {
	f, err := e.role.figures(ctx, w)
	if err != nil {
		return err
	}
	res := e.result
	res.Started, res.Ended = f.started, f.ended
	res.Measurements, res.Series = f.measurements, f.series
	res.Shard, res.Shards = f.shard, f.shards
	res.Warnings = append(res.Warnings, f.warnings...)
	if e.scrapes && w.before != nil {
		if err := cmp.Or(w.before.err, w.after.err); err != nil {
			// The first failure says why; the other edge fails the same way.
			e.warn("no server cross-check: %v", err)
			res.Server = results.UnavailableServerCheck(err.Error())
		} else {
			lw, requests := e.living(w, f.requests)
			res.Server = analysis.NewServerCheck(lw.before.server, lw.after.server, requests, e.Def.ServerResources, res.Measurements)
			if t := e.Spec.Target; t.Kind == spec.TargetKindCluster || t.Kind == spec.TargetKubeconfig {
				// A real cluster's controllers and kubelets use the same
				// resources, and the apiserver counts them all.
				analysis.AttributeOthers(res.Server, res.Measurements)
			}
			if len(w.before.servers) > 0 {
				shares, err := analysis.APIServerShares(lw.names, lw.before.servers, lw.after.servers, requests)
				if err != nil {
					e.warn("no per-apiserver shares: %v", err)
				}
				res.Server.APIServers = shares
			}
			w = lw.window
		}
		res.Cost = e.cost(w, f)
	}
	if fr := e.fault.Load(); fr != nil {
		res.Faults = append(res.Faults, e.faultReport(*fr, w, f))
	}
	if res.Shard == nil {
		if err := e.check(ctx); err != nil {
			return err
		}
	}
	if e.opts.ClientLog != nil {
		for _, line := range e.opts.ClientLog() {
			e.warn("%s", line) // what client-go logged during the run
		}
	}
	if res.Summary, err = results.Summarize(res.Measurements, res.Ended.Sub(res.Started).Seconds(), res.Checks); err != nil {
		return fmt.Errorf("summarizing the run: %w", err)
	}
	return nil
}

// cost is what the window cost the apiserver, etcd and this process.
func (e *engine) cost(w window, f figures) *results.Cost {
	edge := func(rd *reading) analysis.CostEdge {
		ce := analysis.CostEdge{Server: rd.server, ServerErr: rd.err, Etcd: rd.etcd, EtcdErr: rd.etcdErr, Client: rd.self, ClientErr: rd.selfErr, Idle: rd.idle}
		if e.opts.EtcdMetrics == "" {
			ce.EtcdErr = errors.New("not readable: kb-bench reads etcd's /metrics only on its own local control plane")
		}
		if e.Spec.Shards > 0 {
			ce.ClientErr = errors.New("not read: a distributed run's load is made by its shards, other processes")
		}
		return ce
	}
	return analysis.NewCost(edge(w.before), edge(w.after), f.requests)
}

// check asks the scenario for its checks and figures, also after Ctrl-C,
// and briefly on a target that stopped answering.
func (e *engine) check(ctx context.Context) error {
	budget := cleanupTimeout
	lost := errors.Is(context.Cause(ctx), spec.ErrTargetLost)
	if lost {
		budget = lostTargetBudget // it answers nothing: do not wait for it
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	report, err := e.sc.Finish(fctx)
	switch {
	case err != nil && lost:
		e.warn("the scenario's checks could not be made on a target that stopped answering: %v", err)
		return nil
	case err != nil:
		return err
	}
	e.report, e.result.Checks = report, report.Checks()
	e.result.Figures = e.valid(report.Figures())
	return nil
}

// valid are the figures that validate as a Result's, each checked beside
// those kept before it; it warns of each one it leaves out.
func (e *engine) valid(figures []results.Figure) (kept []results.Figure) {
	for _, f := range figures {
		if errs := results.ValidateFigures(field.NewPath("figures"), append(kept, f)); len(errs) == 0 {
			kept = append(kept, f)
		} else {
			e.warn("the scenario's figure %s is left out (a bug in kb-bench: please report it): %v", f.Key(), errs.ToAggregate())
		}
	}
	return kept
}

// lostTargetBudget bounds the end phase (reading objects back) of a run
// whose target stopped answering.
const lostTargetBudget = 2 * time.Second

// measure reads this process's figures of window w: the recorder's and
// the clients' between the two readings (none when the run stopped
// before the window).
func (e *engine) measure(w window) figures {
	snap := e.rec.Snapshot(w.ended)
	f := figures{started: w.start, ended: w.ended, series: snap.Series}
	var stats results.ClientStats
	if w.before != nil {
		if w.before.hookErr != nil {
			e.warn("client-go's hidden retries are not counted: %v", w.before.hookErr)
		}
		stats, f.requests = since(w.before, w.after)
	}
	f.measurements = results.FromSnapshot(snap, stats)
	return f
}

// connect opens each client's connection before the clock starts, as a
// long-running controller's is: the TLS handshake is not the benchmark.
// With CBOR it sends each client's first CBOR request body too: a dry-run
// create. An apiserver that does not take CBOR answers 415, and client-go
// then sends that client's bodies as JSON, so the measured window holds
// no 415s; the result's content-type counts show what was sent.
func (e *engine) connect(ctx context.Context) {
	refused := 0
	for i, c := range e.env.Clients {
		cctx, cancel := context.WithTimeout(ctx, e.Spec.OpTimeout.Duration)
		_, err := discovery.ToServerVersionInterfaceWithContext(c.Discovery()).ServerVersionWithContext(cctx) // needs no permission
		cancel()
		if err != nil {
			e.warn("client %d: connecting before the run: %v", i+1, err)
		}
		if e.Spec.Client.ContentType != spec.ContentCBOR {
			continue
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kb-bench-cbor-probe"}}
		pctx, cancel := context.WithTimeout(ctx, e.Spec.OpTimeout.Duration)
		_, err = c.CoreV1().ConfigMaps(e.env.Namespace).Create(pctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		cancel()
		if apierrors.IsUnsupportedMediaType(err) {
			refused++
		} else if err != nil {
			e.warn("client %d: probing CBOR: %v", i+1, err)
		}
	}
	if refused > 0 {
		e.warn("the apiserver does not take CBOR request bodies (its feature gate CBORServingAndStorage is alpha and off by default): the clients send JSON bodies instead")
	}
}

// sleepUntil waits until t (forever when t is zero), ctx is done or stop
// is closed.
func sleepUntil(ctx context.Context, t time.Time, stop <-chan struct{}) {
	var at <-chan time.Time
	if !t.IsZero() {
		at = time.After(time.Until(t))
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
