package leaderelection

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// sharedControlPlane is one real kube-apiserver + etcd for every
// integration test of the package: started by the first test that asks,
// stopped by TestMain.
type sharedControlPlane struct {
	once sync.Once
	cp   *cluster.ControlPlane
	skip string
	err  error
}

func TestMain(m *testing.M) {
	shared := &sharedControlPlane{}
	local = shared
	code := m.Run()
	if shared.cp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := shared.cp.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local control plane: %v\n", err)
			code = 1
		}
		cancel()
	}
	os.Exit(code)
}

// local is set by TestMain.
var local *sharedControlPlane

// localControlPlane returns an admin config for the shared control plane,
// or skips the test when the binaries are not installed.
func localControlPlane(t *testing.T) *rest.Config {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	local.once.Do(func() {
		bins, err := cluster.FindBinaries("", os.Getenv)
		if err != nil {
			local.skip = err.Error()
			return
		}
		local.cp, local.err = cluster.StartLocal(context.Background(), cluster.LocalOptions{Binaries: bins, Storage: spec.StorageMemory})
	})
	if local.skip != "" {
		t.Skipf("no local control plane binaries (run `make control-plane`): %s", local.skip)
	}
	if local.err != nil {
		t.Fatalf("starting the local control plane: %v", local.err)
	}
	cfg := local.cp.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit
	return cfg
}

// newEnv creates a fresh namespace and the Env the engine would pass.
func newEnv(t *testing.T, cfg *rest.Config, s spec.Spec) scenario.Env {
	t.Helper()
	s.Defaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("kb-bench-test-%d", time.Now().UnixNano())
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(s.Warmup.Duration)
	return scenario.Env{
		Config: cfg, Clients: []kubernetes.Interface{client}, Namespace: ns, Spec: s,
		Recorder: metrics.NewRecorder(start, metrics.DefaultShards(s.Writers), false),
		Result:   &results.Result{}, Log: io.Discard,
	}
}
