package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kindexec "sigs.k8s.io/kind/pkg/exec"

	"github.com/kb-bench/kb-bench/spec"
)

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// deadKubeconfig writes a kubeconfig (context "dead", also current) whose
// server is a closed loopback port, and returns its path and server.
func deadKubeconfig(t *testing.T) (path, server string) {
	t.Helper()
	server = fmt.Sprintf("https://127.0.0.1:%d", closedPort(t))
	path = filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: dead
  user:
    token: secret-token
contexts:
- name: dead
  context: {cluster: dead, user: dead}
current-context: dead
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, server
}

func TestOpenKubeconfigErrors(t *testing.T) {
	dead, server := deadKubeconfig(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(dead, filepath.Join(home, ".kube", "config")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		target  spec.Target
		env     map[string]string
		wantErr []string
	}{
		{"no path", spec.Target{Kind: spec.TargetKubeconfig}, nil, []string{"--kubeconfig PATH", "--context NAME"}},
		// --context alone: that context of the usual kubeconfig.
		{"context in $KUBECONFIG", spec.Target{Kind: spec.TargetKubeconfig, Context: "dead"}, map[string]string{"KUBECONFIG": dead, "HOME": t.TempDir()},
			[]string{"cannot reach the apiserver " + server, `context "dead"`, dead}},
		{"context in ~/.kube/config", spec.Target{Kind: spec.TargetKubeconfig, Context: "dead"}, map[string]string{"HOME": home},
			[]string{"cannot reach the apiserver " + server, `context "dead"`}},
		{"context not in ~/.kube/config", spec.Target{Kind: spec.TargetKubeconfig, Context: "prod"}, map[string]string{"HOME": home},
			[]string{`context "prod" does not exist`, filepath.Join(home, ".kube", "config"), "--context"}},
		{"missing file", spec.Target{Kind: spec.TargetKubeconfig, Kubeconfig: filepath.Join(t.TempDir(), "nope")}, nil, []string{"nope"}},
		{"unknown context", spec.Target{Kind: spec.TargetKubeconfig, Kubeconfig: dead, Context: "prod"}, nil, []string{`context "prod"`, "--context"}},
		{"dead server", spec.Target{Kind: spec.TargetKubeconfig, Kubeconfig: dead}, nil,
			[]string{"cannot reach the apiserver " + server, `context "dead"`, "check the kubeconfig and context, or start the cluster"}},
		{"unknown target kind", spec.Target{Kind: "eks"}, nil, []string{`target "eks" is not known`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			conn, err := Open(context.Background(), tc.target, Options{Getenv: envOf(tc.env)})
			if err == nil {
				conn.Close(context.Background())
				t.Fatal("Open succeeded, want an error")
			}
			// A hang guard, not a speed test: each error comes before any
			// network use or from a refused connection, and reachTimeout
			// (5s) bounds the probe; only retries could take a minute.
			if d := time.Since(start); d > time.Minute {
				t.Errorf("the error took %s: Open retries instead of failing", d)
			}
			if !spec.IsInput(err) {
				t.Errorf("not a spec.Input error: %v", err)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not say %q:\n%v", s, err)
				}
			}
			if strings.Contains(err.Error(), "secret-token") {
				t.Errorf("error leaks the token: %v", err)
			}
		})
	}
}

// fakeKind is a kind provider with canned answers.
type fakeKind struct {
	clusters   []string
	listErr    error
	kubeconfig string
	kcErr      error
}

func (f fakeKind) List() ([]string, error) { return f.clusters, f.listErr }
func (f fakeKind) KubeConfig(name string, internal bool) (string, error) {
	if internal {
		return "", errors.New("internal kubeconfig asked for: it is for inside the docker network")
	}
	return f.kubeconfig, f.kcErr
}

// fakeKindDeps uses a fake provider and fails the test on any create or
// delete.
func fakeKindDeps(p kindProvider, err error) kindDeps {
	return kindDeps{
		newProvider: func() (kindProvider, error) { return p, err },
		describe:    func(string) (string, string) { return "", "" },
		up:          func(context.Context, KindOptions, spec.PullPolicy) error { return errors.New("unexpected create") },
		down:        func(context.Context, string) error { return errors.New("unexpected delete") },
	}
}

func TestOpenKindErrors(t *testing.T) {
	dead, server := deadKubeconfig(t)
	deadBytes, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	dockerDown := &kindexec.RunError{Command: []string{"docker", "ps"}, Output: []byte("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"), Inner: errors.New("exit status 1")}
	tests := []struct {
		name     string
		cluster  string
		provider kindProvider
		provErr  error
		wantErr  []string
	}{
		{name: "no runtime", provErr: errors.New("no container runtime found on PATH"),
			wantErr: []string{`kind cluster "kind"`, "needs a running container runtime", "`kind create cluster`", "--kubeconfig PATH", "local target"}},
		{name: "daemon down", cluster: "bench", provider: fakeKind{listErr: fmt.Errorf("failed to list clusters: %w", dockerDown)},
			wantErr: []string{`kind cluster "bench"`, "Cannot connect to the Docker daemon", "needs a running container runtime", "`kind create cluster`"}},
		{name: "no such cluster, no node image", cluster: "bench", provider: fakeKind{clusters: []string{"kind", "dev"}},
			wantErr: []string{`kind cluster "bench" does not exist (kind clusters: kind, dev), and creating it for the run failed`, "--pull never forbids"}},
		{name: "no clusters at all", provider: fakeKind{},
			wantErr: []string{`kind cluster "kind" does not exist (kind clusters: none)`}},
		{name: "kubeconfig fails", provider: fakeKind{clusters: []string{"kind"}, kcErr: errors.New("no control plane node")},
			wantErr: []string{"reading its kubeconfig", "no control plane node"}},
		{name: "apiserver down", provider: fakeKind{clusters: []string{"kind"}, kubeconfig: string(deadBytes)},
			wantErr: []string{"cannot reach its apiserver " + server, "is the cluster running?"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			deps := fakeKindDeps(tc.provider, tc.provErr)
			deps.up = func(context.Context, KindOptions, spec.PullPolicy) error {
				return spec.Input(errors.New("the kind node image X is not in docker, and --pull never forbids pulling it"))
			}
			_, err := openKind(context.Background(), spec.Target{Kind: spec.TargetKindCluster, KindCluster: tc.cluster}, deps)
			if err == nil {
				t.Fatal("openKind succeeded, want an error")
			}
			if !spec.IsInput(err) {
				t.Errorf("not a spec.Input error: %v", err)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not say %q:\n%v", s, err)
				}
			}
		})
	}
}

// TestOpenKindOnThisMachine goes through kind's real provider: with no
// container runtime, or no such cluster, the user gets an input error
// quickly, whatever this machine has.
func TestOpenKindOnThisMachine(t *testing.T) {
	for _, env := range []map[string]string{
		{"PATH": os.Getenv("PATH")},
		{"PATH": os.Getenv("PATH"), "KIND_EXPERIMENTAL_PROVIDER": "lxc"},
	} {
		t.Run(fmt.Sprint(env["KIND_EXPERIMENTAL_PROVIDER"]), func(t *testing.T) {
			start := time.Now()
			// A node image no machine has, never pulled: never a real
			// create, nor a pull from a registry.
			_, err := Open(context.Background(), spec.Target{Kind: spec.TargetKindCluster, KindCluster: "kb-bench-test-no-such-cluster", KindNodeImage: "kb-bench-test/absent:v0", KindPull: spec.PullNever}, Options{Getenv: envOf(env)})
			if err == nil || !spec.IsInput(err) {
				t.Fatalf("Open(kind) = %v, want a spec.Input error", err)
			}
			if !strings.Contains(err.Error(), "kb-bench-test-no-such-cluster") {
				t.Errorf("error does not name the cluster: %v", err)
			}
			t.Logf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// inClusterPossible makes client-go believe it runs in a pod whose
// apiserver is at server: the service env vars and the service-account
// token file it checks. The token path is fixed in client-go, so outside a
// pod the test needs root to create it (and removes it afterwards).
func inClusterPossible(t *testing.T, server string) {
	t.Helper()
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount"
	token := filepath.Join(dir, "token")
	if _, err := os.Stat(token); err != nil {
		if _, err := os.Stat("/var/run/secrets"); err == nil || os.Geteuid() != 0 {
			t.Skip("cannot fake a pod here: needs root and no /var/run/secrets")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Skipf("cannot fake a pod here: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll("/var/run/secrets") })
		if err := os.WriteFile(token, []byte("pod-token"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := strings.Cut(strings.TrimPrefix(server, "https://"), ":")
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
}

// In a pod (a CI runner on Kubernetes), a kubeconfig that names no cluster
// must be an error, not client-go's fallback to the pod's own cluster.
func TestKubeconfigNeverFallsBackToInCluster(t *testing.T) {
	podServer := fmt.Sprintf("https://127.0.0.1:%d", closedPort(t))
	inClusterPossible(t, podServer)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":         "",
		"no clusters":   "apiVersion: v1\nkind: Config\n",
		"no context":    "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://127.0.0.1:1}\n",
		"context empty": "apiVersion: v1\nkind: Config\ncontexts:\n- name: x\n  context: {}\ncurrent-context: x\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			conn, err := Open(context.Background(), spec.Target{Kind: spec.TargetKubeconfig, Kubeconfig: path}, Options{Getenv: envOf(nil)})
			if err == nil {
				conn.Close(context.Background())
				t.Fatalf("Open succeeded against %s, want an error", conn.Config.Host)
			}
			if strings.Contains(err.Error(), podServer) {
				t.Errorf("an unnamed cluster was used (the pod's own, %s): %v", podServer, err)
			}
			if !spec.IsInput(err) || !strings.Contains(err.Error(), path) {
				t.Errorf("want an input error naming the kubeconfig, got %v", err)
			}
		})
	}
}
