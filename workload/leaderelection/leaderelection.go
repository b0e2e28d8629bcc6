package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// LeaseName is the Lease the candidates compete for, in the run's namespace.
const LeaseName = "kb-bench-leader"

// CheckOneLeader names the check that no two candidates led at once.
const CheckOneLeader = "leader election: exactly one leader at a time"

// Run runs the leader-election scenario: Spec.Writers candidates campaign
// for one Lease with client-go's leader election. Every
// Spec.LeaderElection.FailoverEvery after the warm-up the current leader is
// stopped (its context cancelled, which releases the Lease when
// ReleaseOnCancel is set); it rejoins as a new candidate under a new
// identity once another candidate leads. The failover time is from the stop
// to the next OnStartedLeading anywhere. A leader that loses the Lease on
// its own rejoins at once, under a new identity too.
//
// Every Lease request is recorded in env.Recorder: each write (create or
// update) is one operation of one write attempt, each read a read attempt.
// The run ends after the warm-up plus Spec.Duration, after Spec.Operations
// measured writes, or when ctx is cancelled; the figures gathered so far go
// into env.Result.LeaderElection and env.Result.Checks either way.
func Run(ctx context.Context, env scenario.Env) error {
	if env.Spec.LeaderElection == nil {
		return spec.Input(errors.New("the leader-election scenario needs its leaderElection settings: run with --scenario leader-election so they are defaulted"))
	}
	if len(env.Clients) == 0 {
		return errors.New("leader election: the engine passed no clients (a bug in kb-bench: please report it)")
	}
	le := *env.Spec.LeaderElection
	leaseSeconds, warning := leaseSecondsOf(le)
	if warning != "" {
		env.Result.Warnings = append(env.Result.Warnings, warning)
		fmt.Fprintln(env.Log, "warning:", warning)
	}

	// client-go's leader election logs through klog; a discarding logger in
	// the context keeps it quiet without touching klog's global state.
	ctx = klog.NewContext(ctx, logr.Discard())
	r := &run{
		env:          env,
		le:           le,
		leaseSeconds: leaseSeconds,
		opsDone:      make(chan struct{}),
		changed:      make(chan struct{}, 1),
		leading:      map[int]int{},
		gens:         make([]int, env.Spec.Writers),
	}
	return r.run(ctx)
}

// leaseSecondsOf returns the lease duration as the Lease records it (whole
// seconds; spec.Validate has checked the timings against client-go's rules)
// and a warning when that differs from what was asked.
func leaseSecondsOf(le spec.LeaderElection) (int, string) {
	secs := int(le.LeaseDuration.Duration / time.Second)
	warning := ""
	if le.LeaseDuration.Duration%time.Second != 0 {
		warning = fmt.Sprintf("leaderElection.leaseDuration %s is recorded in the Lease as %ds (whole seconds): followers wait %ds before taking over",
			le.LeaseDuration, secs, secs)
	}
	return secs, warning
}

// run is one execution of the scenario.
type run struct {
	env          scenario.Env
	le           spec.LeaderElection
	leaseSeconds int
	counts       phaseCounters

	t0, measureFrom time.Time
	measuredWrites  atomic.Int64
	opsDone         chan struct{}
	opsOnce         sync.Once
	// changed is poked whenever a candidate starts leading.
	changed chan struct{}

	mu          sync.Mutex
	leaderships []leadership
	leading     map[int]int // slot -> index of its open leadership
	stops       []stop
	lost        int
	gens        []int // per slot: the next identity's generation
	holders     []string
	lastRV      string
}

// slotRun is one candidate process occupying a slot.
type slotRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *run) run(ctx context.Context) error {
	env := r.env
	n := env.Spec.Writers
	fmt.Fprintf(env.Log, "leader election: %d candidates on Lease %s/%s (lease %ds, renew deadline %s, retry %s, release on cancel %t)\n",
		n, env.Namespace, LeaseName, r.leaseSeconds, r.le.RenewDeadline, r.le.RetryPeriod, r.le.ReleaseOnCancel)

	// The watch outlives Ctrl-C until it has caught up with the final Lease.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	watched, err := r.watchLease(watchCtx)
	if err != nil {
		return err
	}

	r.t0 = time.Now()
	r.measureFrom = r.t0.Add(env.Spec.Warmup.Duration)
	// Setting up the watch is not warm-up: measure from here.
	env.Recorder.MeasureFrom(r.measureFrom)
	env.Result.Started = r.measureFrom
	candCtx, stopCandidates := context.WithCancel(ctx)
	defer stopCandidates()
	slots := make([]*slotRun, n)
	for i := range slots {
		slots[i] = r.startSlot(candCtx, i)
	}

	var endC <-chan time.Time
	if d := env.Spec.Duration.Duration; d > 0 {
		end := time.NewTimer(time.Until(r.measureFrom.Add(d)))
		defer end.Stop()
		endC = end.C
	}
	// The main loop owns slots. Failovers start after the warm-up: the
	// leader is stopped once it has led for FailoverEvery (or at the end of
	// the warm-up, if it led before). The stopped candidate rejoins under a
	// new identity once another has taken over, as a restarted process
	// would some time later; rejoining at once would let it grab a released
	// Lease before the standbys' next retry and hide what failover costs
	// them. A lone candidate rejoins at once.
	every := r.le.FailoverEvery.Duration
	failover := time.NewTimer(time.Hour)
	failover.Stop()
	defer failover.Stop()
	armedFor := "" // the leader the failover timer is set for
	restart := -1  // the slot waiting to rejoin
	var due <-chan time.Time
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-endC:
			break loop
		case <-r.opsDone:
			break loop
		case <-due:
			due = nil
			if slot, id, ok := r.currentLeader(); ok && id == armedFor {
				r.stopLeader(slots, slot, id)
				if n == 1 {
					slots[slot] = r.startSlot(candCtx, slot)
				} else {
					restart = slot
				}
			}
			armedFor = ""
		case <-r.changed:
		}
		slot, id, leader := r.currentLeader()
		if !leader {
			continue
		}
		if restart >= 0 {
			slots[restart] = r.startSlot(candCtx, restart)
			restart = -1
		}
		if every > 0 && id != armedFor {
			armedFor = id
			since := r.leaderSince(slot)
			if since.Before(r.measureFrom) {
				since = r.measureFrom.Add(-every)
			}
			failover.Reset(time.Until(since.Add(every)))
			due = failover.C
		}
	}

	end := time.Now()
	env.Result.Ended = end
	stopCandidates()
	for _, s := range slots {
		<-s.done
	}

	// Read the final Lease (also after Ctrl-C) and let the watch catch up
	// with it, so the holder history is complete.
	finalCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), env.Spec.OpTimeout.Duration)
	defer cancel()
	lease, err := env.Clients[0].CoordinationV1().Leases(env.Namespace).Get(finalCtx, LeaseName, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(env.Log, "warning: leader election: reading the final Lease: %v\n", err)
		lease = nil
	} else {
		r.waitWatched(finalCtx, watched, lease.ResourceVersion)
	}
	stopWatch()

	r.report(lease, end)
	return nil
}

// stopLeader stops the candidate in slot, which leads as id, and waits for
// it to finish (a releasing leader has released when it returns).
func (r *run) stopLeader(slots []*slotRun, slot int, id string) {
	r.mu.Lock()
	r.stops = append(r.stops, stop{id: id, at: time.Now()})
	r.mu.Unlock()
	slots[slot].cancel()
	<-slots[slot].done
}

// leaderSince returns when the candidate in slot started leading.
func (r *run) leaderSince(slot int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leaderships[r.leading[slot]].start
}

// startSlot starts a new candidate process in slot, under a new identity.
func (r *run) startSlot(parent context.Context, slot int) *slotRun {
	ctx, cancel := context.WithCancel(parent)
	s := &slotRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		r.campaign(ctx, slot)
	}()
	return s
}

// nextID returns a fresh identity for slot: candidate-<slot>.<generation>.
func (r *run) nextID(slot int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := fmt.Sprintf("candidate-%d.%d", slot, r.gens[slot])
	r.gens[slot]++
	return id
}

// campaign runs one candidate until ctx ends. When the candidate loses the
// Lease on its own (a renewal failed within the renew deadline) client-go's
// Run returns, and the candidate starts over under a new identity.
func (r *run) campaign(ctx context.Context, slot int) {
	env := r.env
	client := env.Clients[slot%len(env.Clients)]
	for ctx.Err() == nil {
		id := r.nextID(slot)
		lock := &meteredLock{
			inner: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: env.Namespace, Name: LeaseName},
				Client:     client.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: id},
			},
			runCtx:          ctx,
			releaseOnCancel: r.le.ReleaseOnCancel,
			timeout:         env.Spec.OpTimeout.Duration,
			shard:           env.Recorder.Shard(slot),
			counts:          &r.counts,
			onWrite:         r.wrote,
		}
		ended := make(chan struct{})
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			Name:            LeaseName,
			LeaseDuration:   r.le.LeaseDuration.Duration,
			RenewDeadline:   r.le.RenewDeadline.Duration,
			RetryPeriod:     r.le.RetryPeriod.Duration,
			ReleaseOnCancel: r.le.ReleaseOnCancel,
			Callbacks: leaderelection.LeaderCallbacks{
				// The candidate believes it leads from here until client-go
				// cancels the context it hands over: that is when the work a
				// real leader guards must stop.
				OnStartedLeading: func(lctx context.Context) {
					defer close(ended)
					r.beginLeading(slot, id, time.Now())
					<-lctx.Done()
					r.endLeading(slot, time.Now())
				},
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			// spec.Validate checked everything NewLeaderElector checks.
			fmt.Fprintf(env.Log, "warning: leader election: candidate %s: %v\n", id, err)
			return
		}
		elector.Run(ctx)
		if lock.acquired.Load() {
			<-ended // client-go starts OnStartedLeading in its own goroutine
		}
		if ctx.Err() != nil {
			return
		}
		if lock.acquired.Load() {
			r.mu.Lock()
			r.lost++
			r.mu.Unlock()
		}
	}
}

// wrote counts a Lease write for the Operations bound.
func (r *run) wrote(intended time.Time) {
	if intended.Before(r.measureFrom) {
		return
	}
	if n := r.measuredWrites.Add(1); r.env.Spec.Operations > 0 && n >= r.env.Spec.Operations {
		r.opsOnce.Do(func() { close(r.opsDone) })
	}
}

func (r *run) beginLeading(slot int, id string, at time.Time) {
	r.mu.Lock()
	r.leading[slot] = len(r.leaderships)
	r.leaderships = append(r.leaderships, leadership{id: id, start: at})
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *run) endLeading(slot int, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.leading[slot]; ok {
		r.leaderships[i].end = at
		delete(r.leading, slot)
	}
}

// currentLeader returns the slot and identity of the candidate that most
// recently started leading and still believes it leads.
func (r *run) currentLeader() (slot int, id string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	best := -1
	for s, i := range r.leading {
		if best < 0 || i > r.leading[best] {
			best = s
		}
	}
	if best < 0 {
		return 0, "", false
	}
	return best, r.leaderships[r.leading[best]].id, true
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

// watchLease records every holder the Lease has, as a watcher sees it. The
// returned channel is poked after each event.
func (r *run) watchLease(ctx context.Context) (<-chan struct{}, error) {
	env := r.env
	sel := fields.OneTermEqualSelector("metadata.name", LeaseName).String()
	listCtx, cancel := context.WithTimeout(ctx, env.Spec.OpTimeout.Duration)
	defer cancel()
	list, err := env.Clients[0].CoordinationV1().Leases(env.Namespace).List(listCtx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("leader election: listing Leases in %s to start watching %s: %w (check that the namespace exists and kb-bench may list Leases)", env.Namespace, LeaseName, err)
	}
	for _, l := range list.Items {
		r.holders = append(r.holders, holderOf(&l))
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, leaseWatcher{env.Clients[0], env.Namespace})
	if err != nil {
		return nil, fmt.Errorf("leader election: watching Lease %s: %w", LeaseName, err)
	}
	seen := make(chan struct{}, 1)
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				l, isLease := ev.Object.(*coordinationv1.Lease)
				if !isLease {
					continue
				}
				r.mu.Lock()
				if ev.Type != watch.Deleted {
					r.holders = append(r.holders, holderOf(l))
				}
				r.lastRV = l.ResourceVersion
				r.mu.Unlock()
				select {
				case seen <- struct{}{}:
				default:
				}
			}
		}
	}()
	return seen, nil
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitWatched waits until the watch has seen resourceVersion rv, or ctx ends.
func (r *run) waitWatched(ctx context.Context, seen <-chan struct{}, rv string) {
	for {
		r.mu.Lock()
		last := r.lastRV
		r.mu.Unlock()
		if last == rv {
			return
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(r.env.Log, "warning: leader election: the Lease watch did not catch up with resourceVersion %s; transitions may be undercounted\n", rv)
			return
		case <-seen:
		}
	}
}

// report fills the Result from what the run recorded.
func (r *run) report(lease *coordinationv1.Lease, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := &results.LeaderElectionReport{
		Candidates:           r.env.Spec.Writers,
		ReleaseOnCancel:      r.le.ReleaseOnCancel,
		LeaseDurationSeconds: r.leaseSeconds,
		Leaderships:          len(r.leaderships),
		Transitions:          transitions(r.holders),
		LostLeadership:       r.lost,
		Acquire:              r.counts.report(phaseAcquire),
		Renew:                r.counts.report(phaseRenew),
		Release:              r.counts.report(phaseRelease),
	}
	for _, l := range r.leaderships {
		if rep.FirstLeader == "" || l.start.Sub(r.t0) < rep.TimeToFirstLeader {
			rep.FirstLeader = l.id
			rep.TimeToFirstLeader = l.start.Sub(r.t0)
		}
	}
	if lease != nil && lease.Spec.LeaseTransitions != nil {
		rep.LeaseTransitions = int(*lease.Spec.LeaseTransitions)
	}
	rep.Failovers = failovers(r.stops, r.leaderships, r.t0)
	rep.FailoverTime = failoverStats(rep.Failovers)
	rep.Overlaps = overlaps(r.leaderships, r.t0, end)
	for _, o := range rep.Overlaps {
		rep.OverlapTotal += o.Duration
	}
	r.env.Result.LeaderElection = rep

	check := results.Check{Name: CheckOneLeader, Passed: len(rep.Overlaps) == 0, Expected: 0, Observed: int64(len(rep.Overlaps))}
	if !check.Passed {
		check.Detail = fmt.Sprintf("%d spans, %s in total, in which two or more candidates believed they led at once", len(rep.Overlaps), rep.OverlapTotal)
	}
	r.env.Result.Checks = append(r.env.Result.Checks, check)
	if rep.FirstLeader == "" {
		r.env.Result.Warnings = append(r.env.Result.Warnings,
			"leader election: no candidate became leader during the run; if another holder keeps the Lease, lengthen --duration past its lease duration")
	}
}
