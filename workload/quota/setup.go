package quota

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
)

// controllerWait is how long Setup waits for a quota controller to fill the
// status on a target that may run one (kind, a kubeconfig cluster).
const controllerWait = 10 * time.Second

// step bounds one set-up or read-back request by the operation timeout.
func (r *quota) step(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.env.Spec.OpTimeout.Duration)
}

// Setup creates the ResourceQuota (and, for Pods, the default
// ServiceAccount that Pod admission needs) and makes sure the quota is
// being enforced before any writer starts.
func (r *quota) Setup(ctx context.Context) error {
	env := r.env
	ns := env.Namespace
	r.measures = env.Measurers(r.Workers(), classify)
	if r.set.Resource == ResourceGPU {
		sctx, cancel := r.step(ctx)
		err := k8s.EnsureDefaultServiceAccount(sctx, env.Admin, ns)
		cancel()
		if err != nil {
			return fmt.Errorf("quota: %w", err)
		}
	}

	name := corev1.ResourceName(r.set.Resource)
	sctx, cancel := r.step(ctx)
	rq, err := env.Admin.CoreV1().ResourceQuotas(ns).Create(sctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Labels: k8s.Labels(env.RunID)},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{name: *resource.NewQuantity(r.set.Hard, resource.DecimalSI)}},
	}, metav1.CreateOptions{FieldManager: k8s.SetupManager})
	cancel()
	if err != nil {
		return fmt.Errorf("quota: creating ResourceQuota %s/%s: %w%s", ns, QuotaName, err, k8s.Why(err, "create ResourceQuotas", env.Spec.OpTimeout.Duration))
	}

	// On a target with a kube-controller-manager its quota controller fills
	// the status; give it a moment. The local control plane has none
	// unless it was started with --controller-manager.
	if env.Spec.Target.Kind != spec.TargetLocal || env.Spec.Target.ControllerManager {
		if filled, err := r.waitForController(ctx, name); err != nil {
			return err
		} else if filled != nil {
			r.report.InitialUsed = usedOf(filled, name)
			return nil
		}
	}

	uctx, ucancel := r.step(ctx)
	used, err := r.kind.usage(uctx, env.Admin, ns)
	ucancel()
	if err != nil {
		return fmt.Errorf("quota: counting the %s already in %s: %w", r.kind.plural, ns, err)
	}
	r.report.InitialUsed = used
	if err := r.initialiseStatus(ctx, rq, name, used); err != nil {
		return err
	}
	r.report.StatusInitialized = true
	env.Warn("quota: no quota controller fills ResourceQuota status on this target (no kube-controller-manager), and until it is filled the quota constrains nothing; kb-bench set status.hard=%d and status.used=%d itself, as the controller's first sync would",
		r.set.Hard, used)
	return nil
}

// waitForController polls the quota until its status names the resource,
// for up to controllerWait. It returns nil when no controller filled it.
func (r *quota) waitForController(ctx context.Context, name corev1.ResourceName) (*corev1.ResourceQuota, error) {
	deadline := time.Now().Add(controllerWait)
	for time.Now().Before(deadline) {
		sctx, cancel := r.step(ctx)
		rq, err := r.env.Admin.CoreV1().ResourceQuotas(r.env.Namespace).Get(sctx, QuotaName, metav1.GetOptions{})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("quota: reading ResourceQuota %s back: %w", QuotaName, err)
		}
		if _, ok := rq.Status.Hard[name]; ok {
			return rq, nil
		}
		if !k8s.Sleep(ctx, 100*time.Millisecond) {
			return nil, fmt.Errorf("quota: waiting for a quota controller to fill ResourceQuota %s: %w", QuotaName, ctx.Err())
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
func (r *quota) initialiseStatus(ctx context.Context, rq *corev1.ResourceQuota, name corev1.ResourceName, used int64) error {
	hard := r.set.Hard
	setStatus := func(used int64) error {
		rq.Status.Hard = corev1.ResourceList{name: *resource.NewQuantity(hard, resource.DecimalSI)}
		rq.Status.Used = corev1.ResourceList{name: *resource.NewQuantity(used, resource.DecimalSI)}
		sctx, cancel := r.step(ctx)
		defer cancel()
		updated, err := r.env.Admin.CoreV1().ResourceQuotas(r.env.Namespace).UpdateStatus(sctx, rq, metav1.UpdateOptions{FieldManager: k8s.SetupManager})
		if err != nil {
			return fmt.Errorf("quota: initialising the status of ResourceQuota %s: %w%s", QuotaName, err, k8s.Why(err, "update resourcequotas/status", r.env.Spec.OpTimeout.Duration))
		}
		*rq = *updated
		return nil
	}
	if err := setStatus(hard); err != nil {
		return err
	}
	if err := r.probeUntil(ctx, "refused", isQuotaRejection); err != nil {
		return err
	}
	if err := setStatus(used); err != nil {
		return err
	}
	if used >= hard {
		return nil // full from the start: nothing would be admitted anyway
	}
	return r.probeUntil(ctx, "admitted", func(err error) bool { return err == nil })
}

// probeUntil dry-runs a create until done(err) says admission answered as
// expected, for up to the operation timeout.
func (r *quota) probeUntil(ctx context.Context, want string, done func(error) bool) error {
	timeout := r.env.Spec.OpTimeout.Duration
	deadline := time.Now().Add(timeout)
	for {
		sctx, cancel := r.step(ctx)
		err := r.kind.create(sctx, r.env.Admin, r.env.Namespace, "kb-bench-quota-probe", 0, true)
		cancel()
		if done(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("quota: after initialising its status, ResourceQuota %s was not enforced within %s (a dry-run create was not %s; last answer: %v): the apiserver's quota admission may be disabled",
				QuotaName, timeout, want, err)
		}
		if !k8s.Sleep(ctx, 10*time.Millisecond) {
			return fmt.Errorf("quota: waiting for ResourceQuota %s to be enforced: %w", QuotaName, ctx.Err())
		}
	}
}

// usedOf is what rq's status says is used of name.
func usedOf(rq *corev1.ResourceQuota, name corev1.ResourceName) int64 {
	q := rq.Status.Used[name] // zero when absent
	return q.Value()
}
