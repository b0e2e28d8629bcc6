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
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/reads"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Names and labels the scenario puts on what it creates.
const (
	// Name is the scenario's name, as --scenario says it.
	Name = "controller-status"
	// ConditionPrefix + the controller's index is the type of the condition
	// each controller writes, e.g. kb-bench.io/controller-0.
	ConditionPrefix = "kb-bench.io/controller-"
	// LabelScenario marks the Pods of this scenario (value Name).
	LabelScenario = "kb-bench.io/scenario"
)

// Definition registers the controller-status scenario. Each controller
// runs Spec.Writers workers, among which its Pods are split so that, as
// with a client-go work queue, no two workers of one controller handle the
// same Pod at once. An operation is one reconcile: write the controller's
// condition with a new message on the worker's next Pod, the way
// Spec.Strategy says (write), through client c for controller c, reading
// the Pod first where Spec.Read says when its view of it is stale.
var Definition = scenario.Definition{
	Name:        Name,
	Description: "controllers keep a status condition of their own on the Pods they own and on Pods they share; 409s and lost status updates are counted",
	Strategies:  true,
	Reads:       true,
	NewSettings: func() scenario.Settings { return &Settings{} },
	Driven: func(env *scenario.Env, settings scenario.Settings) scenario.Driven {
		return newControllers(env, settings.(*Settings))
	},
	Rules: func(scenario.Settings) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{
			k8s.Rule("", []string{"pods"}, "get", "list", "create", "update", "patch"),
			k8s.Rule("", []string{"pods/status"}, "update", "patch"),
			k8s.Rule("", []string{"serviceaccounts"}, "get", "create"),
		}
	},
}

// object is one Pod the scenario writes.
type object struct {
	name   string
	shared bool
	i      int // index in controllers.objects and acks
}

// view is one controller's state for one Pod. Only the worker that owns the
// pair touches it while the run goes; Finish reads it afterwards.
type view struct {
	obj *object
	// cached is the controller's last view of the Pod; nil means it must be
	// read before the next write that needs a resourceVersion.
	cached *corev1.Pod
	// latest is the Pod's newest acknowledged resourceVersion as the read
	// of cached began (0 when cached is a write's response), for the
	// 409s' causes.
	latest int64
	// seq is the last sequence number written (or tried); lastOK the last
	// one the apiserver accepted; unsure those that may have landed
	// (timeouts, 5xx) since lastOK.
	seq, lastOK int64
	unsure      []int64
}

// worker is one worker of controller c: it reconciles its views in turn.
type worker struct {
	c     int
	views []*view
	next  int // index in views of the next reconcile
}

// tally counts the measured write attempts and 409s on owned and shared
// Pods, which the engine's figures cannot tell apart.
type tally struct {
	ownedWrites, ownedConflicts   atomic.Int64
	sharedWrites, sharedConflicts atomic.Int64
}

// controllers is one run of the scenario.
type controllers struct {
	env     *scenario.Env
	objects []*object
	views   [][]*view // views[c] are controller c's views: owned Pods, then shared
	workers []*worker
	// strategy is the controllers' write; measures the workers'
	// Measurers, made by Setup.
	strategy scenario.Write
	measures []*scenario.Measurer

	tally tally
	// Where the controllers read (reads): GETs at resourceVersion rv, or
	// informers, one per client; every Pod's successful writes and the
	// 409s by cause.
	rv        string
	informers *reads.Informers
	acks      []reads.Acks
	causes    *reads.Causes
}

var _ scenario.Driven = (*controllers)(nil)

// newControllers lays out the Pods, every controller's views of them and the
// workers: worker c*n+w (n workers per controller) owns view i of
// controller c when i%n == w.
func newControllers(env *scenario.Env, set *Settings) *controllers {
	r := &controllers{env: env, strategy: scenario.WriteOf(&env.Spec)}
	var shared []*object
	for j := range set.SharedObjects {
		shared = append(shared, &object{name: fmt.Sprintf("shared-%d", j), shared: true})
	}
	n := set.workers(&env.Spec)
	r.views = make([][]*view, set.Controllers)
	for c := range set.Controllers {
		for i := range set.ObjectsPerController {
			o := &object{name: fmt.Sprintf("controller-%d-pod-%d", c, i)}
			r.objects = append(r.objects, o)
			r.views[c] = append(r.views[c], &view{obj: o})
		}
		for _, o := range shared {
			r.views[c] = append(r.views[c], &view{obj: o})
		}
		for w := range n {
			wk := &worker{c: c}
			for i := w; i < len(r.views[c]); i += n {
				wk.views = append(wk.views, r.views[c][i])
			}
			r.workers = append(r.workers, wk)
		}
	}
	r.objects = append(r.objects, shared...)
	for i, o := range r.objects {
		o.i = i
	}
	// A live GET is never stale: the acks' ring is for other reads.
	r.rv, r.acks, r.causes = reads.RV(env.Spec.Read), reads.NewAcks(len(r.objects), env.Spec.Read != spec.ReadGet), reads.NewCauses()
	if n < env.Spec.Writers {
		fmt.Fprintf(env.Log, "note: %d writers per controller for %d Pods each: %d workers per controller run\n", env.Spec.Writers, len(r.views[0]), n)
	}
	return r
}

// Workers is Controllers x the workers each runs.
func (r *controllers) Workers() int { return len(r.workers) }

// Setup creates the ServiceAccount and the Pods, and primes every
// controller's cache with the created Pods as an informer would.
func (r *controllers) Setup(ctx context.Context) error {
	env := r.env
	if err := k8s.EnsureDefaultServiceAccount(ctx, env.Admin, env.Namespace); err != nil {
		return err
	}
	pods := env.Admin.CoreV1().Pods(env.Namespace)
	created := make(map[string]*corev1.Pod, len(r.objects))
	var mu sync.Mutex
	names := make([]string, len(r.objects))
	for i, o := range r.objects {
		names[i] = o.name
	}
	labels := k8s.Labels(env.RunID)
	labels[LabelScenario] = Name
	err := k8s.CreateAll(ctx, "Pods", names, func(ctx context.Context, name string) error {
		pod, err := pods.Create(ctx, k8s.Pod(name, labels, corev1.Container{Name: "main"}), metav1.CreateOptions{FieldManager: k8s.SetupManager})
		if err != nil {
			return fmt.Errorf("creating Pod %s/%s: %w", env.Namespace, name, err)
		}
		mu.Lock()
		created[name] = pod
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	for _, views := range r.views {
		for _, v := range views {
			v.cached = created[v.obj.name].DeepCopy()
		}
	}
	r.measures = env.Measurers(r.Workers(), nil)
	if env.Spec.Read == spec.ReadInformer {
		selector := k8s.LabelRunID + "=" + env.RunID
		r.informers, err = reads.StartInformers(ctx, len(env.Clients), func(i int) cache.ListerWatcher {
			return cache.NewFilteredListWatchFromClient(env.Clients[i].CoreV1().RESTClient(), "pods", env.Namespace,
				func(o *metav1.ListOptions) { o.LabelSelector = selector })
		}, &corev1.Pod{}, nil)
	}
	return err
}

// Do reconciles worker w's next Pod: one operation, with the reads and
// write attempts its strategy makes.
func (r *controllers) Do(w int, intended time.Time) {
	wk := r.workers[w]
	v := wk.views[wk.next]
	wk.next = (wk.next + 1) % len(wk.views)
	r.measures[w].Measure(intended, func(o *scenario.Op) error { return r.attempt(o, wk.c, v) })
}

// attempt makes one write of controller c's condition on v's Pod, reading
// the Pod first when the controller's view of it is stale.
func (r *controllers) attempt(o *scenario.Op, c int, v *view) error {
	pods := r.env.Client(c).CoreV1().Pods(r.env.Namespace)
	acks := &r.acks[v.obj.i]
	if v.cached == nil && r.strategy.NeedsRead() {
		latest := acks.Latest() // before the read: what it ought to see
		var pod *corev1.Pod
		if err := o.Read(func(ctx context.Context) (err error) {
			pod, err = r.read(ctx, pods, c, v.obj.name)
			return err
		}); err != nil {
			return err
		}
		v.cached, v.latest = pod, latest
	}
	v.seq++
	var pod *corev1.Pod
	out, err := o.Write(func(ctx context.Context) (err error) {
		pod, err = r.write(ctx, pods, c, v)
		return err
	})
	if o.Measured() {
		r.count(v.obj.shared, out)
		if out == metrics.VersionConflict {
			r.causes.Conflict(acks, v.latest, v.cached.ResourceVersion)
		}
	}
	switch {
	case err == nil:
		acks.Add(reads.ParseRV(pod.ResourceVersion), time.Time{}, false)
		v.cached, v.latest, v.lastOK, v.unsure = pod, 0, v.seq, nil
	case k8s.MayHaveLanded(out, err):
		v.unsure = append(v.unsure, v.seq)
		v.cached = nil
	case out != metrics.Throttled:
		// Stale (a 409) or refused: read it again, as a requeue would.
		v.cached = nil
	}
	return err
}

// read reads Pod name where controller c reads: a GET at r.rv or its
// client's informer's store (whose Pod the writes copy before changing).
func (r *controllers) read(ctx context.Context, pods corev1client.PodInterface, c int, name string) (*corev1.Pod, error) {
	if r.informers == nil {
		return pods.Get(ctx, name, metav1.GetOptions{ResourceVersion: r.rv})
	}
	obj, ok, err := r.informers.Store(c).GetByKey(r.env.Namespace + "/" + name)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return obj.(*corev1.Pod), nil
}

// count adds a measured write attempt to the owned or shared tally.
func (r *controllers) count(shared bool, out metrics.Outcome) {
	writes, conflicts := &r.tally.ownedWrites, &r.tally.ownedConflicts
	if shared {
		writes, conflicts = &r.tally.sharedWrites, &r.tally.sharedConflicts
	}
	writes.Add(1)
	if out == metrics.VersionConflict || out == metrics.FieldManagerConflict {
		conflicts.Add(1)
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
	i := conditionIndex(&pod.Status, conditionType(c))
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(pod.Status.Conditions[i].Message, "write "), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

var _ scenario.Live = (*controllers)(nil)

// Live is the 409s by cause so far, for the live metrics.
func (r *controllers) Live() []results.Figure { return r.causes.Figures() }
