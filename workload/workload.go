// Package workload is kb-bench's engine. It runs a registered scenario
// (registry.go; the contract is package workload/scenario) against the
// target apiserver through one phase sequence (sequence.go): ready,
// warm-up, the measured window between two edges, finish. A local run, a
// distributed run's coordinator and each of its shards are roles of that
// one sequence (sequence.go); they differ only in who makes the load and
// where the figures come from. The engine owns everything scenarios
// share: the run's namespace, the clients and the count of every request
// they send (package transport), the recorder and its per-second series,
// client-go's figures, the /metrics scrapes at the window's edges and the
// server cross-check, and the assembly of the results.Result. It knows
// nothing of flags, files or terminals.
package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/internal/netdelay"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/distributed"
	"github.com/kb-bench/kb-bench/workload/scenario"
	"github.com/kb-bench/kb-bench/workload/transport"
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
	// Runner starts the shards of a distributed run (Spec.Shards > 0).
	Runner distributed.ShardRunner
	// ShardTimeout bounds the wait for every shard to join (default
	// spec.DefaultShardTimeout).
	ShardTimeout time.Duration
	// Servers are the apiservers of a target that runs several (Config's
	// host among them, first): client i talks to Servers[i mod N], and
	// the server cross-check scrapes and adds every one. Empty: Config's.
	Servers []string
	// Live, when set, is where the run's figures are exported as it goes
	// (package live): Run makes its recorder and clients their source.
	Live *live.Run
	// EtcdMetrics is the URL of etcd's /metrics when kb-bench can read it
	// (the local control plane's etcd serves it on its client URL): the
	// run's cost then has etcd's CPU and memory. Empty: etcd is not read,
	// and the result says so.
	EtcdMetrics string
	// OnEdge, when set, is called as each edge of the measured window
	// (1, then 2) begins its readings (done false) and once they are all
	// read (done true): readings of the caller's own made there bracket
	// the engine's.
	OnEdge func(edge int, done bool)
	// Fault, when set, is done to the target during the measured window
	// (spec.Target.KillAPIServer): the engine times it, the caller does it.
	Fault *Fault
	// Target describes the target for the Result; EtcdDelay, when set,
	// says at the run's end what the delaying proxy in front of its etcd
	// observed (Target.EtcdProxy).
	Target    spec.TargetInfo
	EtcdDelay func() spec.DelayObserved
}

// Fault is something done to the target At into the measured window: Do
// does it. Down, when not negative, is the apiserver (of Options.Servers)
// it takes down: the result says when its clients found it gone and how
// they failed over.
type Fault struct {
	What string
	At   time.Duration
	Down int
	Do   func() error
}

// Outcome is a finished run: its Result, and its scenario's Report (nil
// when the run ended before the scenario could report), whose checks and
// figures the Result holds, for a caller that knows the scenario's type.
type Outcome struct {
	Result *results.Result
	Report scenario.Report
}

// engine is one run in progress, in one of the roles of the phase
// sequence.
type engine struct {
	*Resolved
	opts    Options
	log     io.Writer
	hold    *transport.Hold
	health  *transport.Health
	clients []*transport.Client
	admin   kubernetes.Interface
	env     *scenario.Env
	sc      scenario.Instance
	rec     *metrics.Recorder
	result  *results.Result
	report  scenario.Report // the scenario's, once it reported
	role    role
	// scrapes: this process reads the apiserver's /metrics at the
	// window's edges (a local run, a coordinator).
	scrapes bool
	// scrapers read each apiserver's /metrics when there are several
	// (Options.Servers); empty: admin's. servers is how the clients
	// reach them, failing over from one that died.
	scrapers []rest.Interface
	servers  *transport.Servers
	// fault is the injected fault's report, once it is done.
	fault atomic.Pointer[results.Fault]
	// window is the measured window as the live figures see it: its
	// start and the first edge's reading once it opened, its end and the
	// second edge's once it closed. The clients' figures are counted
	// between the edges, as the Result's are, so they stop growing with
	// the window (the checks and the clean-up after it send requests too).
	window atomic.Pointer[window]
	// lose ends the run with a lost target as its cause (set while it
	// executes), for a role that learns of the loss otherwise than
	// through its own clients (a coordinator, from its shards); lostAt
	// is when the run learnt it.
	lose   context.CancelCauseFunc
	lostAt atomic.Pointer[time.Time]
}

// warn writes a warning to the log and keeps it in the result.
func (e *engine) warn(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(e.log, "warning: %s\n", msg)
	e.result.Warnings = append(e.result.Warnings, msg)
}

// Run runs the benchmark r resolved against the apiserver o.Config points
// at, writing only in its own namespace, which it deletes at the end
// unless its spec says Keep, also after Ctrl-C; or, with a Namespace, only
// its own labelled objects in that existing namespace, after checking
// every permission it needs. With Shards it coordinates the
// shards o.Runner starts (see package distributed). Cancelling ctx stops
// the run early: operations in flight finish or hit their timeout, the
// figures so far are kept and the Result says Interrupted. An apiserver
// that stops answering ends it too, and the Result says TargetLost.
func Run(ctx context.Context, r *Resolved, o Options) (*Outcome, error) {
	s := r.Spec
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
	e, err := newEngine(r, o, clients)
	if err != nil {
		return nil, err
	}
	// Resolve refused shards to a scenario that does not run in them.
	switch {
	case s.Shards > 0 && o.Runner == nil:
		return nil, errors.New("a distributed run needs Options.Runner to start its shards (a bug in kb-bench: please report it)")
	case s.Shards > 0:
		e.role = &coordinator{e: e}
	default:
		e.role = &inProcess{e: e}
	}
	e.scrapes = true

	rules := r.rulesFor()
	if c, ok := e.sc.Scenario.(scenario.Checker); ok {
		cctx, cancel := context.WithTimeout(ctx, s.OpTimeout.Duration)
		err := c.Check(cctx)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if s.Namespace != "" {
		// An existing namespace: check every permission first (the
		// runner's too), and touch nothing but the run's own labelled
		// objects.
		pctx, cancel := context.WithTimeout(ctx, s.OpTimeout.Duration)
		err := checkPermissions(pctx, e.admin, s.Namespace, withRunner(rules, s, o.Runner), r.clusterRules())
		cancel()
		if err != nil {
			return nil, err
		}
	} else if err := createNamespace(ctx, e.admin, e.env.Namespace, o.RunID, s.OpTimeout.Duration); err != nil {
		return nil, err
	} else if s.Target.ControllerManager || s.Target.Kind == spec.TargetKindCluster {
		// kube-controller-manager puts a ConfigMap (kube-root-ca.crt) in
		// every new namespace; wait for it (and, on a cluster made a
		// moment ago, for the system namespaces' too), so that it is
		// neither in the measured window's requests nor counted late by a
		// scenario.
		if err := waitForRootCA(ctx, e.admin, e.env.Namespace); err != nil {
			e.warn("%v", err)
		}
	}
	runErr := e.execute(ctx)
	if o.EtcdDelay != nil {
		e.result.Target.EtcdProxy = new(o.EtcdDelay())
	}
	if errors.Is(runErr, spec.ErrTargetLost) {
		runErr = nil // the Result says so
	}
	e.cleanUp(ctx, rules)
	if runErr != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", runErr)
		}
		if s.Namespace != "" && namespaceMissing(runErr, s.Namespace) {
			return nil, spec.Input(fmt.Errorf("namespace %s does not exist (%w): create it, or drop --namespace to run in a namespace of the run's own", s.Namespace, runErr))
		}
		return nil, runErr
	}
	return &Outcome{Result: e.result, Report: e.report}, nil
}

// cleanUp deletes what the run made on the target, or says what is left.
func (e *engine) cleanUp(ctx context.Context, rules []rbacv1.PolicyRule) {
	s, res := e.Spec, e.result
	// A context of its own, so that the clean-up happens after Ctrl-C too.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var err error
	switch {
	case res.TargetLost != "" && e.opts.Ephemeral:
		// Its data goes with it.
	case res.TargetLost != "" && s.Namespace != "":
		e.warn("the run's objects are left on the target, which stopped answering: once it answers, delete them with kubectl delete -n %s %s -l %s=%s", s.Namespace, k8s.OwnKinds, k8s.LabelRunID, e.opts.RunID)
	case res.TargetLost != "":
		e.warn("the run's namespace is left on the target, which stopped answering: once it answers, delete it with kubectl delete namespace %s", e.env.Namespace)
	case s.Keep && s.Namespace != "":
		fmt.Fprintf(e.log, "note: keeping the run's objects in namespace %s (keep is set; they are labelled %s=%s)\n", e.env.Namespace, k8s.LabelRunID, e.opts.RunID)
	case s.Keep:
		fmt.Fprintf(e.log, "note: keeping namespace %s (keep is set)\n", e.env.Namespace)
	case s.Namespace != "":
		err = deleteOwn(ctx, e.admin, e.env.Namespace, e.opts.RunID, cleanupResources(rules))
	default:
		err = deleteNamespace(ctx, e.admin, e.env.Namespace, cleanupResources(rules), e.opts.FinalizeNamespace)
	}
	if err != nil {
		e.warn("%v", err)
	}
}

// newEngine builds a run of s with n measured clients, and its scenario.
func newEngine(r *Resolved, o Options, n int) (*engine, error) {
	s := r.Spec
	e := &engine{Resolved: r, opts: o, log: cmp.Or(o.Log, io.Discard), hold: transport.NewHold(), health: transport.NewHealth()}
	e.result = &results.Result{
		APIVersion: results.APIVersion,
		Kind:       results.KindResult,
		RunID:      o.RunID,
		Version:    o.Version,
		Spec:       s,
		Target:     o.Target,
		Namespace:  cmp.Or(s.Namespace, "kb-bench-"+o.RunID), // the existing one, or the run's own
		Workload:   r.Workload(),
	}
	cfg := k8s.ClientConfig(o.Config, s.Client, o.Version)
	if len(o.Servers) > 1 {
		var err error
		if e.servers, err = transport.NewServers(o.Servers); err != nil {
			return nil, fmt.Errorf("the apiservers' URLs: %w", err)
		}
	}
	clients, note, err := transport.NewClients(cfg, n, e.hold, e.health, transport.Options{
		Servers:  o.Servers,
		Latency:  netdelay.Delay{RTT: s.Client.Latency.Duration, Jitter: s.Client.Jitter.Duration},
		Failover: e.servers,
	})
	if err != nil {
		return nil, err
	}
	if note != "" {
		e.warn("%s", note)
	}
	e.clients = clients
	// The admin client is not measured: it sends what client-go prefers,
	// and no request of its own (setup, read-back, scrape, clean-up) waits
	// longer than an operation may: a hung apiserver cannot hold the run.
	// It sends the writers' user agent, so that the objects it creates
	// have the writers' field manager.
	adminCfg := k8s.ClientConfig(o.Config, spec.Client{QPS: s.Client.QPS, Burst: s.Client.Burst, UserAgent: s.Client.UserAgent}, o.Version)
	adminCfg.Timeout = s.OpTimeout.Duration
	setupCfg := adminCfg
	if e.servers != nil {
		// Its setup, read-back and clean-up go to a living apiserver.
		setupCfg = rest.CopyConfig(adminCfg)
		setupCfg.Wrap(e.servers.Wrap(-1, 0))
	}
	if e.admin, err = kubernetes.NewForConfig(setupCfg); err != nil {
		return nil, fmt.Errorf("building the setup client: %w (check the target's kubeconfig)", err)
	}
	if len(o.Servers) > 1 {
		for _, server := range o.Servers {
			c := rest.CopyConfig(adminCfg)
			c.Host = server
			k, err := kubernetes.NewForConfig(c)
			if err != nil {
				return nil, fmt.Errorf("building the client that reads %s's /metrics: %w", server, err)
			}
			e.scrapers = append(e.scrapers, k.CoreV1().RESTClient())
		}
	}
	kubes, dyns := make([]kubernetes.Interface, len(clients)), make([]dynamic.Interface, len(clients))
	for i, c := range clients {
		kubes[i], dyns[i] = c.Kube, c.Dynamic
	}
	adminDyn, err := dynamic.NewForConfig(setupCfg)
	if err != nil {
		return nil, fmt.Errorf("building the setup client: %w (check the target's kubeconfig)", err)
	}
	e.env = &scenario.Env{
		Spec:         s,
		RunID:        o.RunID,
		Namespace:    e.result.Namespace,
		Clients:      kubes,
		Dynamic:      dyns,
		Admin:        e.admin,
		AdminDynamic: adminDyn,
		Log:          e.log,
		Warn:         e.warn,
		Gone:         e.health.Gone(),
		Window:       scenario.NewWindow(),
		Owned:        s.Target.Kind == spec.TargetLocal || o.Target.KindConfig != "",
	}
	e.sc = r.Def.New(e.env, r.Settings)
	return e, nil
}

// record gives the run a recorder for workers: nothing is measured until
// the window starts (MeasureFrom), not the warm-up, nor what a
// Continuous scenario does while the engine reads its counters at the
// window's edge.
func (e *engine) record(workers int) {
	e.rec = metrics.NewRecorder(notYet, metrics.DefaultStripes(workers), e.Spec.Rate > 0)
	e.env.Recorder = e.rec
	e.opts.Live.Watch(e.liveFigures)
}

// execute runs the phase sequence while watching the target: one that
// stops answering ends the run with spec.ErrTargetLost as its cause, and so
// does a caller that cancels ctx with that cause (its own control plane
// died). It is the one place a lost target is told from other failures:
// that cause, or a lost target a shard reported, marks the Result
// TargetLost (not Interrupted) and is the error execute returns; the
// Result keeps what the run got to report.
func (e *engine) execute(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.lose = cancel
	stopWatching := e.health.Watch(cancel)
	// A lost target abandons what waits on it too.
	stopAbandon := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), spec.ErrTargetLost) {
			e.lostAt.Store(new(time.Now()))
			e.health.Abandon()
		}
	})
	defer stopAbandon()
	err := e.run(ctx)
	stopWatching()
	if cerr := e.role.close(ctx, err); cerr != nil {
		e.warn("%v", cerr)
	}
	if cause := context.Cause(ctx); errors.Is(cause, spec.ErrTargetLost) {
		err = cause
	}
	if errors.Is(err, spec.ErrTargetLost) {
		// The Result says how it was lost; that it was is its field's name.
		how := strings.TrimPrefix(err.Error(), spec.ErrTargetLost.Error()+": ")
		e.result.TargetLost, e.result.Interrupted = how+e.whenLost(), false
	}
	return err
}

// whenLost says when the run learnt that its target was lost, and how far
// into the measured window that was ("" when not known).
func (e *engine) whenLost() string {
	at := e.lostAt.Load()
	if at == nil {
		return ""
	}
	s := fmt.Sprintf(" (at %s UTC", at.UTC().Format("15:04:05.000"))
	if w := e.window.Load(); w != nil && at.After(w.start) {
		s += fmt.Sprintf(", %s into the measured window", at.Sub(w.start).Round(10*time.Millisecond))
	}
	return s + ")"
}

// notYet is a time no operation is due at: the measured window's start
// until the engine knows it.
var notYet = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
