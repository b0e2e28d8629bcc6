package workload

import (
	"context"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
)

// leastPrivilege makes namespace ns with a bystander ConfigMap, and a
// ServiceAccount bound to a Role of rules there; it returns a config that
// authenticates as that ServiceAccount (a TokenRequest token), nothing more.
func leastPrivilege(t *testing.T, admin *rest.Config, ns string, rules []rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(admin)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
	t.Cleanup(func() { _ = deleteNamespace(ctx, kube, ns, []groupResource{{"", "configmaps"}}, true) })
	must(kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}}, metav1.CreateOptions{}))
	must(kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}))
	must(kube.RbacV1().Roles(ns).Create(ctx, k8s.Role(ns, "kb-bench", nil, rules), metav1.CreateOptions{}))
	must(kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kb-bench"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "kb-bench"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "bench", Namespace: ns}},
	}, metav1.CreateOptions{}))
	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "bench", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tok.Status.Token
	// The apiserver authorizes from its informers' copy of RBAC, which
	// may not hold the new Role yet: wait until it allows every rule
	// granted, or a check that a right is missing could be answered from
	// before the Role (TestPermissionsByName failed so under load).
	await.Until(t, "the apiserver to authorize the Role in "+ns, func() error {
		return checkPermissions(ctx, kubernetes.NewForConfigOrDie(cfg), ns, rules, nil)
	})
	return cfg
}

// A ServiceAccount with only the Role kb-bench rbac prints runs the counter
// in an existing namespace: the run touches nothing but its own labelled
// objects, deletes them, and leaves the namespace and a bystander object.
func TestLeastPrivilegeInAnExistingNamespace(t *testing.T) {
	admin := local.Config(t)
	ns := "lp-" + runID()
	s := spec.Spec{Namespace: ns, Writers: 2, Operations: 40}
	rules, err := Rules(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	sa := leastPrivilege(t, admin, ns, rules)
	// Without --namespace it would need to create one: bad input, saying so.
	if _, err := Run(context.Background(), resolved(t, spec.Spec{Writers: 2, Operations: 10}), Options{Config: sa, RunID: runID(), Version: "test"}); !spec.IsInput(err) || !strings.Contains(err.Error(), "--namespace") {
		t.Errorf("no permission to create a namespace: %v, want bad input pointing at --namespace", err)
	}
	res := runOn(context.Background(), t, sa, s)
	if res.Namespace != ns || res.Summary.Successes == 0 {
		t.Fatalf("ran in %s with %d successes", res.Namespace, res.Summary.Successes)
	}
	assertNoLostUpdates(t, res)
	kube := kubernetes.NewForConfigOrDie(admin)
	if _, err := kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the existing namespace: %v", err)
	}
	cms, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, cm := range cms.Items {
		left = append(left, cm.Name)
	}
	if strings.Join(left, ",") != "bystander" {
		t.Errorf("the namespace holds %v after the run, want only the bystander", left)
	}
}

// Without update and patch the run refuses to start, names both missing
// permissions at once and points at kb-bench rbac; it creates nothing.
func TestMissingPermissionsAreListedBeforeAnything(t *testing.T) {
	admin := local.Config(t)
	ns := "lp-" + runID()
	s := spec.Spec{Namespace: ns, Writers: 2, Operations: 40}
	rules, err := Rules(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fewer []rbacv1.PolicyRule
	for _, r := range rules {
		r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "update" || v == "patch" })
		fewer = append(fewer, r)
	}
	_, err = Run(context.Background(), resolved(t, s), Options{Config: leastPrivilege(t, admin, ns, fewer), RunID: runID(), Version: "test"})
	if !spec.IsInput(err) || !strings.Contains(err.Error(), "update configmaps, patch configmaps") || !strings.Contains(err.Error(), "kb-bench rbac --namespace "+ns) {
		t.Fatalf("want bad input naming update and patch on configmaps and kb-bench rbac, got %v", err)
	}
	cms, err := kubernetes.NewForConfigOrDie(admin).CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: k8s.LabelManagedBy + "=kb-bench"})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if len(cms.Items) != 0 {
		t.Errorf("a refused run created %d objects", len(cms.Items))
	}
}

// --namespace naming a namespace that does not exist is bad input that
// says so, not a failed run that blames the credentials.
func TestMissingNamespaceIsBadInput(t *testing.T) {
	s := spec.Spec{Namespace: "kb-bench-absent-" + runID(), Writers: 2, Operations: 10}
	_, err := Run(context.Background(), resolved(t, s), Options{Config: local.Config(t), RunID: runID(), Version: "test"})
	if !spec.IsInput(err) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("want bad input saying the namespace does not exist, got %v", err)
	}
}

// A right limited to named objects (the Job runner's delete of its own
// shard objects) is checked for those names: held, it passes; held for
// another name only, it is missing, by name.
func TestPermissionsByName(t *testing.T) {
	admin := local.Config(t)
	named := func(name string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, ResourceNames: []string{name}, Verbs: []string{"delete"}}}
	}
	for _, tc := range []struct {
		held, want string
	}{{"kb-bench-shards", ""}, {"another", "delete roles.rbac.authorization.k8s.io kb-bench-shards"}} {
		ns := "lp-" + runID()
		sa := kubernetes.NewForConfigOrDie(leastPrivilege(t, admin, ns, named(tc.held)))
		err := checkPermissions(context.Background(), sa, ns, named("kb-bench-shards"), nil)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("holding delete of %s: %v, want %q", tc.held, err, tc.want)
		}
	}
}

// A run whose writers read from informers, or that opens watchers, needs
// watch on what its scenario lists; a run that only GETs does not ask for
// it (kb-bench rbac lists exactly what the run does).
func TestWatchIsAskedOnlyByRunsThatWatch(t *testing.T) {
	for _, tc := range []struct {
		s     spec.Spec
		watch bool
	}{
		{spec.Spec{Writers: 2}, false},
		{spec.Spec{Writers: 2, Read: spec.ReadCache}, false},
		{spec.Spec{Writers: 2, Read: spec.ReadInformer}, true},
		{spec.Spec{Writers: 2, Watchers: 3}, true},
	} {
		rules, err := Rules(tc.s, nil)
		if err != nil {
			t.Fatal(err)
		}
		var watches bool
		for _, r := range rules {
			if slices.Contains(r.Resources, "configmaps") && slices.Contains(r.Verbs, "watch") {
				watches = true
			}
		}
		if watches != tc.watch {
			t.Errorf("read %q, %d watchers: watch on configmaps %v, want %v (rules %v)", tc.s.Read, tc.s.Watchers, watches, tc.watch, rules)
		}
	}
}
