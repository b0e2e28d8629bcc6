package workload

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/internal/k8s"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// The counter on the user's own objects (--manifest): a custom resource
// whose CRD comes with the manifest, installed for the run on the local
// control plane and removed after it.

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// widget is the test's manifest: a CRD with a status subresource, and
// one Widget. A status rule, when given, is a CEL rule on the status.
func widget(t *testing.T, statusRule string) string {
	t.Helper()
	b, err := os.ReadFile("counter/testdata/widget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if statusRule != "" {
		text = strings.Replace(text, "          status:\n            type: object\n",
			"          status:\n            type: object\n            x-kubernetes-validations:\n            - {rule: "+statusRule+"}\n", 1)
	}
	return text
}

// widgetSpec is a counter run on the Widget's .status.count.
func widgetSpec(manifest string, s spec.Spec) spec.Spec {
	s.Settings = map[string]any{"manifest": manifest, "fieldPath": ".status.count", "subresource": "status"}
	return s
}

// assertCRDGone checks the CRD the run installed is gone.
func assertCRDGone(t *testing.T, cfg *rest.Config) {
	t.Helper()
	_, err := dynamic.NewForConfigOrDie(cfg).Resource(crds).Get(context.Background(), "widgets.bench.kb-bench.io", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the CRD the run installed is still there (get: %v)", err)
	}
}

// assertCRDGoneSoon waits until the test's CRD is gone (a deleted CRD's
// objects are removed first).
func assertCRDGoneSoon(t *testing.T, cfg *rest.Config) {
	t.Helper()
	await.Until(t, "the CRD gone", func() error {
		_, err := dynamic.NewForConfigOrDie(cfg).Resource(crds).Get(context.Background(), "widgets.bench.kb-bench.io", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (get: %v)", err)
	})
}

// Every strategy on a custom resource's status subresource: the server's
// counts of the resource's own requests equal kb-bench's, and the
// strategies that promise it lose no update.
func TestCustomResourceEveryStrategy(t *testing.T) {
	cfg := local.Config(t)
	tests := []struct {
		name     string
		s        spec.Spec
		noneLost bool
		verb     string // the write's verb in the server's counts
	}{
		{"update", spec.Spec{Strategy: spec.StrategyUpdate}, true, "PUT"},
		{"retry", spec.Spec{Strategy: spec.StrategyRetry}, true, "PUT"},
		{"merge patch with a precondition", spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchMerge, PatchPrecondition: true}, true, "PATCH"},
		{"merge patch", spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchMerge}, false, "PATCH"},
		{"json patch test-and-replace", spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchJSON}, true, "PATCH"},
		{"server-side apply, forced", spec.Spec{Strategy: spec.StrategySSA, Force: true}, false, "APPLY"},
	}
	manifest := widget(t, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Writers, tt.s.Operations = 4, 200
			res := runOn(context.Background(), t, cfg, widgetSpec(manifest, tt.s))
			assertServerMatch(t, res)
			writes := int64(0)
			for _, r := range res.Server.Requests {
				if r.Resource == "widgets.bench.kb-bench.io/status" && r.Verb == tt.verb {
					writes += r.Server
				}
			}
			if writes == 0 {
				t.Errorf("the apiserver counted no %s of widgets/status: %+v", tt.verb, res.Server.Requests)
			}
			if tt.noneLost {
				assertNoLostUpdates(t, res)
			}
			// The schema takes every write: a JSON patch's failed test op
			// stays a failed precondition, never invalid.
			if n := count(res.Measurements.WriteOutcomes, metrics.Invalid) + count(res.Measurements.WriteOutcomes, metrics.Other); n > 0 {
				t.Errorf("write outcomes %v, want no invalid or other write", res.Measurements.WriteOutcomes)
			}
			assertCRDGone(t, cfg)
		})
	}
}

// A CEL rule that refuses writes: its 422s are their own class, counted
// by the server too, and the run is not failed by them.
func TestCELRuleRejectionsAreInvalid(t *testing.T) {
	cfg := local.Config(t)
	// The count can never reach 4: from 3 on, every write is refused.
	manifest := widget(t, `"!has(self.count) || self.count != 4"`)
	res := runOn(context.Background(), t, cfg, widgetSpec(manifest, spec.Spec{Writers: 2, Operations: 40, Strategy: spec.StrategyUpdate}))
	invalid := count(res.Measurements.WriteOutcomes, metrics.Invalid)
	if invalid == 0 || count(res.Measurements.WriteOutcomes, metrics.Other) != 0 {
		t.Fatalf("write outcomes %v, want the rule's refusals as invalid and none as other", res.Measurements.WriteOutcomes)
	}
	assertServerMatch(t, res)
	var refused int64
	for _, r := range res.Server.Requests {
		if r.Code == "422" {
			refused += r.Server
		}
	}
	if refused != invalid {
		t.Errorf("the apiserver answered %d 422s, kb-bench counted %d invalid writes", refused, invalid)
	}
	assertNoLostUpdates(t, res)
	assertCRDGone(t, cfg)
}

// Ctrl-C: the CRD the run installed goes too.
func TestInterruptedCustomResourceRunRemovesItsCRD(t *testing.T) {
	cfg := local.Config(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := runWith(ctx, t, widgetSpec(widget(t, ""), spec.Spec{Writers: 2, Duration: spec.D(time.Hour)}),
		Options{Config: cfg, Progress: func(time.Duration, metrics.SeriesPoint) { cancel() }})
	if !res.Interrupted {
		t.Errorf("result not marked interrupted")
	}
	assertCRDGone(t, cfg)
	assertNamespaceGone(t, cfg, res.Namespace)
}

// Bad input the target reveals (a kind it does not serve, a subresource
// the kind lacks) is refused before anything is created.
func TestObjectTheTargetRefuses(t *testing.T) {
	cfg := local.Config(t)
	tests := []struct {
		name string
		set  map[string]any
		want string
	}{
		{"a kind not served", map[string]any{"manifest": "apiVersion: nothing.example/v1\nkind: Gizmo\nmetadata: {name: g}\nspec: {count: 0}\n", "fieldPath": ".spec.count"},
			"does not serve Gizmo"},
		{"a CRD not installed on a cluster kb-bench does not own", map[string]any{"manifest": widget(t, ""), "fieldPath": ".status.count", "subresource": "status"},
			"pass --install-crd"},
		{"no status subresource", map[string]any{"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nstatus: {count: 0}\n", "fieldPath": ".status.count", "subresource": "status"},
			"no status subresource"},
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec.Spec{Writers: 1, Operations: 1, Settings: tt.set}
			if strings.Contains(tt.name, "not installed") {
				s.Target = spec.Target{Kind: spec.TargetKubeconfig, Kubeconfig: "unread"} // Options.Config is the target
			}
			id := runID()
			_, err := Run(context.Background(), resolved(t, s), Options{Config: cfg, RunID: id, Log: logWriter{t}, FinalizeNamespace: true})
			if err == nil || !spec.IsInput(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run: %v, want bad input saying %q", err, tt.want)
			}
			if _, err := kube.CoreV1().Namespaces().Get(context.Background(), "kb-bench-"+id, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the run made its namespace before refusing (get: %v)", err)
			}
			_, err = dynamic.NewForConfigOrDie(cfg).Resource(crds).Get(context.Background(), "widgets.bench.kb-bench.io", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("a CRD was installed (get: %v)", err)
			}
		})
	}
}

// On a cluster kb-bench does not own, a run on a custom resource whose
// CRD is already served needs exactly the Role `kb-bench rbac` prints:
// the resource and its status subresource, nothing cluster-wide; and it
// leaves the CRD alone.
func TestLeastPrivilegeOnACustomResource(t *testing.T) {
	admin := local.Config(t)
	manifest := widget(t, "")
	var crd map[string]any
	if err := yaml.Unmarshal([]byte(strings.SplitN(manifest, "---\n", 2)[0]), &crd); err != nil {
		t.Fatal(err)
	}
	crdClient := dynamic.NewForConfigOrDie(admin).Resource(crds)
	if _, err := crdClient.Create(context.Background(), &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = crdClient.Delete(context.Background(), "widgets.bench.kb-bench.io", metav1.DeleteOptions{})
		assertCRDGoneSoon(t, admin)
	})
	ns := "lp-" + runID()
	s := widgetSpec(manifest, spec.Spec{Namespace: ns, Writers: 2, Operations: 40, Strategy: spec.StrategyUpdate, Target: spec.Target{Kind: spec.TargetKubeconfig, Kubeconfig: "unread"}})
	rules, err := Rules(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var granted []string
	for _, r := range rules {
		granted = append(granted, strings.Join(r.APIGroups, ",")+"/"+strings.Join(r.Resources, ",")+":"+strings.Join(r.Verbs, ","))
	}
	want := "bench.kb-bench.io/widgets:get,list,create,update,patch bench.kb-bench.io/widgets/status:update,patch bench.kb-bench.io/widgets:deletecollection"
	if got := strings.Join(granted, " "); got != want {
		t.Errorf("rules %s, want %s", got, want)
	}
	sa := leastPrivilege(t, admin, ns, rules)
	// The CRD may take a moment to be served: wait for the event.
	await.Until(t, "the CRD served", func() error {
		_, err := dynamic.NewForConfigOrDie(admin).Resource(schema.GroupVersionResource{Group: "bench.kb-bench.io", Version: "v1", Resource: "widgets"}).
			Namespace(ns).List(context.Background(), metav1.ListOptions{})
		return err
	})
	res := runOn(context.Background(), t, sa, s)
	if res.Summary.Successes == 0 {
		t.Fatalf("no successful write")
	}
	assertNoLostUpdates(t, res)
	if _, err := crdClient.Get(context.Background(), "widgets.bench.kb-bench.io", metav1.GetOptions{}); err != nil {
		t.Errorf("the CRD the run did not install is gone: %v", err)
	}
	left, err := dynamic.NewForConfigOrDie(admin).Resource(schema.GroupVersionResource{Group: "bench.kb-bench.io", Version: "v1", Resource: "widgets"}).
		Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(left.Items) != 0 {
		t.Errorf("the run's widgets are left: %v (err %v)", left, err)
	}
}

// A ServiceAccount with only what `kb-bench rbac --install-crd` prints
// (the Role, and the ClusterRole for the CRD) installs the manifest's
// CRD, runs on it and removes it; without the ClusterRole the run is
// refused before anything is created, naming the cluster-wide right.
func TestLeastPrivilegeInstallingACRD(t *testing.T) {
	admin := local.Config(t)
	ns := "lp-" + runID()
	s := widgetSpec(widget(t, ""), spec.Spec{Namespace: ns, Writers: 2, Operations: 40, Strategy: spec.StrategyUpdate, Target: spec.Target{Kind: spec.TargetKubeconfig, Kubeconfig: "unread"}})
	s.Settings["installCRD"] = true
	rules, err := Rules(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := ClusterRules(s)
	if err != nil {
		t.Fatal(err)
	}
	var granted []string
	for _, r := range cluster {
		granted = append(granted, strings.Join(r.Resources, ",")+"."+strings.Join(r.APIGroups, ",")+strings.Join(r.ResourceNames, ",")+":"+strings.Join(r.Verbs, ","))
	}
	want := "customresourcedefinitions.apiextensions.k8s.io:create customresourcedefinitions.apiextensions.k8s.iowidgets.bench.kb-bench.io:get,delete"
	if got := strings.Join(granted, " "); got != want {
		t.Errorf("cluster rules %s, want %s", got, want)
	}
	sa := leastPrivilege(t, admin, ns, rules)
	_, err = Run(context.Background(), resolved(t, s), Options{Config: sa, RunID: runID(), Version: "test", Log: logWriter{t}})
	if !spec.IsInput(err) || !strings.Contains(err.Error(), "create customresourcedefinitions.apiextensions.k8s.io (cluster-wide)") {
		t.Fatalf("no right to install the CRD: %v, want bad input naming it", err)
	}
	if _, err := dynamic.NewForConfigOrDie(admin).Resource(crds).Get(context.Background(), "widgets.bench.kb-bench.io", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused run installed the CRD (get: %v)", err)
	}
	kube := kubernetes.NewForConfigOrDie(admin)
	role, binding := k8s.ClusterRole("kb-bench-"+ns, cluster), k8s.ClusterRoleBinding("kb-bench-"+ns, "kb-bench-"+ns, rbacv1.Subject{Kind: "ServiceAccount", Name: "bench", Namespace: ns})
	if _, err := kube.RbacV1().ClusterRoles().Create(context.Background(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	t.Cleanup(func() { assertCRDGoneSoon(t, admin) })
	// RBAC takes a moment to see the new binding: wait for the event.
	await.Until(t, "the ClusterRole bound", func() error {
		return checkPermissions(context.Background(), kubernetes.NewForConfigOrDie(sa), ns, nil, cluster)
	})
	res := runOn(context.Background(), t, sa, s)
	if res.Summary.Successes == 0 {
		t.Fatalf("no successful write")
	}
	assertNoLostUpdates(t, res)
	assertCRDGone(t, admin)
}

// A run killed before it could clean up (kill -9) leaves its CRD
// labelled with its run id: the next run that installs it deletes it
// first, says so, and leaves nothing either.
func TestLeftCRDIsCleanedByTheNextRun(t *testing.T) {
	cfg := local.Config(t)
	manifest := widget(t, "")
	var crd map[string]any
	if err := yaml.Unmarshal([]byte(strings.SplitN(manifest, "---\n", 2)[0]), &crd); err != nil {
		t.Fatal(err)
	}
	left := &unstructured.Unstructured{Object: crd}
	left.SetLabels(k8s.Labels("killed-run"))
	crdClient := dynamic.NewForConfigOrDie(cfg).Resource(crds)
	if _, err := crdClient.Create(context.Background(), left, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := runOn(context.Background(), t, cfg, widgetSpec(manifest, spec.Spec{Writers: 2, Operations: 20, Strategy: spec.StrategyUpdate}))
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "killed-run") }) {
		t.Errorf("warnings %q, want one naming the run that left the CRD", res.Warnings)
	}
	assertNoLostUpdates(t, res)
	assertCRDGone(t, cfg)
}
