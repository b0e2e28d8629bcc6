// Package controllerstatus is the controller-status scenario, the everyday
// controller pattern: K controllers each keep a status condition of their
// own up to date on the Pods they own alone, and on a few Pods they all
// share. Owned Pods have one writer and should never see a 409; the shared
// ones are where controllers collide.
//
// Pods are used because their status subresource is real and needs nothing
// else to work: without nodes (and with a scheduling gate, also on a real
// cluster) they stay Pending and only the controllers write their status.
package controllerstatus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Names and labels the scenario puts on what it creates.
const (
	// ConditionPrefix + the controller's index is the type of the condition
	// each controller writes, e.g. kb-bench.io/controller-0.
	ConditionPrefix = "kb-bench.io/controller-"
	// LabelScenario marks the Pods of this scenario (value "controller-status").
	LabelScenario = "kb-bench.io/scenario"
	// SchedulingGate keeps the Pods Pending on clusters that have a scheduler.
	SchedulingGate = "kb-bench.io/never-schedule"
)

// Run runs the controller-status scenario on env. It creates a `default`
// ServiceAccount (as kube-controller-manager would; Pod admission needs it)
// and Controllers x ObjectsPerController owned Pods plus SharedObjects shared
// ones, then lets each controller's Spec.Writers workers reconcile: write
// the controller's condition with a new message on one Pod after another.
// A controller's Pods are split among its workers so that, as with a
// client-go work queue, no two workers of one controller handle the same
// Pod at once.
//
// How a write is made follows Spec.Strategy: update PUTs /status from the
// controller's last view of the Pod (its "cache"), and after a 409 re-reads
// it the next time round; retry re-reads and retries at once with
// Spec.Backoff; patch sends a merge or strategic patch of the condition
// (with PatchPrecondition, carrying the resourceVersion); ssa applies the
// condition with a field manager per controller (or one shared manager).
//
// Every request is recorded in env.Recorder (one shard per controller) and
// every reconcile is one operation. The run ends after the warm-up plus
// Spec.Duration, after Spec.Operations measured reconciles, or when ctx is
// cancelled; env.Result.Started and Ended are set to that measured window,
// without the setup and the verification. Then each Pod's conditions are compared with what every
// controller last wrote successfully; the verdicts go into env.Result.Checks.
func Run(ctx context.Context, env scenario.Env) error {
	_, err := run(ctx, env)
	return err
}

// stats are the measured writes and 409s, split between owned and shared
// Pods, which the common figures cannot tell apart.
type stats struct {
	ownedWrites, ownedConflicts   int64
	sharedWrites, sharedConflicts int64
}

func run(ctx context.Context, env scenario.Env) (stats, error) {
	if err := check(env); err != nil {
		return stats{}, err
	}
	r := newRunner(env)
	cs := env.Spec.Controller
	fmt.Fprintf(env.Log, "controller status: %d controllers x %d workers; %d owned Pods each, %d shared; strategy %s\n",
		cs.Controllers, env.Spec.Writers, cs.ObjectsPerController, cs.SharedObjects, r.strategyName())
	if err := r.setup(ctx); err != nil {
		return stats{}, err
	}
	// The measured window is the engine's throughput denominator: it
	// leaves out the setup above and the verification below.
	ended := r.drive(ctx)
	env.Result.Started, env.Result.Ended = r.measureFrom, ended
	st := r.stats()
	fmt.Fprintf(env.Log, "controller status: owned Pods: %d writes, %d conflicts; shared Pods: %d writes, %d conflicts\n",
		st.ownedWrites, st.ownedConflicts, st.sharedWrites, st.sharedConflicts)

	// Verify also after Ctrl-C: the figures of a partial run still count.
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*env.Spec.OpTimeout.Duration)
	defer cancel()
	if err := r.verify(vctx); err != nil {
		return st, err
	}
	return st, nil
}

// check refuses settings this scenario cannot honour.
func check(env scenario.Env) error {
	s := env.Spec
	if s.Controller == nil {
		return spec.Input(errors.New("the controller-status scenario needs its controller settings: run with --scenario controller-status so they are defaulted"))
	}
	if len(env.Clients) == 0 {
		return errors.New("controller status: the engine passed no clients (a bug in kb-bench: please report it)")
	}
	if s.Strategy == spec.StrategyPatch && s.PatchType == spec.PatchJSON {
		return spec.Input(errors.New("controller-status patches a condition in a list keyed by type, which a json patch cannot address: use --patch-type merge or strategic"))
	}
	if s.Strategy == spec.StrategyRetry {
		if _, err := spec.ParseBackoff(s.Backoff); err != nil {
			return spec.Input(err)
		}
	}
	return nil
}

// object is one Pod the scenario writes.
type object struct {
	name   string
	shared bool
}

// view is one controller's state for one Pod. Only the worker that owns the
// pair touches it while the run goes; verify reads it afterwards.
type view struct {
	obj *object
	// cached is the controller's last view of the Pod; nil means it must be
	// read before the next write that needs a resourceVersion.
	cached *corev1.Pod
	// seq is the last sequence number written (or tried); lastOK the last
	// one the apiserver accepted; unsure those whose fate is unknown
	// (timeouts, 5xx) since lastOK.
	seq, lastOK int64
	unsure      []int64
}

// runner is one execution of the scenario.
type runner struct {
	env     scenario.Env
	objects []*object
	views   [][]*view // views[c] are controller c's views: owned Pods, then shared
	backoff spec.Backoff

	measureFrom time.Time
	measured    atomic.Int64 // measured operations started (for Spec.Operations)
	stopOnce    sync.Once
	stop        chan struct{}

	ownedWrites, ownedConflicts   atomic.Int64
	sharedWrites, sharedConflicts atomic.Int64
}

func newRunner(env scenario.Env) *runner {
	cs := env.Spec.Controller
	r := &runner{env: env, stop: make(chan struct{})}
	if env.Spec.Strategy == spec.StrategyRetry {
		r.backoff, _ = spec.ParseBackoff(env.Spec.Backoff) // checked by check
	}
	var shared []*object
	for j := range cs.SharedObjects {
		shared = append(shared, &object{name: fmt.Sprintf("shared-%d", j), shared: true})
	}
	r.views = make([][]*view, cs.Controllers)
	for c := range cs.Controllers {
		for i := range cs.ObjectsPerController {
			o := &object{name: fmt.Sprintf("controller-%d-pod-%d", c, i)}
			r.objects = append(r.objects, o)
			r.views[c] = append(r.views[c], &view{obj: o})
		}
		for _, o := range shared {
			r.views[c] = append(r.views[c], &view{obj: o})
		}
	}
	r.objects = append(r.objects, shared...)
	return r
}

func (r *runner) client(c int) kubernetes.Interface { return r.env.Clients[c%len(r.env.Clients)] }

func (r *runner) strategyName() string {
	s := r.env.Spec
	switch s.Strategy {
	case spec.StrategyPatch:
		if s.PatchPrecondition {
			return s.PatchType + " patch with resourceVersion"
		}
		return s.PatchType + " patch"
	case spec.StrategySSA:
		name := "ssa, " + s.FieldManager + " field managers"
		if s.Force {
			name += ", force"
		}
		return name
	case spec.StrategyUpdate:
		if s.Unconditional {
			return "unconditional update"
		}
	}
	return s.Strategy
}

// setup creates the ServiceAccount and the Pods, and primes every
// controller's cache with the created Pods as an informer would.
func (r *runner) setup(ctx context.Context) error {
	env := r.env
	ns := env.Namespace
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := r.client(0).CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("controller status: creating ServiceAccount %s/default, which Pod admission needs: %w (check that kb-bench may create ServiceAccounts there)", ns, err)
	}

	created := make(map[string]*corev1.Pod, len(r.objects))
	var mu sync.Mutex
	work := make(chan *object)
	errs := make(chan error, len(r.objects))
	var wg sync.WaitGroup
	for w := range min(8, len(r.objects)) {
		wg.Go(func() {
			for o := range work {
				pod, err := r.client(w).CoreV1().Pods(ns).Create(ctx, newPod(o.name), metav1.CreateOptions{})
				if err != nil {
					errs <- fmt.Errorf("controller status: creating Pod %s/%s: %w", ns, o.name, err)
					continue
				}
				mu.Lock()
				created[o.name] = pod
				mu.Unlock()
			}
		})
	}
	for _, o := range r.objects {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	for _, views := range r.views {
		for _, v := range views {
			v.cached = created[v.obj.name].DeepCopy()
		}
	}
	return nil
}

// newPod is a Pod that never runs: it has a scheduling gate, and the local
// control plane has no nodes anyway.
func newPod(name string) *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelScenario: spec.ScenarioControllerStatus}},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
			SchedulingGates:              []corev1.PodSchedulingGate{{Name: SchedulingGate}},
			AutomountServiceAccountToken: &no,
		},
	}
}

// drive runs every controller's workers until the run ends, and returns
// when the last one stopped.
func (r *runner) drive(ctx context.Context) time.Time {
	s := r.env.Spec
	t0 := time.Now()
	r.measureFrom = t0.Add(s.Warmup.Duration)
	// The setup above is not warm-up: measure from here.
	r.env.Recorder.MeasureFrom(r.measureFrom)
	if d := s.Duration.Duration; d > 0 {
		timer := time.AfterFunc(time.Until(r.measureFrom.Add(d)), r.end)
		defer timer.Stop()
	}
	// Cancelling ctx stops the workers between reconciles; a reconcile in
	// flight finishes (within OpTimeout) so that it is counted and verified
	// like any other, not as a spurious error.
	stopOnCancel := context.AfterFunc(ctx, r.end)
	defer stopOnCancel()
	ctx = context.WithoutCancel(ctx)

	workers := len(r.views) * s.Writers
	var wg sync.WaitGroup
	for c, views := range r.views {
		for w := range s.Writers {
			var mine []*view
			for i, v := range views {
				if i%s.Writers == w {
					mine = append(mine, v)
				}
			}
			if len(mine) == 0 {
				continue // more workers than Pods
			}
			p := newPacer(t0, s.Rate, s.ThinkTime.Duration, c*s.Writers+w, workers)
			wg.Go(func() { r.work(ctx, c, mine, p) })
		}
	}
	wg.Wait()
	return time.Now()
}

func (r *runner) end() { r.stopOnce.Do(func() { close(r.stop) }) }

// work is one worker of controller c: it reconciles its Pods in turn.
func (r *runner) work(ctx context.Context, c int, views []*view, p *pacer) {
	shard := r.env.Recorder.Shard(c)
	for k := 0; ; k++ {
		intended, late, ok := p.next(r.stop)
		if !ok {
			return
		}
		measured := !intended.Before(r.measureFrom)
		if measured && r.env.Spec.Operations > 0 && r.measured.Add(1) > r.env.Spec.Operations {
			r.end()
			return
		}
		if measured && late {
			r.env.Recorder.Late()
		}
		op := r.reconcile(ctx, c, views[k%len(views)], intended, shard)
		shard.RecordOp(op)
	}
}

// reconcile writes controller c's condition on v's Pod: one operation, with
// the reads and write attempts its strategy makes.
func (r *runner) reconcile(ctx context.Context, c int, v *view, intended time.Time, shard *metrics.Shard) metrics.Op {
	s := r.env.Spec
	op := metrics.Op{Intended: intended, Start: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, s.OpTimeout.Duration)
	defer cancel()
	b := wait.Backoff{Steps: 1}
	if s.Strategy == spec.StrategyRetry {
		b = wait.Backoff{Steps: r.backoff.Steps, Duration: r.backoff.Duration, Factor: r.backoff.Factor, Jitter: r.backoff.Jitter}
	}
	for {
		if v.cached == nil && r.needsView() {
			start := time.Now()
			pod, err := r.client(c).CoreV1().Pods(r.env.Namespace).Get(ctx, v.obj.name, metav1.GetOptions{})
			out := metrics.Classify(err)
			shard.RecordAttempt(intended, metrics.Attempt{Kind: metrics.Read, Latency: time.Since(start), Outcome: out})
			if err != nil {
				op.Outcome, op.Err = out, err
				break
			}
			v.cached = pod
		}

		v.seq++
		start := time.Now()
		pod, err := r.write(ctx, c, v)
		out := metrics.Classify(err)
		shard.RecordAttempt(intended, metrics.Attempt{Kind: metrics.Write, Latency: time.Since(start), Outcome: out})
		op.Attempts++
		op.Outcome, op.Err = out, err
		r.count(v.obj.shared, out, intended)
		conflict := out == metrics.VersionConflict || out == metrics.FieldManagerConflict
		switch {
		case out == metrics.Success:
			v.cached, v.lastOK, v.unsure = pod, v.seq, nil
		case conflict:
			v.cached = nil // stale: read it again, as a requeue would
		case out == metrics.Throttled:
			// Refused before anything was written.
		default:
			// A timeout or server error may or may not have written.
			v.unsure = append(v.unsure, v.seq)
			v.cached = nil
		}
		if out != metrics.VersionConflict || s.Strategy != spec.StrategyRetry {
			break
		}
		if b.Steps <= 1 {
			op.GaveUp = true
			break
		}
		d := b.Step()
		op.Backoff += d
		if !sleep(ctx, d) {
			op.Outcome, op.Err = metrics.Timeout, ctx.Err()
			break
		}
	}
	op.End = time.Now()
	return op
}

// needsView reports whether writes carry a resourceVersion (or the whole
// Pod) and so need the controller's view of the Pod.
func (r *runner) needsView() bool {
	s := r.env.Spec
	switch s.Strategy {
	case spec.StrategyUpdate, spec.StrategyRetry:
		return true
	case spec.StrategyPatch:
		return s.PatchPrecondition
	}
	return false
}

// count adds a measured write attempt to the owned or shared tally.
func (r *runner) count(shared bool, out metrics.Outcome, intended time.Time) {
	if intended.Before(r.measureFrom) {
		return
	}
	conflict := out == metrics.VersionConflict || out == metrics.FieldManagerConflict
	writes, conflicts := &r.ownedWrites, &r.ownedConflicts
	if shared {
		writes, conflicts = &r.sharedWrites, &r.sharedConflicts
	}
	writes.Add(1)
	if conflict {
		conflicts.Add(1)
	}
}

func (r *runner) stats() stats {
	return stats{
		ownedWrites: r.ownedWrites.Load(), ownedConflicts: r.ownedConflicts.Load(),
		sharedWrites: r.sharedWrites.Load(), sharedConflicts: r.sharedConflicts.Load(),
	}
}

// conditionType is controller c's condition type.
func conditionType(c int) corev1.PodConditionType {
	return corev1.PodConditionType(ConditionPrefix + strconv.Itoa(c))
}

// message is the condition message for sequence number seq; every write
// changes it, so no write is a no-op.
func message(seq int64) string { return "write " + strconv.FormatInt(seq, 10) }

// seqOf reads back the sequence number controller c last wrote on pod (0
// when its condition is missing or unreadable).
func seqOf(pod *corev1.Pod, c int) int64 {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == conditionType(c) {
			n, err := strconv.ParseInt(strings.TrimPrefix(cond.Message, "write "), 10, 64)
			if err != nil {
				return 0
			}
			return n
		}
	}
	return 0
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
