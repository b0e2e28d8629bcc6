package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
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
	"github.com/kb-bench/kb-bench/results/store"
)

// These tests create real kind clusters on the real Docker daemon, with the
// node image KB_BENCH_KIND_NODE_IMAGE names (make test builds the offline
// one from the project's pins: no registry is needed).

// kindNodeImageEnv names the node image the real-kind tests use.
const kindNodeImageEnv = "KB_BENCH_KIND_NODE_IMAGE"

// realKind returns kb-bench built for the test, the node image and the
// environment kb-bench runs with (its state in a temp dir); it skips when
// no node image is named, and fails then if KB_BENCH_REQUIRE_DOCKER is
// set.
func realKind(t *testing.T) (bin, image string, env []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("creates real kind clusters: skipped with -short")
	}
	image = os.Getenv(kindNodeImageEnv)
	if image == "" {
		msg := kindNodeImageEnv + " names no kind node image: the real-kind tests need one (make kind-node-image builds it; make test sets the variable)"
		if os.Getenv("KB_BENCH_REQUIRE_DOCKER") != "" {
			t.Fatalf("KB_BENCH_REQUIRE_DOCKER is set, but %s", msg)
		}
		t.Skip(msg)
	}
	if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		t.Fatalf("%s=%s, but docker does not have it: %v: %s", kindNodeImageEnv, image, err, out)
	}
	bin = built(t)
	home := t.TempDir()
	env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "KIND_EXPERIMENTAL_PROVIDER=docker")
	return bin, image, env
}

// kindCluster is a real kind cluster a test makes (its name starts with
// kt-) and what it must leave: nothing.
type kindCluster struct {
	name string
	// hadNetwork: kind's network was there before (another cluster's,
	// or left by one): not this cluster's to remove.
	hadNetwork bool
	// volumes are the node's anonymous volumes, read while it runs.
	volumes []string
}

func newKindCluster(t *testing.T, what string) *kindCluster {
	k := &kindCluster{name: fmt.Sprintf("kt-%s-%d", what, os.Getpid()), hadNetwork: exec.Command("docker", "network", "inspect", "kind").Run() == nil}
	// Whatever the test did, nothing of the cluster stays on the shared
	// daemon.
	t.Cleanup(func() {
		if ids := k.containers(t); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f", "-v"}, ids...)...).Run()
		}
	})
	return k
}

// containers lists the cluster's containers and those of kb-bench's
// privileged-container check for it.
func (k *kindCluster) containers(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, label := range []string{"io.x-k8s.kind.cluster=" + k.name, "dev.kb-bench.preflight=" + k.name} {
		out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
		if err != nil {
			t.Fatalf("docker ps: %v", err)
		}
		ids = append(ids, strings.Fields(string(out))...)
	}
	return ids
}

// noteVolumes waits until the cluster's node runs with its volumes (kind
// gives /var one), and notes them.
func (k *kindCluster) noteVolumes(t *testing.T) {
	t.Helper()
	await.Until(t, "the node of "+k.name+" to run with its volumes", func() error {
		ids := k.containers(t)
		if len(ids) == 0 {
			return errors.New("no container")
		}
		out, err := exec.Command("docker", append([]string{"inspect", "--format", "{{range .Mounts}}{{if eq .Type \"volume\"}}{{.Name}} {{end}}{{end}}"}, ids...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("docker inspect %v: %v: %s", ids, err, out)
		}
		if k.volumes = strings.Fields(string(out)); len(k.volumes) == 0 {
			return errors.New("no volume yet")
		}
		return nil
	})
}

// gone says what of the cluster is left, waiting for a cleanup that is on
// its way (the janitor): no container, none of the node's volumes, and,
// when kind made its network for this cluster, no network unless another
// cluster's container uses it.
func (k *kindCluster) gone(t *testing.T) {
	t.Helper()
	await.Until(t, "cluster "+k.name+" to be gone", func() error {
		var left []string
		if ids := k.containers(t); len(ids) > 0 {
			left = append(left, "containers "+strings.Join(ids, " "))
		}
		for _, v := range k.volumes {
			if exec.Command("docker", "volume", "inspect", v).Run() == nil {
				left = append(left, "volume "+v)
			}
		}
		if out, err := exec.Command("docker", "network", "inspect", "kind", "--format", "{{len .Containers}}").Output(); !k.hadNetwork && err == nil && strings.TrimSpace(string(out)) == "0" {
			left = append(left, "the network kind, which no container uses")
		}
		if len(left) > 0 {
			return fmt.Errorf("left of %s: %s", k.name, strings.Join(left, ", "))
		}
		return nil
	})
}

// startKB starts kb-bench and returns its stderr's lines as they come
// (logged), and its stdout.
func startKB(t *testing.T, bin string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdout := new(bytes.Buffer)
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 10000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("kb-bench: " + sc.Text())
			lines <- sc.Text()
		}
	}()
	return cmd, stdout, lines
}

// waitLine reads lines until one holds want; it fails if kb-bench ends
// first.
func waitLine(t *testing.T, lines <-chan string, want string) string {
	t.Helper()
	for l := range lines {
		if strings.Contains(l, want) {
			return l
		}
	}
	t.Fatalf("kb-bench ended without saying %q", want)
	return ""
}

// exitCode waits for kb-bench (its stderr read to the end first).
func exitCode(t *testing.T, cmd *exec.Cmd, lines <-chan string) int {
	t.Helper()
	for range lines {
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// kb-bench run --target kind makes a real kind cluster for the run, on
// this host as it is (adapting it, saying so), runs on it, and deletes
// it: the apiserver counted exactly kb-bench's requests, no update was
// lost, and nothing is left.
func TestRealKindRunCreatesAndDeletes(t *testing.T) {
	bin, image, env := realKind(t)
	k := newKindCluster(t, "run")
	out := filepath.Join(t.TempDir(), "result")
	cmd, stdout, lines := startKB(t, bin, env, "run", "--target", "kind", "--kind-cluster", k.name, "--node-image", image, "--pull", "never",
		"--writers", "4", "--duration", "3s", "--out", out)
	waitLine(t, lines, "kind: cluster "+k.name+" ready after")
	k.noteVolumes(t)
	if code := exitCode(t, cmd, lines); code != 0 {
		t.Fatalf("run --target kind: exit %d\n%s", code, stdout)
	}
	r, err := store.Read(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Server == nil || !r.Server.Match {
		t.Errorf("the server cross-check is not exact on a real cluster: %+v", r.Server)
	} else if len(r.Server.Others) > 0 {
		// Every request of kb-bench's was counted; what the cluster's own
		// clients sent in the window is attributed, and shown here.
		t.Logf("the apiserver also counted other clients' requests: %+v", r.Server.Others)
	}
	if lost := r.Summary.LostUpdates; lost == nil || *lost != 0 || r.Summary.Successes == 0 {
		t.Errorf("lost updates %v (nil: unknown), %d successes", lost, r.Summary.Successes)
	}
	if r.Target.NodeImage != image || !strings.Contains(r.Target.KindConfig, "imageTag") {
		t.Errorf("the result does not record the node image and its adaptations: %s\n%s", r.Target.NodeImage, r.Target.KindConfig)
	}
	t.Logf("summary:\n%s", stdout)
	k.gone(t)
}

// kind up makes a cluster that runs use and keep (a custom resource's
// run installs and deletes its CRD there unasked); kind down deletes it.
func TestRealKindUpRunDown(t *testing.T) {
	bin, image, env := realKind(t)
	k := newKindCluster(t, "up")
	if code, _, stderr := kbBench(t, bin, env, "kind", "up", "--name", k.name, "--node-image", image, "--pull", "never"); code != 0 {
		t.Fatalf("kind up: exit %d", code)
	} else if !strings.Contains(stderr, "kind: cluster "+k.name+" ready after") {
		t.Errorf("kind up does not say the cluster is ready:\n%s", stderr)
	}
	k.noteVolumes(t)
	out := filepath.Join(t.TempDir(), "result")
	if code, stdout, _ := kbBench(t, bin, env, "run", "--target", "kind", "--kind-cluster", k.name, "--writers", "4", "--duration", "2s", "--out", out); code != 0 {
		t.Fatalf("run on the kept cluster: exit %d\n%s", code, stdout)
	}
	r, err := store.Read(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	if lost := r.Summary.LostUpdates; r.Server == nil || !r.Server.Match || lost == nil || *lost != 0 {
		t.Errorf("server check %+v, lost updates %v (nil: unknown)", r.Server, lost)
	}
	// kb-bench made the cluster, so it installs a manifest's CRD unasked
	// (no --install-crd), and deletes it after.
	if code, stdout, _ := kbBench(t, bin, env, "run", "--target", "kind", "--kind-cluster", k.name, "--profile", "custom-resource", "--writers", "2", "--duration", "2s", "--out", out+"-cr"); code != 0 {
		t.Fatalf("a custom resource on the kept cluster, its CRD in the manifest: exit %d\n%s", code, stdout)
	}
	if r, err := store.Read(t.Context(), out+"-cr"); err != nil {
		t.Fatal(err)
	} else if lost := r.Summary.LostUpdates; lost == nil || *lost != 0 || r.Summary.Successes == 0 {
		t.Errorf("custom resource: lost updates %v (nil: unknown), %d successes", lost, r.Summary.Successes)
	}
	state := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "XDG_STATE_HOME="); ok {
			state = v
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kb-bench", "kind", k.name+".kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crds).Get(t.Context(), "widgets.bench.kb-bench.io", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the run left the CRD it installed on the cluster (get: %v)", err)
	}
	if len(k.containers(t)) != 1 {
		t.Fatal("the run deleted a cluster it did not make")
	}
	if code, _, _ := kbBench(t, bin, env, "kind", "down", "--name", k.name); code != 0 {
		t.Fatalf("kind down: exit %d", code)
	}
	k.gone(t)
}

// Ctrl-C while kind creates the cluster, and while the run measures on
// it: kb-bench exits 130 and deletes the cluster it made.
func TestRealKindInterrupted(t *testing.T) {
	bin, image, env := realKind(t)
	for _, tc := range []struct{ name, at string }{
		{"create", "kind: creating cluster "},
		{"run", "s left]"}, // the first progress line: the window is open
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKindCluster(t, "int"+tc.name)
			cmd, stdout, lines := startKB(t, bin, env, "run", "--target", "kind", "--kind-cluster", k.name, "--node-image", image, "--pull", "never",
				"--writers", "4", "--duration", "10m", "--out", filepath.Join(t.TempDir(), "result"))
			if tc.name == "run" {
				waitLine(t, lines, "kind: cluster "+k.name+" ready after")
				k.noteVolumes(t)
			}
			waitLine(t, lines, tc.at)
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, cmd, lines); code != 130 {
				t.Errorf("kb-bench after Ctrl-C during the %s: exit %d, want 130\n%s", tc.name, code, stdout)
			}
			// Gone when kb-bench is: no waiting for a janitor here.
			if ids := k.containers(t); len(ids) > 0 {
				t.Errorf("containers left after kb-bench exited: %v", ids)
			}
			k.gone(t)
		})
	}
}

// kill -9 of kb-bench while kind creates the cluster (kind up), and while a
// run measures on a cluster it made: the janitor kb-bench started removes
// the cluster and kb-bench's records of it, and the next kb-bench finds no
// cluster.
func TestRealKindKilled(t *testing.T) {
	bin, image, env := realKind(t)
	for _, tc := range []struct{ name, at string }{
		{"create", "kind: creating cluster "},
		{"run", "s left]"}, // the first progress line: the window is open
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKindCluster(t, "kill"+tc.name)
			args := []string{"kind", "up", "--name", k.name, "--node-image", image, "--pull", "never"}
			if tc.name == "run" {
				args = []string{"run", "--target", "kind", "--kind-cluster", k.name, "--node-image", image, "--pull", "never",
					"--writers", "4", "--duration", "10m", "--out", filepath.Join(t.TempDir(), "result")}
			}
			cmd, _, lines := startKB(t, bin, env, args...)
			waitLine(t, lines, tc.at)
			k.noteVolumes(t)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			exitCode(t, cmd, lines)
			k.gone(t)
			await.Until(t, "kb-bench's record of the cluster to go", func() error {
				if _, status, _ := kbBench(t, bin, env, "kind", "status", "--name", k.name); !strings.Contains(status, "kb-bench made no kind cluster "+k.name) {
					return fmt.Errorf("kind status says %s", status)
				}
				return nil
			})
		})
	}
}
