package job_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/results/resultstest"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
)

// The variables the kind tests read.
const (
	// nodeImageEnv names the kind node image to make the test's cluster
	// with (make test exports the offline image it builds).
	nodeImageEnv = "KB_BENCH_KIND_NODE_IMAGE"
	// clusterEnv names an existing kind cluster to run on instead,
	// which the test keeps (to iterate without a create each time).
	clusterEnv = "KB_BENCH_KIND_CLUSTER"
	// requireEnv makes a missing node image a failure (CI sets it: its
	// machines have Docker).
	requireEnv = "KB_BENCH_REQUIRE_DOCKER"
)

// kindBench is a real kind cluster with a node's real kubelet, and the
// static kb-bench that runs on it and in its shard pods.
type kindBench struct {
	bin     string   // kb-bench, built with CGO_ENABLED=0
	env     []string // kb-bench's environment: a state and temp dir of the test's
	name    string   // the kind cluster
	kube    kubernetes.Interface
	started time.Time
}

// needKind makes the test's kind cluster with `kb-bench kind up` (or takes
// the one clusterEnv names) and deletes it when the test ends; without a
// node image it skips, saying why (fails under requireEnv).
func needKind(t *testing.T) *kindBench {
	t.Helper()
	if testing.Short() {
		t.Skip("makes a kind cluster: skipped with -short")
	}
	image, existing := os.Getenv(nodeImageEnv), os.Getenv(clusterEnv)
	if image == "" && existing == "" {
		if os.Getenv(requireEnv) != "" {
			t.Fatalf("%s is set, but %s is not: make test builds the offline kind node image and exports it", requireEnv, nodeImageEnv)
		}
		t.Skipf("the Job's pods run on a real kind node, and %s names no node image to make one with (make test sets it; set %s=1 to fail instead)", nodeImageEnv, requireEnv)
	}
	tmp := t.TempDir()
	// The binary has a directory of its own: XDG_STATE_HOME=tmp puts
	// kb-bench's state in tmp/kb-bench.
	b := &kindBench{bin: buildStatic(t, filepath.Join(tmp, "bin")), env: append(os.Environ(), "TMPDIR="+tmp, "XDG_STATE_HOME="+tmp), name: existing}
	if b.name == "" {
		suffix := make([]byte, 3)
		_, _ = rand.Read(suffix)
		b.name = "kj-job-" + hex.EncodeToString(suffix)
		began := time.Now()
		t.Cleanup(func() {
			// Deleted whatever the test did, also when kind up failed
			// half way (it deletes what it made, and down then refuses).
			if code, _, stderr := b.kbBench(t, "kind", "down", "--name", b.name); code != 0 {
				t.Errorf("kb-bench kind down --name %s: exit %d: %s", b.name, code, stderr)
			}
		})
		if code, _, stderr := b.kbBench(t, "kind", "up", "--name", b.name, "--node-image", image, "--pull", "never"); code != 0 {
			t.Fatalf("kb-bench kind up: exit %d:\n%s", code, stderr)
		}
		t.Logf("kind cluster %s made in %s", b.name, time.Since(began).Round(time.Second))
	}
	kubeconfig, err := kindcluster.NewProvider().KubeConfig(b.name, false)
	if err != nil {
		t.Fatalf("the kubeconfig of kind cluster %s: %v", b.name, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	b.kube = kubernetes.NewForConfigOrDie(cfg)
	return b
}

// buildStatic builds kb-bench with CGO_ENABLED=0 into dir: a static
// binary, which kb-bench can make its shard image of.
func buildStatic(t *testing.T, dir string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kb-bench")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/kb-bench")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building a static kb-bench: %v\n%s", err, out)
	}
	return bin
}

// moduleRoot is the kb-bench module's directory, above the test's.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/kb-bench/kb-bench\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the kb-bench module, whose kb-bench the test builds")
		}
		dir = parent
	}
}

// kbBench runs kb-bench to its end.
func (b *kindBench) kbBench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(b.bin, args...)
	cmd.Env = b.env
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("kb-bench %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("kb-bench %s: exit %d\n%s", strings.Join(args, " "), code, errs.String())
	return code, out.String(), errs.String()
}

// runArgs are the arguments of a 2-shard Job run on the cluster.
func (b *kindBench) runArgs(out, duration string) []string {
	return []string{"run", "--target", "kind", "--kind-cluster", b.name, "--shards", "2", "--runner", "job",
		"--writers", "4", "--warmup", "1s", "--duration", duration, "--out", out}
}

// imageLine is what kb-bench said about the shard image: loaded, or
// already in the nodes.
func imageLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "the shard image") {
			return l
		}
	}
	return ""
}

// The Indexed Job runs on the node's real kubelet: kb-bench puts its own
// image into the node (and not again when the node has it), the pods run
// as the Job's ServiceAccount with their restricted security context,
// the merged result matches the apiserver's counters exactly, a shard pod
// deleted mid-run fails the run naming it, and nothing of either run is
// left on the cluster.
func TestJobOnKind(t *testing.T) {
	b := needKind(t)

	t.Run("merges exactly", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "result")
		began := time.Now()
		code, stdout, stderr := b.kbBench(t, b.runArgs(out, "5s")...)
		if code != 0 {
			t.Fatalf("kb-bench run --target kind --shards 2 --runner job: exit %d\n%s\n%s", code, stdout, stderr)
		}
		t.Logf("the run took %s:\n%s", time.Since(began).Round(100*time.Millisecond), stdout)
		if l := imageLine(stderr); !strings.Contains(l, "kind: loaded the shard image") && !strings.Contains(l, "kind: the nodes already hold the shard image") {
			t.Errorf("kb-bench said nothing of putting its image into the node: %q", l)
		}
		r, err := store.Read(t.Context(), out)
		if err != nil {
			t.Fatal(err)
		}
		if err := resultstest.ServerAgrees(r.Server); err != nil || !r.Server.Match {
			t.Errorf("the apiserver's counters do not match the shards' requests exactly (match %v): %v", r.Server.Match, err)
		}
		if lost := r.Summary.LostUpdates; r.Summary.Ops == 0 || lost == nil || *lost != 0 || len(r.Checks) != 1 || !r.Checks[0].Passed {
			t.Errorf("want operations and no lost updates: %d ops, lost %v, checks %+v", r.Summary.Ops, lost, r.Checks)
		}
		if len(r.Shards) != 2 {
			t.Fatalf("want 2 shards in the result, got %+v", r.Shards)
		}
		var ops int64
		for i, sh := range r.Shards {
			ops += sh.Ops
			// The downward API's POD_NAME names the shard: it ran in
			// the Job's pod of its index.
			if prefix := fmt.Sprintf("%s-%d-", job.ObjectName, i); sh.Index != i || !strings.HasPrefix(sh.Name, prefix) {
				t.Errorf("shard %d is named %q, want its pod's name %s...", sh.Index, sh.Name, prefix)
			}
		}
		if ops != r.Summary.Ops {
			t.Errorf("the shards ran %d ops, the merged result says %d", ops, r.Summary.Ops)
		}
		b.nothingLeft(t, r.RunID)

		// A second run finds the image in the node and loads nothing.
		out2 := filepath.Join(t.TempDir(), "result")
		code, stdout, stderr = b.kbBench(t, b.runArgs(out2, "1s")...)
		if code != 0 {
			t.Fatalf("the second run: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if l := imageLine(stderr); !strings.Contains(l, "kind: the nodes already hold the shard image") {
			t.Errorf("the second run did not find its image in the node: %q", l)
		}
		if r, err := store.Read(t.Context(), out2); err != nil {
			t.Error(err)
		} else {
			b.nothingLeft(t, r.RunID)
		}
	})

	t.Run("a shard pod deleted mid-run", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "result")
		cmd := exec.Command(b.bin, b.runArgs(out, "5m")...)
		cmd.Env = b.env
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		var said []string
		sc := bufio.NewScanner(stderr)
		runID := ""
		for sc.Scan() {
			said = append(said, sc.Text())
			t.Log("kb-bench: " + sc.Text())
			if id, ok := strings.CutPrefix(sc.Text(), "run "); ok && runID == "" {
				runID, _, _ = strings.Cut(id, ":")
			}
			if strings.HasPrefix(sc.Text(), "measured window from") {
				break
			}
		}
		if runID == "" {
			t.Fatalf("kb-bench never opened its measured window:\n%s", strings.Join(said, "\n"))
		}
		// The window opened: both shards joined, from running pods.
		ns := "kb-bench-" + runID
		pods, err := b.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: job.LabelComponent + "=" + job.ComponentShard})
		if err != nil {
			t.Fatal(err)
		}
		victim := ""
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s is %s in the measured window, want Running", p.Name, p.Status.Phase)
			}
			if p.Annotations["batch.kubernetes.io/job-completion-index"] == "1" {
				victim = p.Name
			}
		}
		if len(pods.Items) != 2 || victim == "" {
			t.Fatalf("want the pods of shards 0 and 1 in %s, got %d pods", ns, len(pods.Items))
		}
		if err := b.kube.CoreV1().Pods(ns).Delete(t.Context(), victim, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
			said = append(said, sc.Text())
			t.Log("kb-bench: " + sc.Text())
		}
		err = cmd.Wait()
		// Whichever sees it first names the shard and its pod: the
		// runner, the pod deleted, or the coordinator, the shard's Lease
		// saying it failed (its container stopped by SIGTERM).
		deleted := fmt.Sprintf("shard 1 (pod %s) was deleted before the run ended", victim)
		failed := fmt.Sprintf("shard 1 (%s) failed: ", victim)
		all := strings.Join(said, "\n")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(all, deleted) && !strings.Contains(all, failed) {
			t.Fatalf("kb-bench after the pod's deletion: %v, want exit status 1 saying %q or %q", err, deleted, failed)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a failed run left its result directory: %v", err)
		}
		b.nothingLeft(t, runID)
	})
}

// nothingLeft waits until nothing of run runID is left on the cluster:
// no Job, pod, Role, RoleBinding or ServiceAccount of it, nor its
// namespace. A cleanup that never happens fails the test near its
// deadline.
func (b *kindBench) nothingLeft(t *testing.T, runID string) {
	t.Helper()
	selector := metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + runID}
	ctx := context.WithoutCancel(t.Context())
	await.Until(t, "nothing of run "+runID+" to be left", func() error {
		var left []string
		count := func(what string, n int, err error) {
			if err != nil {
				left = append(left, fmt.Sprintf("%s: %v", what, err))
			} else if n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, what))
			}
		}
		jobs, err := b.kube.BatchV1().Jobs("").List(ctx, selector)
		count("jobs", len(jobs.Items), err)
		pods, err := b.kube.CoreV1().Pods("").List(ctx, selector)
		count("pods", len(pods.Items), err)
		roles, err := b.kube.RbacV1().Roles("").List(ctx, selector)
		count("roles", len(roles.Items), err)
		bindings, err := b.kube.RbacV1().RoleBindings("").List(ctx, selector)
		count("role bindings", len(bindings.Items), err)
		accounts, err := b.kube.CoreV1().ServiceAccounts("").List(ctx, selector)
		count("service accounts", len(accounts.Items), err)
		if _, err := b.kube.CoreV1().Namespaces().Get(ctx, "kb-bench-"+runID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			count("namespace kb-bench-"+runID, 1, nil)
		}
		if len(left) > 0 {
			return fmt.Errorf("left behind: %s", strings.Join(left, ", "))
		}
		return nil
	})
}
