package main

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/internal/await"
)

// A run on a custom resource killed with SIGKILL (no clean-up) leaves its
// CRD on the `kb-bench local up` control plane; the next run that
// installs it deletes it first, and leaves nothing behind either.
func TestKilledRunsCRDIsRemovedByTheNextRun(t *testing.T) {
	bin, env, state := localUp(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	crd := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	const name = "widgets.bench.kb-bench.io"

	cmd := exec.Command(bin, "run", "--profile", "custom-resource", "--duration", "1h", "--state-dir", state, "--out", t.TempDir())
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	progress := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for shown := false; sc.Scan(); {
			if !shown && strings.HasPrefix(sc.Text(), "[") {
				close(progress)
				shown = true
			}
		}
	}()
	await.Recv(t, "the run's measured window", progress)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := crd.Get(context.Background(), name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the killed run's CRD: %v, want it left behind (the test is moot otherwise)", err)
	}

	code, _, stderrText := kbBench(t, bin, env, "run", "--profile", "custom-resource", "--operations", "20", "--state-dir", state, "--out", t.TempDir())
	if code != 0 || !strings.Contains(stderrText, "deleting CustomResourceDefinition "+name) {
		t.Fatalf("the next run: exit %d, want 0 and a warning that it deleted the CRD left behind", code)
	}
	if _, err := crd.Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the CRD after the next run: %v, want it gone", err)
	}
}

// --manifest - reads stdin once: every cell of a matrix gets the same
// manifest (the second used to find stdin empty and refuse the run).
func TestStdinManifestServesEveryCell(t *testing.T) {
	bin, _ := binary(t)
	cmd := exec.Command(bin, "rbac", "--namespace", "team-a", "--manifest", "-", "--field-path", `.metadata.annotations["n"]`, "--writers", "1,2")
	cmd.Stdin = strings.NewReader("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\n  annotations:\n    n: \"0\"\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rbac for a matrix of 2 cells on a manifest from stdin: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "leases") {
		t.Errorf("the Role does not grant the manifest's kind (leases):\n%s", out)
	}
}
