package leaderelection

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Name is the scenario's name, as --scenario says it.
const Name = "leader-election"

// LeaseName is the Lease the candidates compete for, in the run's namespace.
const LeaseName = "kb-bench-leader"

// Definition registers the leader-election scenario.
var Definition = scenario.Definition{
	Name:        Name,
	Description: "candidates run client-go's leader election (or a watch-based Lease lock) on one Lease; failovers, faults (pause, partition, skew, delete, edit), overlapping leaders and writes from deposed leaders are measured",
	NewSettings: func() scenario.Settings { return &Settings{} },
	Continuous: func(env *scenario.Env, settings scenario.Settings) scenario.Continuous {
		return newElection(env, settings.(*Settings))
	},
	Rules: func(settings scenario.Settings) []rbacv1.PolicyRule {
		set := settings.(*Settings)
		verbs := []string{"get", "list", "watch", "create", "update", "patch"}
		if set.fault() == FaultDelete {
			verbs = append(verbs, "delete")
		}
		rules := []rbacv1.PolicyRule{k8s.Rule("coordination.k8s.io", []string{"leases"}, verbs...)}
		if set.LeaderWrites.Duration > 0 {
			rules = append(rules, k8s.Rule("", []string{"configmaps"}, "create", "update"))
		}
		return rules
	},
}

// election is one run of the scenario: Spec.Writers candidates campaign for
// one Lease, and the failover loop stops or faults the leader. Every Lease
// request is recorded in Env.Recorder: each write (create or update) is one
// operation of one write attempt, each read a read attempt.
type election struct {
	env *scenario.Env
	set *Settings

	// From Setup to Finish: the Lease watch.
	stopWatch context.CancelFunc
	watchDone chan struct{}
	seen      chan struct{} // poked after each watch event

	// From Start to Stop: the candidates and the failover loop.
	t0      time.Time
	done    func()
	cancel  context.CancelFunc
	loops   sync.WaitGroup
	changed chan struct{} // poked whenever a candidate starts leading

	// The candidate slots; with the pause fault, their processes and the
	// proxy they reach the apiserver by.
	cands []*candidate
	procs []*candidateProcess
	proxy *http.Server
	// The faults' heal functions, which stop their timers (owned by the
	// failover loop).
	heals []func()
	// The leader-only writes of the candidates in this process.
	writers sync.WaitGroup

	mu sync.Mutex
	// The measured window's Lease requests, by phase and all the writes.
	counts         [numPhases]LeasePhase
	measuredWrites int64
	leaderships    []leadership
	leading        map[int]int // slot -> index of its open leadership
	stops          []stop
	losses         int
	holders        []string
	lastRV         string
	history        []leaseEvent
	leaseLog       []event // the Lease writes
	fenced         []event // the leader-only writes, timed as recorded
	fencedIn       int64   // those in the measured window
	faults         []faultEvent
	procsLost      []string // how candidate processes ended early
	electorErr     error
	stopAt         time.Time // when Stop was first called
}

var _ scenario.Continuous = (*election)(nil)

func newElection(env *scenario.Env, set *Settings) *election {
	r := &election{
		env:     env,
		set:     set,
		seen:    make(chan struct{}, 1),
		changed: make(chan struct{}, 1),
		leading: map[int]int{},
	}
	if set.LeaseDuration.Duration%time.Second != 0 {
		env.Warn("leader election: settings.leaseDuration %s is recorded in the Lease as %ds (whole seconds): followers wait %ds before taking over",
			set.LeaseDuration, set.leaseSeconds(), set.leaseSeconds())
	}
	return r
}

// Setup starts watching the Lease, on the admin client: the watch is
// observation, not load.
func (r *election) Setup(ctx context.Context) error {
	env := r.env
	fmt.Fprintf(env.Log, "leader election: %d candidates on Lease %s/%s (lock %s, lease %ds, renew deadline %s, retry %s, release on cancel %t)\n",
		env.Spec.Writers, env.Namespace, LeaseName, r.set.Lock, r.set.leaseSeconds(), r.set.RenewDeadline, r.set.RetryPeriod, r.set.ReleaseOnCancel)
	if r.set.LeaderWrites.Duration > 0 {
		cctx, cancel := context.WithTimeout(ctx, env.Spec.OpTimeout.Duration)
		defer cancel()
		_, err := env.Admin.CoreV1().ConfigMaps(env.Namespace).Create(cctx, newFenced(env.Namespace, env.RunID, map[string]string{"holder": ""}), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("leader election: creating ConfigMap %s for the leader-only writes: %w%s", FencedName, err, k8s.Why(err, "create configmaps", env.Spec.OpTimeout.Duration))
		}
	}
	sel := fields.OneTermEqualSelector("metadata.name", LeaseName).String()
	listCtx, cancel := context.WithTimeout(ctx, env.Spec.OpTimeout.Duration)
	defer cancel()
	list, err := env.Admin.CoordinationV1().Leases(env.Namespace).List(listCtx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return fmt.Errorf("leader election: listing Leases in %s to start watching %s: %w%s", env.Namespace, LeaseName, err, k8s.Why(err, "list and watch Leases", env.Spec.OpTimeout.Duration))
	}
	r.mu.Lock() // a scrape of the live figures may read them (Live)
	for _, l := range list.Items {
		r.holders = append(r.holders, holderOf(&l))
	}
	r.mu.Unlock()
	// The watch outlives Ctrl-C, until Finish has read the final Lease.
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w, err := watchtools.NewRetryWatcherWithContext(watchCtx, list.ResourceVersion, leaseWatcher{env.Admin, env.Namespace})
	if err != nil {
		stop()
		return fmt.Errorf("leader election: watching Lease %s: %w", LeaseName, err)
	}
	r.stopWatch, r.watchDone = stop, make(chan struct{})
	go func() {
		defer close(r.watchDone)
		// Every holder the Lease has, as a watcher sees it.
		eachLease(watchCtx, w, func(t watch.EventType, l *coordinationv1.Lease) bool {
			r.mu.Lock()
			if t != watch.Deleted {
				r.holders = append(r.holders, holderOf(l))
			}
			r.lastRV = l.ResourceVersion
			r.history = append(r.history, leaseEvent{rv: parseRV(l.ResourceVersion), holder: holderOf(l), deleted: t == watch.Deleted})
			r.mu.Unlock()
			select {
			case r.seen <- struct{}{}:
			default:
			}
			return true
		})
	}()
	if r.set.fault() == FaultPause {
		if err := r.startProcesses(ctx); err != nil {
			r.stopWatch()
			<-r.watchDone
			return err
		}
	}
	return nil
}

// Start starts the candidates and the failover loop and returns at once.
func (r *election) Start(ctx context.Context, done func()) {
	r.t0 = time.Now()
	r.done = done
	// client-go's leader election logs through klog; a discarding logger in
	// the context keeps it quiet without touching klog's global state.
	ctx, r.cancel = context.WithCancel(klog.NewContext(ctx, logr.Discard()))
	for i := range r.env.Spec.Writers {
		r.cands = append(r.cands, &candidate{candidateConfig: r.config(i), client: r.env.Client(i), ops: r.env.Ops(),
			partition: &partition{}, obs: func(e event) { _ = r.observe(i, e) }, writers: &r.writers})
	}
	r.loops.Go(func() { r.failoverLoop(ctx) })
}

// Stop stops the candidates (a releasing leader releases the Lease) and
// the failover loop, and returns when they are gone.
func (r *election) Stop() {
	r.mu.Lock()
	r.stopAt = cmp.Or(r.stopAt, time.Now())
	r.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
	}
	r.loops.Wait()
	r.writers.Wait()
	r.stopProcesses()
}

// failoverLoop starts a candidate in every slot and owns them until ctx
// ends. Failovers and faults are timed from when the measured window
// opened (Env.Window), not from the warm-up's end: the window's first
// edge holds every request for a second or more after it, and a fault
// or failover then would meet held requests and fall outside the
// measured window. The leader is stopped once it has led for
// FailoverEvery (or at the window's start, if it led before). The
// stopped candidate rejoins under a new identity once another has taken
// over, as a restarted process would some time later; rejoining at once
// would let it grab a released Lease before the standbys' next retry and
// hide what failover costs them. A lone candidate rejoins at once.
func (r *election) failoverLoop(ctx context.Context) {
	n := r.env.Spec.Writers
	slots := make([]func(), n) // each stops its slot's candidate and waits for it
	for i := range slots {
		slots[i] = r.startSlot(ctx, i)
	}
	defer func() {
		// Heal every partition first, so that no request waits out its
		// timeout behind one.
		for _, heal := range r.heals {
			heal()
		}
		for _, s := range slots {
			s()
		}
	}()
	every := r.set.FailoverEvery.Duration
	fault := r.set.fault()
	if fault == FaultSkew {
		fault = "" // the skewed candidate runs from the start: leaders are stopped as without a fault
	}
	once := fault != "" && r.set.FaultAt.Duration > 0
	if once {
		every = r.set.FaultAt.Duration
	}
	opened := r.env.Window.Opened()
	var start time.Time          // when the window opened; zero: not yet
	var lastFault time.Time      // zero: none injected yet
	armedFor := ""               // the leader the failover timer is set for
	restart := -1                // the slot waiting to rejoin
	var due <-chan time.Time     // the failover timer
	skipped := time.Duration(-1) // how far into the window a fault came due too late to inject; -1: none did
	for {
		select {
		case <-ctx.Done():
			if once && lastFault.IsZero() && !start.IsZero() && time.Since(start) >= r.env.Spec.Duration.Duration {
				// The window ran to its end (not interrupted) without it.
				r.warnNotInjected(fault, skipped)
			}
			return
		case <-opened:
			opened = nil
			start, _ = r.env.Window.Start()
		case <-due:
			due = nil
			if slot, l, ok := r.currentLeader(); ok && l.id == armedFor {
				end := start.Add(r.env.Spec.Duration.Duration)
				switch {
				case fault != "" && time.Until(end) < r.set.seenAfterFault():
					// Too close to the end of the measured window for
					// what follows it to be seen: the fault's end, and
					// the Lease changing hands after it. Any later fault
					// would be too, so none is armed again (re-armed,
					// a timer already due would fire at once, over and
					// over, to the window's end).
					skipped = time.Since(start)
				case fault != "":
					r.inject(ctx, slot, l.id)
					lastFault = time.Now()
				default:
					// Stop the leader and wait for it (a releasing
					// leader has released then).
					r.mu.Lock()
					r.stops = append(r.stops, stop{id: l.id, at: time.Now()})
					r.mu.Unlock()
					slots[slot]()
					if n == 1 {
						slots[slot] = r.startSlot(ctx, slot)
					} else {
						restart = slot
					}
				}
			}
			armedFor = ""
		case <-r.changed:
		}
		_, l, leader := r.currentLeader()
		if !leader {
			continue
		}
		if restart >= 0 {
			slots[restart] = r.startSlot(ctx, restart)
			restart = -1
		}
		if every > 0 && !start.IsZero() && skipped < 0 && l.id != armedFor && !(once && !lastFault.IsZero()) {
			armedFor = l.id
			since := l.start
			switch {
			case once:
				since = start
			case since.Before(start):
				since = start.Add(-every)
			}
			if since.Before(lastFault) {
				since = lastFault // a leader a fault left leading is not hit again at once
			}
			due = time.After(time.Until(since.Add(every)))
		}
	}
}

// startSlot starts slot's candidate campaigning, under a new identity: as
// a goroutine, or with the pause fault by telling its process to begin
// (the failover loop never stops a leader then, so never restarts one).
// It returns what stops the candidate and waits for it.
func (r *election) startSlot(parent context.Context, slot int) func() {
	if r.procs != nil {
		return r.begin(r.procs[slot])
	}
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.cands[slot].campaign(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// config is what the candidate in slot runs with: the settings, but with
// the skew fault the last slot's lease duration is shorter.
func (r *election) config(slot int) candidateConfig {
	c := candidateConfig{Slot: slot, Namespace: r.env.Namespace, RunID: r.env.RunID, Settings: *r.set,
		Lease: r.set.LeaseDuration.Duration, Timeout: r.env.Spec.OpTimeout.Duration, Client: r.env.Spec.Client}
	if r.set.fault() == FaultSkew && slot == r.env.Spec.Writers-1 {
		c.Lease = r.set.FaultDuration.Duration
	}
	return c
}

// observe takes in one thing the candidate in slot did: its Lease reads
// and writes and its fenced writes are recorded (each write one operation
// of one write attempt) and logged, its leaderships kept.
func (r *election) observe(slot int, e event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case evRead, evWrite, evFenced:
		stripe := r.env.Recorder.Stripe(slot)
		// The request is due when it started; but one that waited at the
		// engine's hold across the start of the measured window is due
		// when it left the hold (when it got its connection), which is
		// when the apiserver saw it: so the window holds exactly the
		// requests the apiserver counted in it.
		if !e.Sent.IsZero() && !stripe.Measured(e.Start) {
			e.Start = e.Sent
		}
		kind := metrics.Write
		if e.Kind == evRead {
			kind = metrics.Read
		}
		scenario.RecordRequest(stripe, kind, e.Start, e.End, e.Outcome, e.errOf())
		measured := stripe.Measured(e.Start)
		switch c := &r.counts[e.Phase]; {
		case e.Kind == evFenced:
			r.fenced = append(r.fenced, e)
			if measured {
				r.fencedIn++
			}
		case e.Kind == evWrite:
			r.leaseLog = append(r.leaseLog, e)
			if !measured {
				break
			}
			c.Writes++
			if e.Outcome == metrics.VersionConflict {
				c.Conflicts++
			} else if e.Outcome != metrics.Success {
				c.Errors++
			}
			if r.measuredWrites++; r.measuredWrites == r.env.Spec.Operations {
				r.done()
			}
		case measured:
			c.Reads++
			if e.Outcome != metrics.Success {
				c.Errors++
			}
		}
	case evBegan:
		r.leading[slot] = len(r.leaderships)
		r.leaderships = append(r.leaderships, leadership{id: e.ID, start: e.Start})
		select {
		case r.changed <- struct{}{}:
		default:
		}
	case evEnded:
		if i, ok := r.leading[slot]; ok {
			r.leaderships[i].end = e.End
			delete(r.leading, slot)
		}
	case evLost:
		r.losses++
	case evFailed:
		r.electorErr = e.errOf()
	default:
		return fmt.Errorf("unknown event %q", e.Kind)
	}
	return nil
}

// warnNotInjected says why the one fault --fault-at asked for was not
// injected: no candidate led from then to the window's end, or the first
// that did was found skipped into the window (-1: none was), too late for
// the fault and the Lease changing hands after it to be seen before the
// window's end. (The window's first edge holds every request for a second
// or more: a leader whose renew deadline is shorter steps down there, and
// the window opens leaderless.)
func (r *election) warnNotInjected(fault string, skipped time.Duration) {
	window := r.env.Spec.Duration.Duration
	if skipped < 0 {
		r.env.Warn("leader election: the %s fault was not injected: no candidate led from %s into the measured window to its end (%s); the leader may have stepped down at the window's first edge, or another holder kept the Lease: lengthen --duration",
			fault, r.set.FaultAt, window)
		return
	}
	r.env.Warn("leader election: the %s fault was not injected: it was due %s into the measured window, but the leader to inject it on was found only %s into it, too late for the fault and a lease after it (%s) to be seen in the %s window: lengthen --duration",
		fault, r.set.FaultAt, skipped.Round(time.Millisecond), r.set.seenAfterFault(), window)
}

// currentLeader returns the slot and leadership of the candidate that
// most recently started leading and still believes it leads.
func (r *election) currentLeader() (slot int, l leadership, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	slot, i := -1, -1
	for s, j := range r.leading {
		if j > i {
			slot, i = s, j
		}
	}
	if slot < 0 {
		return 0, leadership{}, false
	}
	return slot, r.leaderships[i], true
}

// leaseWatcher watches the one Lease.
type leaseWatcher struct {
	client    kubernetes.Interface
	namespace string
}

func (w leaseWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.FieldSelector = fields.OneTermEqualSelector("metadata.name", LeaseName).String()
	return w.client.CoordinationV1().Leases(w.namespace).Watch(ctx, o)
}

// eachLease hands on the Lease of each event of w until on returns
// false, w ends or ctx does.
func eachLease(ctx context.Context, w *watchtools.RetryWatcher, on func(watch.EventType, *coordinationv1.Lease) bool) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if l, isLease := ev.Object.(*coordinationv1.Lease); isLease && !on(ev.Type, l) {
				return
			}
		}
	}
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitWatched waits until the watch has seen resourceVersion rv, or ctx
// ends.
func (r *election) waitWatched(ctx context.Context, rv string) {
	for {
		r.mu.Lock()
		last := r.lastRV
		r.mu.Unlock()
		if last == rv {
			return
		}
		select {
		case <-ctx.Done():
			r.env.Warn("leader election: the Lease watch did not catch up with resourceVersion %s; transitions may be undercounted", rv)
			return
		case <-r.seen:
		}
	}
}

// Finish reads the final Lease, lets the watch catch up with it so that
// the holder history is complete, and builds the report.
func (r *election) Finish(ctx context.Context) (scenario.Report, error) {
	env := r.env
	r.Stop()
	r.mu.Lock()
	end, electorErr := r.stopAt, r.electorErr // what stopping did is not part of the run
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, env.Spec.OpTimeout.Duration)
	defer cancel()
	lease, err := env.Admin.CoordinationV1().Leases(env.Namespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		env.Warn("leader election: reading the final Lease: %v; leaseTransitions is not reported and transitions may be undercounted", err)
		lease = nil
	} else {
		r.waitWatched(ctx, lease.ResourceVersion)
	}
	r.stopWatch()
	<-r.watchDone

	rep := r.report(lease, end)
	if electorErr != nil {
		env.Warn("leader election: %v", electorErr)
	}
	if rep.FirstLeader == "" {
		env.Warn("leader election: no candidate became leader during the run; if another holder keeps the Lease, lengthen --duration past its lease duration")
	}
	return rep, nil
}

// report builds the report from what the run recorded.
//
// Leaderships that Stop ended (at or after end) count as still open at
// the end.
func (r *election) report(lease *coordinationv1.Lease, end time.Time) *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	ls := slices.Clone(r.leaderships)
	for i, l := range ls {
		if !l.end.Before(end) {
			ls[i].end = time.Time{}
		}
	}
	rep := &Report{
		Candidates:           r.env.Spec.Writers,
		ReleaseOnCancel:      r.set.ReleaseOnCancel,
		LeaseDurationSeconds: r.set.leaseSeconds(),
		Leaderships:          len(ls),
		Transitions:          transitions(r.holders),
		LostLeadership:       r.losses,
		Acquire:              r.counts[phaseAcquire],
		Renew:                r.counts[phaseRenew],
		Release:              r.counts[phaseRelease],
		Intruder:             r.counts[phaseIntruder],
		Lock:                 r.set.Lock,
		Fault:                r.set.fault(),
		CandidatesLost:       r.procsLost,
	}
	if rep.Fault == FaultSkew {
		rep.SkewedLeaseSeconds = int(r.set.FaultDuration.Duration / time.Second)
	}
	if len(ls) > 0 {
		first := slices.MinFunc(ls, byStart)
		rep.FirstLeader, rep.TimeToFirstLeader = first.id, first.start.Sub(r.t0)
		rep.Leaderless, _ = coverage(ls, first.start, end)
	}
	if lease != nil && lease.Spec.LeaseTransitions != nil {
		rep.LeaseTransitions = int(*lease.Spec.LeaseTransitions)
	}
	// The timeline counts from the measured window's start, as
	// --fault-at does (from the candidates' start if it never opened).
	base := r.t0
	if start, ok := r.env.Window.Start(); ok {
		base = start
	}
	rep.FailoverTime = failoverStats(failovers(r.stops, ls, base))
	rep.Overlaps = overlaps(ls, base, end)
	for _, o := range rep.Overlaps {
		rep.OverlapTotal += o.Duration
	}
	rep.Thefts = thefts(ls, base, end)
	var classes []classified
	if r.set.LeaderWrites.Duration > 0 {
		// Writes are told apart by resourceVersion, if all are etcd
		// revisions.
		numeric := !slices.ContainsFunc(r.history, func(e leaseEvent) bool { return e.rv == 0 }) &&
			!slices.ContainsFunc(r.fenced, func(f event) bool { return f.Outcome == metrics.Success && f.RV == 0 })
		w := &LeaderWrites{Writes: len(r.fenced), Measured: r.fencedIn, Unclassified: !numeric}
		for _, f := range r.fenced {
			if f.Outcome != metrics.Success {
				continue
			}
			if w.Accepted++; !numeric {
				continue
			}
			deposed, refused := fencing(r.history, f)
			if deposed {
				w.Deposed++
				if !refused {
					w.Unfenced++
				}
			}
			if refused {
				w.WouldBeFenced++
			}
			classes = append(classes, classified{id: f.ID, end: f.End, deposed: deposed, refused: refused})
		}
		rep.LeaderWrites = w
	}
	rep.Faults = faultReports(r.faults, ls, r.leaseLog, classes, base, end)
	return rep
}
