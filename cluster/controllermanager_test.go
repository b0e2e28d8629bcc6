package cluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/spec"
)

// With --controller-manager the real controllers do what kb-bench otherwise
// does by hand: a deleted namespace goes away with what it held (the
// namespace controller), a ResourceQuota's status is filled (the quota
// controller), a new namespace gets its default ServiceAccount. Stop ends
// the controller manager too.
func TestControllerManagerRunsTheRealControllers(t *testing.T) {
	b := binariesOrSkip(t)
	if b.ControllerManager == "" {
		t.Fatalf("no kube-controller-manager in %s: run kb-bench local install --controller-manager", b.Dir)
	}
	ctx := context.Background()
	cp, err := StartLocal(ctx, LocalOptions{Binaries: b, Storage: spec.StorageDisk, Log: testLog{t}, ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop(context.Background()) })
	cs := clientset(t, cp.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hard := corev1.ResourceList{"count/configmaps": resource.MustParse("5")}
	if _, err := cs.CoreV1().ResourceQuotas(ns.Name).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Events, not sleeps: poll until each controller has acted; a broken
	// controller fails the test near its deadline instead of hanging.
	poll := func(what string, done func() (bool, error)) {
		t.Helper()
		await.Until(t, what, func() error {
			if ok, err := done(); ok || err != nil {
				return err
			}
			return errors.New("not yet")
		})
	}
	poll("the quota controller fills status.hard", func() (bool, error) {
		q, err := cs.CoreV1().ResourceQuotas(ns.Name).Get(ctx, "q", metav1.GetOptions{})
		return err == nil && q.Status.Hard.Name("count/configmaps", resource.DecimalSI).Value() == 5, err
	})
	poll("the service account controller makes the default ServiceAccount", func() (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("the namespace controller removes the deleted namespace", func() (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	procs := append(procsOf(cp), ProcessState{PID: cp.kcm.Pid, StartTicks: cp.kcm.StartTicks})
	if err := cp.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the control plane's processes and dir to go", func() error { return stillThere(procs, []string{cp.st.Dir}) })
}

func TestControllerManagerMissingIsBadInput(t *testing.T) {
	b := binariesOrSkip(t)
	b.ControllerManager = ""
	_, err := StartLocal(context.Background(), LocalOptions{Binaries: b, ControllerManager: true})
	if !spec.IsInput(err) {
		t.Fatalf("no kube-controller-manager: %v, want bad input saying to run kb-bench local install --controller-manager", err)
	}
}

// The default install leaves kube-controller-manager out; a run that asks
// for it builds it into the cache first, and says so. A stand-in go
// command records the build and fails it, so no real build runs here.
func TestControllerManagerBuiltOnDemand(t *testing.T) {
	cache, home, bin := t.TempDir(), t.TempDir(), t.TempDir()
	dir := filepath.Join(cache, "control-plane", KubeVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	calls := filepath.Join(bin, "calls")
	goStub := "#!/bin/sh\necho \"$@\" >> " + calls + "\necho 'go: stand-in of the test' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(goStub), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var log bytes.Buffer
	_, err := Open(context.Background(), spec.Target{Kind: spec.TargetLocal, ControllerManager: true},
		Options{Log: &log, Getenv: envOf(map[string]string{"KB_BENCH_CACHE": cache, "HOME": home})})
	if err == nil || !strings.Contains(err.Error(), "building kube-controller-manager "+KubeVersion) {
		t.Fatalf("Open = %v, want the failed build of kube-controller-manager", err)
	}
	if !strings.Contains(log.String(), "--controller-manager needs kube-controller-manager "+KubeVersion+", which is not built yet: building it now") {
		t.Errorf("kb-bench does not say it builds it:\n%s", log.String())
	}
	got, _ := os.ReadFile(calls)
	if strings.Count(string(got), "build ") != 1 || !strings.Contains(string(got), "k8s.io/kubernetes/cmd/kube-controller-manager") {
		t.Errorf("go was called with:\n%s\nwant one build, of kube-controller-manager", got)
	}
}
