package job_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/distributed"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
)

// A distributed run whose shard pods never start (this control plane runs
// no Job controller, so the Job makes no pod) fails when the shards' time
// to join runs out, says what the runner saw, and leaves nothing: not the
// Job, its rights, the Leases nor the namespace. The Job and its rights
// were created for real, so the apiserver accepted them.
func TestJobRunnerFailsCleanlyWhenShardsNeverJoin(t *testing.T) {
	cfg := local.Config(t)
	kube := kubernetes.NewForConfigOrDie(cfg)
	runID := "jobrunner-" + time.Now().Format("150405")
	s := spec.Spec{Writers: 4, Shards: 2, Runner: spec.RunnerJob, Duration: spec.D(time.Second)}
	r, errs := workload.Resolve(s)
	if len(errs) > 0 {
		t.Fatal(spec.Describe(errs))
	}
	_, err := workload.Run(t.Context(), r, workload.Options{
		Config: cfg, RunID: runID, Version: "test", FinalizeNamespace: true,
		Runner:       job.Runner{Kube: kube, Image: "kb-bench/kb-bench:test", Poll: 100 * time.Millisecond},
		ShardTimeout: 2 * time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "shards 0, 1 did not join the run in time") ||
		!strings.Contains(err.Error(), "0 of 2 shard pods created") {
		t.Fatalf("want the shards' join to time out, naming them and what the runner saw; got %v", err)
	}
	ctx := await.Context(t)
	ns := "kb-bench-" + runID
	if _, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s left behind", ns)
	}
	selector := metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + runID}
	jobs, _ := kube.BatchV1().Jobs("").List(ctx, selector)
	roles, _ := kube.RbacV1().Roles("").List(ctx, selector)
	bindings, _ := kube.RbacV1().RoleBindings("").List(ctx, selector)
	accounts, _ := kube.CoreV1().ServiceAccounts("").List(ctx, selector)
	leases, _ := kube.CoordinationV1().Leases("").List(ctx, selector)
	if n := len(jobs.Items) + len(roles.Items) + len(bindings.Items) + len(accounts.Items) + len(leases.Items); n > 0 {
		t.Errorf("left behind: %d jobs, %d roles, %d role bindings, %d service accounts, %d leases",
			len(jobs.Items), len(roles.Items), len(bindings.Items), len(accounts.Items), len(leases.Items))
	}
}

// On a runner cluster (--runner-kubeconfig; here the same control plane
// seen as a second cluster) the Job goes into a namespace of its own there,
// with a Secret whose kubeconfig reaches the target as the shards'
// ServiceAccount: it may do what the shards' Role allows in the run's
// namespace and nothing else. Stop removes both sides.
func TestRunnerClusterHandsTheShardsTheirRights(t *testing.T) {
	cfg := local.Config(t)
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	runID := "remote-" + time.Now().Format("150405")
	ns := "kb-bench-" + runID
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	r := job.Runner{Kube: kube, Image: "kb-bench/kb-bench:test",
		Remote: &job.Remote{Kube: kube, TargetServer: cfg.Host, TargetCA: cfg.CAData}}
	rules := []rbacv1.PolicyRule{k8s.Rule("coordination.k8s.io", []string{"leases"}, "get", "create", "update")}
	g, err := r.Start(ctx, distributed.ShardRun{RunID: runID, Namespace: ns, Shards: 2, Rules: rules, Deadline: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	runnerNS := "kb-bench-shards-" + runID
	secret, err := kube.CoreV1().Secrets(runnerNS).Get(ctx, job.ObjectName+"-target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shardCfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[job.TargetKubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	shard := kubernetes.NewForConfigOrDie(shardCfg)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	if _, err := shard.CoordinationV1().Leases(ns).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Errorf("the shards' kubeconfig cannot create a Lease in the run's namespace: %v", err)
	}
	if _, err := shard.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the shards' kubeconfig may list pods (%v): it must hold only the shards' rights", err)
	}
	j, err := kube.BatchV1().Jobs(runnerNS).Get(ctx, job.ObjectName, metav1.GetOptions{})
	if err != nil || j.Spec.Template.Spec.Containers[0].Args[2] != ns {
		t.Fatalf("the Job on the runner cluster: %v; want its shards to join the run in %s", err, ns)
	}
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := kube.CoreV1().Namespaces().Get(ctx, runnerNS, metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("the runner cluster's namespace %s is left", runnerNS)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, job.ObjectName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the shards' ServiceAccount is left on the target: %v", err)
	}
}

// The coordinator's rights (what kb-bench rbac prints for --runner job)
// let it delete the shard objects it makes, by name, and nothing else of
// the namespace's; it may request a token only for the shards'
// ServiceAccount, and only with a runner cluster. Checked by the real
// apiserver's RBAC, as the ServiceAccount bound to them.
func TestCoordinatorRulesAreScoped(t *testing.T) {
	admin := local.Config(t)
	kube := kubernetes.NewForConfigOrDie(admin)
	ctx := t.Context()
	for _, runner := range []job.Runner{{}, {Remote: &job.Remote{}}} {
		remote := runner.Remote != nil
		ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scoped-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
		as := boundTo(t, kube, admin, ns.Name, runner.Rules())
		for _, name := range []string{job.ObjectName, "bystander"} {
			if _, err := kube.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := kube.RbacV1().Roles(ns.Name).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		allowed := func(err error) bool { return err == nil }
		for _, c := range []struct {
			what string
			err  error
			want bool
		}{
			{"delete the bystander Role", as.RbacV1().Roles(ns.Name).Delete(ctx, "bystander", metav1.DeleteOptions{}), false},
			{"delete the bystander ServiceAccount", as.CoreV1().ServiceAccounts(ns.Name).Delete(ctx, "bystander", metav1.DeleteOptions{}), false},
			{"delete every Role", as.RbacV1().Roles(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}), false},
			{"delete every Job", as.BatchV1().Jobs(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}), false},
			{"request the bystander's token", tokenErr(ctx, as, ns.Name, "bystander"), false},
			{"request the shards' token", tokenErr(ctx, as, ns.Name, job.ObjectName), remote},
			{"delete the shards' Role", as.RbacV1().Roles(ns.Name).Delete(ctx, job.ObjectName, metav1.DeleteOptions{}), true},
			{"delete the shards' ServiceAccount", as.CoreV1().ServiceAccounts(ns.Name).Delete(ctx, job.ObjectName, metav1.DeleteOptions{}), true},
		} {
			if allowed(c.err) != c.want || c.err != nil && !apierrors.IsForbidden(c.err) {
				t.Errorf("remote %v: %s: %v, want allowed %v", remote, c.what, c.err, c.want)
			}
		}
	}
}

// boundTo is a client of the ServiceAccount "coordinator" of ns, bound to
// a Role of rules there.
func boundTo(t *testing.T, kube kubernetes.Interface, admin *rest.Config, ns string, rules []rbacv1.PolicyRule) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coordinator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "coordinator"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "coordinator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "coordinator"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "coordinator", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "coordinator", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tok.Status.Token
	return kubernetes.NewForConfigOrDie(cfg)
}

// tokenErr requests a token for ServiceAccount name of ns as kube.
func tokenErr(ctx context.Context, kube kubernetes.Interface, ns, name string) error {
	_, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	return err
}
