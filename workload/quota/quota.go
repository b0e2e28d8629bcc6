// Package quota is the quota scenario: writers create objects concurrently
// under a namespace ResourceQuota with a hard limit, so the apiserver's quota
// admission (a compare-and-swap on the quota's status) decides each create.
// kb-bench measures create latency, rejections and conflicts, and checks that
// no more than the limit was ever admitted and that status.used matches what
// exists.
package quota

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// QuotaName is the ResourceQuota the scenario creates in the run's namespace.
const QuotaName = "kb-bench-quota"

// The quota'd resources the scenario supports.
const (
	// ResourceConfigMaps counts ConfigMaps.
	ResourceConfigMaps = "count/configmaps"
	// ResourceGPU sums the nvidia.com/gpu requests of Pods; each Pod asks
	// for one. Without nodes the Pods stay Pending, which is fine here.
	ResourceGPU = "requests.nvidia.com/gpu"
)

// gpu is the extended resource each Pod requests.
const gpu corev1.ResourceName = "nvidia.com/gpu"

// Names of the checks the scenario adds to the Result.
const (
	CheckCreatesWithinHard  = "quota: successful creates within hard"
	CheckExistingWithinHard = "quota: objects existing at the end within hard"
	CheckUsedMatches        = "quota: status.used matches the objects that exist"
)

// controllerWait is how long Run waits for a quota controller to fill the
// status on a target that may run one (kind, a kubeconfig cluster).
const controllerWait = 10 * time.Second

// Run runs the quota scenario: it creates the ResourceQuota, makes sure its
// status is filled (initialising it itself when no controller does), then
// Spec.Writers writers create objects until the run ends, going on after the
// quota is full so that rejections are measured.
//
// Each create is one operation of one write attempt in env.Recorder. A quota
// rejection (403 "exceeded quota") is recorded as metrics.FailedPrecondition:
// like a failed JSON patch test, it is the server's compare-and-swap on the
// quota's status saying no, not an error. Conflicts (409) that reach the
// client and every other failure keep their own classes.
func Run(ctx context.Context, env scenario.Env) error {
	q := env.Spec.Quota
	if q == nil {
		return spec.Input(errors.New("the quota scenario needs its quota settings: run with --scenario quota so they are defaulted"))
	}
	kind, err := kindFor(q.Resource)
	if err != nil {
		return err
	}
	if len(env.Clients) == 0 {
		return errors.New("quota: the engine passed no clients (a bug in kb-bench: please report it)")
	}
	r := &run{env: env, kind: kind, hard: q.Hard, admin: env.Clients[0]}
	r.report = &results.QuotaReport{Resource: q.Resource, Hard: q.Hard, Writers: env.Spec.Writers}
	if env.Spec.Rate > 0 {
		r.warn("quota: the writers run a closed loop; rate %g is not used", env.Spec.Rate)
	}
	fmt.Fprintf(env.Log, "quota: %d writers creating %s under ResourceQuota %s/%s (%s hard %d)\n",
		env.Spec.Writers, kind.plural, env.Namespace, QuotaName, q.Resource, q.Hard)

	if err := r.setUp(ctx); err != nil {
		return err
	}
	r.write(ctx)
	return r.finish(ctx)
}

// objectKind is what the writers create for a quota'd resource.
type objectKind struct {
	plural string
	// create creates (or, with dryRun, admits only) the object called name.
	create func(ctx context.Context, c kubernetes.Interface, ns, name string, size int, dryRun bool) error
	// usage counts what the existing objects use of the resource.
	usage func(ctx context.Context, c kubernetes.Interface, ns string) (int64, error)
}

func kindFor(res string) (objectKind, error) {
	switch res {
	case ResourceConfigMaps:
		return objectKind{plural: "ConfigMaps", create: createConfigMap, usage: configMapUsage}, nil
	case ResourceGPU:
		return objectKind{plural: "Pods", create: createPod, usage: podUsage}, nil
	}
	return objectKind{}, spec.Input(fmt.Errorf("quota.resource %q is not supported: use %s or %s", res, ResourceConfigMaps, ResourceGPU))
}

func createOptions(dryRun bool) metav1.CreateOptions {
	if dryRun {
		return metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return metav1.CreateOptions{}
}

func createConfigMap(ctx context.Context, c kubernetes.Interface, ns, name string, size int, dryRun bool) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"by": "kb-bench"},
	}
	if size > 0 {
		cm.Data["filler"] = strings.Repeat("x", size)
	}
	_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, createOptions(dryRun))
	return err
}

func configMapUsage(ctx context.Context, c kubernetes.Interface, ns string) (int64, error) {
	list, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return int64(len(list.Items)), nil
}

func createPod(ctx context.Context, c kubernetes.Interface, ns, name string, _ int, dryRun bool) error {
	one := resource.MustParse("1")
	automount := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &automount,
			Containers: []corev1.Container{{
				Name:  "gpu",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{gpu: one},
					Limits:   corev1.ResourceList{gpu: one},
				},
			}},
		},
	}
	_, err := c.CoreV1().Pods(ns).Create(ctx, pod, createOptions(dryRun))
	return err
}

// podUsage sums the nvidia.com/gpu requests of the Pods that count against
// quota: those not yet Succeeded or Failed.
func podUsage(ctx context.Context, c kubernetes.Interface, ns string) (int64, error) {
	list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			if q, ok := ctr.Resources.Requests[gpu]; ok {
				n += q.Value()
			}
		}
	}
	return n, nil
}

// run is one execution of the scenario.
type run struct {
	env    scenario.Env
	kind   objectKind
	hard   int64
	admin  kubernetes.Interface
	report *results.QuotaReport

	start, measureFrom time.Time
	measured           atomic.Int64 // operations started in the measured window
	creates, admitted  atomic.Int64
	rejected           atomic.Int64
	conflicts, errs    atomic.Int64
	fullAt             atomic.Int64 // nanoseconds after start of the first rejection, 0 when none

	mu              sync.Mutex // guards the two histograms
	admittedLatency *hdrhistogram.Histogram
	rejectedLatency *hdrhistogram.Histogram
}

func (r *run) warn(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(r.env.Log, "warning: %s\n", msg)
	r.env.Result.Warnings = append(r.env.Result.Warnings, msg)
}

// step bounds one set-up or check request by the operation timeout.
func (r *run) step(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.env.Spec.OpTimeout.Duration)
}

// setUp creates the ResourceQuota (and, for Pods, the default
// ServiceAccount that ServiceAccount admission needs) and makes sure the
// quota is being enforced before any writer starts.
func (r *run) setUp(ctx context.Context) error {
	env := r.env
	ns := env.Namespace
	if r.kind.plural == "Pods" {
		sctx, cancel := r.step(ctx)
		_, err := r.admin.CoreV1().ServiceAccounts(ns).Create(sctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		cancel()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("quota: creating the default ServiceAccount in %s, which Pod admission needs: %w", ns, err)
		}
	}

	name := corev1.ResourceName(env.Spec.Quota.Resource)
	sctx, cancel := r.step(ctx)
	defer cancel()
	rq, err := r.admin.CoreV1().ResourceQuotas(ns).Create(sctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: QuotaName},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{name: *resource.NewQuantity(r.hard, resource.DecimalSI)}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("quota: creating ResourceQuota %s/%s: %w (check that kb-bench may create ResourceQuotas)", ns, QuotaName, err)
	}

	// On a target with a kube-controller-manager its quota controller fills
	// the status; give it a moment. The local control plane has none.
	if env.Spec.Target.Kind != spec.TargetLocal {
		if filled, err := r.waitForController(ctx, name); err != nil {
			return err
		} else if filled != nil {
			r.report.InitialUsed = usedOf(filled, name)
			return nil
		}
	}

	uctx, ucancel := r.step(ctx)
	defer ucancel()
	used, err := r.kind.usage(uctx, r.admin, ns)
	if err != nil {
		return fmt.Errorf("quota: counting the %s already in %s: %w", r.kind.plural, ns, err)
	}
	r.report.InitialUsed = used
	if err := r.initialiseStatus(ctx, rq, name, used); err != nil {
		return err
	}
	r.report.StatusInitialized = true
	r.warn("quota: no quota controller fills ResourceQuota status on this target (no kube-controller-manager), and until it is filled the quota constrains nothing; kb-bench set status.hard=%d and status.used=%d itself, as the controller's first sync would",
		r.hard, used)
	return nil
}

// waitForController polls the quota until its status names the resource,
// for up to controllerWait. It returns nil when no controller filled it.
func (r *run) waitForController(ctx context.Context, name corev1.ResourceName) (*corev1.ResourceQuota, error) {
	deadline := time.Now().Add(controllerWait)
	for time.Now().Before(deadline) {
		sctx, cancel := r.step(ctx)
		rq, err := r.admin.CoreV1().ResourceQuotas(r.env.Namespace).Get(sctx, QuotaName, metav1.GetOptions{})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("quota: reading ResourceQuota %s back: %w", QuotaName, err)
		}
		if _, ok := rq.Status.Hard[name]; ok {
			return rq, nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// initialiseStatus fills the quota's status and waits until admission
// enforces it. Quota admission reads quotas from the apiserver's informer
// cache, and a quota without status constrains nothing, so a writer that
// raced ahead of the cache could be admitted without being counted. The
// wait is a two-step handshake with dry-run creates, which go through
// admission without writing: first the status says the quota is full and
// a dry run must be refused, then it says the real usage and a dry run
// must be admitted, which only that last version of the status allows.
func (r *run) initialiseStatus(ctx context.Context, rq *corev1.ResourceQuota, name corev1.ResourceName, used int64) error {
	setStatus := func(used int64) error {
		rq.Status.Hard = corev1.ResourceList{name: *resource.NewQuantity(r.hard, resource.DecimalSI)}
		rq.Status.Used = corev1.ResourceList{name: *resource.NewQuantity(used, resource.DecimalSI)}
		sctx, cancel := r.step(ctx)
		defer cancel()
		updated, err := r.admin.CoreV1().ResourceQuotas(r.env.Namespace).UpdateStatus(sctx, rq, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("quota: initialising the status of ResourceQuota %s: %w (check that kb-bench may update resourcequotas/status)", QuotaName, err)
		}
		*rq = *updated
		return nil
	}
	if err := setStatus(r.hard); err != nil {
		return err
	}
	if err := r.probeUntil(ctx, "refused", isQuotaRejection); err != nil {
		return err
	}
	if err := setStatus(used); err != nil {
		return err
	}
	if used >= r.hard {
		return nil // full from the start: nothing would be admitted anyway
	}
	return r.probeUntil(ctx, "admitted", func(err error) bool { return err == nil })
}

// probeUntil dry-runs a create until done(err) says admission answered as
// expected, for up to the operation timeout.
func (r *run) probeUntil(ctx context.Context, want string, done func(error) bool) error {
	deadline := time.Now().Add(r.env.Spec.OpTimeout.Duration)
	var last error
	for {
		sctx, cancel := r.step(ctx)
		err := r.kind.create(sctx, r.admin, r.env.Namespace, "kb-bench-quota-probe", 0, true)
		cancel()
		if done(err) {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("quota: after initialising its status, ResourceQuota %s was not enforced within %s (a dry-run create was not %s; last answer: %v): the apiserver's quota admission may be disabled",
				QuotaName, r.env.Spec.OpTimeout, want, last)
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

// isQuotaRejection reports whether err is quota admission's 403.
func isQuotaRejection(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

func usedOf(rq *corev1.ResourceQuota, name corev1.ResourceName) int64 {
	q, ok := rq.Status.Used[name]
	if !ok {
		return 0
	}
	return q.Value()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
