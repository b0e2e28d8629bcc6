package quota

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
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

func TestChecks(t *testing.T) {
	tests := []struct {
		name   string
		rep    results.QuotaReport
		passed [3]bool
	}{
		{"full and consistent", results.QuotaReport{Hard: 10, InitialUsed: 2, Admitted: 8, ExistingAtEnd: 10, UsedAtEnd: 10}, [3]bool{true, true, true}},
		{"not full", results.QuotaReport{Hard: 10, Admitted: 3, ExistingAtEnd: 3, UsedAtEnd: 3}, [3]bool{true, true, true}},
		{"over-admitted by creates", results.QuotaReport{Hard: 10, InitialUsed: 1, Admitted: 10, ExistingAtEnd: 11, UsedAtEnd: 11}, [3]bool{false, false, true}},
		{"timed-out create exists beyond hard", results.QuotaReport{Hard: 10, Admitted: 10, ExistingAtEnd: 11, UsedAtEnd: 10}, [3]bool{true, false, false}},
		{"used drifted above what exists", results.QuotaReport{Hard: 10, Admitted: 9, ExistingAtEnd: 9, UsedAtEnd: 10}, [3]bool{true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := checks(&tt.rep)
			for i, c := range cs {
				if c.Passed != tt.passed[i] {
					t.Errorf("%s: passed = %t, want %t (%+v)", c.Name, c.Passed, tt.passed[i], c)
				}
				if !c.Passed && c.Detail == "" {
					t.Errorf("%s failed without a detail", c.Name)
				}
			}
		})
	}
}

func TestKindFor(t *testing.T) {
	for _, res := range []string{ResourceConfigMaps, ResourceGPU} {
		if _, err := kindFor(res); err != nil {
			t.Errorf("kindFor(%q): %v", res, err)
		}
	}
	if _, err := kindFor("count/secrets"); !spec.IsInput(err) {
		t.Errorf("kindFor(count/secrets) = %v, want an input error", err)
	}
}

// localControlPlane starts a real kube-apiserver + etcd for the test, or
// skips it when the binaries are not installed.
func localControlPlane(t *testing.T) *rest.Config {
	t.Helper()
	bins, err := cluster.FindBinaries("", os.Getenv)
	if err != nil {
		t.Skipf("no local control plane binaries: %v", err)
	}
	cp, err := cluster.StartLocal(context.Background(), cluster.LocalOptions{Binaries: bins, Storage: spec.StorageMemory})
	if err != nil {
		t.Fatalf("starting the local control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(context.Background()); err != nil {
			t.Errorf("stopping the local control plane: %v", err)
		}
	})
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
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
	rec := metrics.NewRecorder(time.Now(), metrics.DefaultShards(s.Writers), false)
	rec.MeasureFrom(time.Now().Add(s.Warmup.Duration))
	return scenario.Env{
		Config: cfg, Clients: []kubernetes.Interface{client}, Namespace: ns, Spec: s,
		Recorder: rec, Result: &results.Result{}, Log: io.Discard,
	}
}

func TestQuotaOnLocalControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	cfg := localControlPlane(t)
	const hard = 25
	for _, res := range []string{ResourceConfigMaps, ResourceGPU} {
		t.Run(res, func(t *testing.T) {
			env := newEnv(t, cfg, spec.Spec{
				Scenario: spec.ScenarioQuota,
				Writers:  8,
				Duration: spec.D(2 * time.Second),
				Quota:    &spec.Quota{Resource: res, Hard: hard},
			})
			if err := Run(context.Background(), env); err != nil {
				t.Fatal(err)
			}
			r := env.Result.Quota
			if r == nil {
				t.Fatal("no Quota report")
			}
			var b strings.Builder
			_ = r.WriteTable(&b)
			t.Logf("\n%s", b.String())

			for _, c := range env.Result.Checks {
				if !c.Passed {
					t.Errorf("check %q failed: %s", c.Name, c.Detail)
				}
			}
			if len(env.Result.Checks) != 3 {
				t.Errorf("%d checks, want 3", len(env.Result.Checks))
			}
			// The writers go on after the quota is full: exactly H admitted,
			// the rest refused.
			if r.InitialUsed+r.Admitted != hard || r.ExistingAtEnd != hard || r.UsedAtEnd != hard {
				t.Errorf("initial %d + admitted %d, existing %d, used %d: want all %d", r.InitialUsed, r.Admitted, r.ExistingAtEnd, r.UsedAtEnd, hard)
			}
			if r.Rejected == 0 || r.FullAt == 0 {
				t.Errorf("rejected %d, full at %s: want the quota to fill and refuse", r.Rejected, r.FullAt)
			}
			if !r.StatusInitialized || len(env.Result.Warnings) == 0 || !strings.Contains(env.Result.Warnings[0], "constrains nothing") {
				t.Errorf("status initialised %t, warnings %q: want the initialisation said", r.StatusInitialized, env.Result.Warnings)
			}
			snap := env.Recorder.Snapshot(time.Now())
			if snap.Ops != r.Creates || snap.Outcomes[metrics.FailedPrecondition] != r.Rejected || snap.Outcomes[metrics.Success] != r.Admitted {
				t.Errorf("recorder: %d ops, %d failed-precondition, %d success; report: %d creates, %d rejected, %d admitted",
					snap.Ops, snap.Outcomes[metrics.FailedPrecondition], snap.Outcomes[metrics.Success], r.Creates, r.Rejected, r.Admitted)
			}
		})
	}
}
