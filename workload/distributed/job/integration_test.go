package job_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
)

// local is the real kube-apiserver and etcd the package's integration tests
// share.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

// warnings collects the warnings the apiserver sends back.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// take returns the warnings so far and forgets them.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// restricted is a client of the local control plane that collects the
// apiserver's warnings, and a new namespace of it that enforces (and
// warns about) the restricted Pod Security Standard.
func restricted(t *testing.T) (kubernetes.Interface, *warnings, context.Context, *corev1.Namespace) {
	t.Helper()
	cfg := rest.CopyConfig(local.Config(t))
	warn := &warnings{}
	cfg.WarningHandlerWithContext = warn
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx := await.Context(t)
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "job-dry-run-",
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return kube, warn, ctx, ns
}

// TestDryRunAccepted has the real apiserver validate every object, through
// admission, with a server-side dry run, in a namespace that enforces (and
// warns about) the restricted Pod Security Standard.
func TestDryRunAccepted(t *testing.T) {
	kube, warn, ctx, ns := restricted(t)
	o := options()
	o.Namespace = ns.Name
	o.Shards = 5
	o.AntiAffinity = true
	o.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	o.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	o.ActiveDeadline = 5 * time.Minute
	objs, err := job.Build(o)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := kube.CoreV1().ServiceAccounts(ns.Name).Create(ctx, objs.ServiceAccount, dryRun); err != nil {
		t.Errorf("ServiceAccount refused: %v", err)
	}
	if _, err := kube.RbacV1().Roles(ns.Name).Create(ctx, objs.Role, dryRun); err != nil {
		t.Errorf("Role refused: %v", err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns.Name).Create(ctx, objs.RoleBinding, dryRun); err != nil {
		t.Errorf("RoleBinding refused: %v", err)
	}
	got, err := kube.BatchV1().Jobs(ns.Name).Create(ctx, objs.Job, dryRun)
	if err != nil {
		t.Fatalf("Job refused: %v", err)
	}
	if w := warn.take(); len(w) > 0 {
		t.Errorf("the apiserver warned about the Job (restricted Pod Security?): %q", w)
	}
	// The server defaulted it (a selector and the job-name labels), so it
	// went through the apiserver, and did not store it.
	if got.Spec.Selector == nil || got.Spec.Template.Labels[batchv1.JobNameLabel] != o.Name {
		t.Errorf("the dry-run Job came back without the server's selector and labels: selector %v, labels %v", got.Spec.Selector, got.Spec.Template.Labels)
	}
	if _, err := kube.BatchV1().Jobs(ns.Name).Get(ctx, o.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after a dry run: %v, want NotFound", err)
	}

	// A shard pod as the Job controller would make it passes the
	// restricted policy's enforcement (pods are enforced, Jobs only warned
	// about). Its ServiceAccount has to exist for admission.
	if _, err := kube.CoreV1().ServiceAccounts(ns.Name).Create(ctx, objs.ServiceAccount, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name + "-0", Namespace: ns.Name, Labels: objs.Job.Spec.Template.Labels},
		Spec:       *objs.Job.Spec.Template.Spec.DeepCopy(),
	}
	if _, err := kube.CoreV1().Pods(ns.Name).Create(ctx, pod, dryRun); err != nil {
		t.Errorf("a shard pod is refused: %v", err)
	}
	if w := warn.take(); len(w) > 0 {
		t.Errorf("the apiserver warned about a shard pod: %q", w)
	}

	// The Job of a runner cluster (--runner-kubeconfig): no service
	// account of its own, the target's kubeconfig from a Secret.
	o.TargetNamespace, o.TargetSecret = "kb-bench-elsewhere", o.Name+"-target"
	if objs, err = job.Build(o); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.BatchV1().Jobs(ns.Name).Create(ctx, objs.Job, dryRun); err != nil {
		t.Errorf("a runner cluster's Job refused: %v", err)
	}
	// Its pods run as the namespace's default service account, which a
	// real cluster's controller makes (this control plane has none).
	def := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := kube.CoreV1().ServiceAccounts(ns.Name).Create(ctx, def, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Spec = *objs.Job.Spec.Template.Spec.DeepCopy()
	if _, err := kube.CoreV1().Pods(ns.Name).Create(ctx, pod, dryRun); err != nil {
		t.Errorf("a runner cluster's shard pod is refused: %v", err)
	}
	if w := warn.take(); len(w) > 0 {
		t.Errorf("the apiserver warned about a runner cluster's Job or pod: %q", w)
	}
}

// TestDryRunRefused shows the dry runs above are real: the same apiserver
// refuses broken variants of the objects.
func TestDryRunRefused(t *testing.T) {
	kube, warn, ctx, ns := restricted(t)
	o := options()
	o.Namespace = ns.Name
	build := func(t *testing.T) job.Objects {
		objs, err := job.Build(o)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	for _, tc := range []struct {
		name   string
		mutate func(*batchv1.Job)
		want   string
	}{
		{"unknown completion mode", func(j *batchv1.Job) {
			mode := batchv1.CompletionMode("Sometimes")
			j.Spec.CompletionMode = &mode
		}, "spec.completionMode"},
		{"indexed without completions", func(j *batchv1.Job) { j.Spec.Completions = nil }, "spec.completions"},
		{"parallelism below zero", func(j *batchv1.Job) { j.Spec.Parallelism = new(int32(-1)) }, "spec.parallelism"},
		{"restart policy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }, "restartPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := build(t).Job
			tc.mutate(j)
			_, err := kube.BatchV1().Jobs(ns.Name).Create(ctx, j, dryRun)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want Invalid naming %s", err, tc.want)
			}
		})
	}
	t.Run("role binding to no role", func(t *testing.T) {
		rb := build(t).RoleBinding
		rb.RoleRef.Kind = "Deployment"
		_, err := kube.RbacV1().RoleBindings(ns.Name).Create(ctx, rb, dryRun)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "roleRef.kind") {
			t.Errorf("got %v, want Invalid naming roleRef.kind", err)
		}
	})
	t.Run("privilege escalation", func(t *testing.T) {
		// Without its security context the Job is admitted with a warning,
		// which TestDryRunAccepted checks there is none of.
		j := build(t).Job
		j.Spec.Template.Spec.Containers[0].SecurityContext = nil
		warn.take()
		if _, err := kube.BatchV1().Jobs(ns.Name).Create(ctx, j, dryRun); err != nil {
			t.Fatal(err)
		}
		w := strings.Join(warn.take(), "\n")
		if !strings.Contains(w, "restricted") || !strings.Contains(w, "allowPrivilegeEscalation") {
			t.Errorf("no restricted Pod Security warning naming allowPrivilegeEscalation: %q", w)
		}
	})
}
