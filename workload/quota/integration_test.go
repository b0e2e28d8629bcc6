package quota_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/results/resultstest"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/quota"
)

// local is the real kube-apiserver and etcd the package's integration tests
// share.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

var runSeq atomic.Int64

// logWriter sends the engine's log to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// runQuota runs s as the quota scenario through the engine and returns the
// outcome and the scenario's report.
func runQuota(ctx context.Context, t *testing.T, cfg *rest.Config, s spec.Spec, progress func(time.Duration, metrics.SeriesPoint)) (*workload.Outcome, *quota.Report) {
	t.Helper()
	s.Scenario = quota.Definition.Name
	r, errs := workload.Resolve(s)
	if len(errs) > 0 {
		t.Fatal(spec.Describe(errs))
	}
	out, err := workload.Run(ctx, r, workload.Options{
		Config:            cfg,
		RunID:             fmt.Sprintf("quota-%d-%d", os.Getpid(), runSeq.Add(1)),
		Version:           "test",
		Log:               logWriter{t},
		FinalizeNamespace: true,
		Progress:          progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	report, ok := out.Report.(*quota.Report)
	if !ok {
		t.Fatalf("report is a %T, want *quota.Report", out.Report)
	}
	return out, report
}

// assertChecksPass checks that the run has the quota's three checks and
// that they passed.
func assertChecksPass(t *testing.T, res *results.Result) {
	t.Helper()
	if len(res.Checks) != 3 {
		t.Errorf("%d checks, want 3: %+v", len(res.Checks), res.Checks)
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("check %q failed: %s", c.Name, c.Detail)
		}
	}
}

// assertServerMatch checks that the apiserver counted exactly the creates
// the clients sent.
func assertServerMatch(t *testing.T, res *results.Result) {
	t.Helper()
	if err := resultstest.ServerAgrees(res.Server); err != nil {
		t.Errorf("server cross-check: %v, want every count to match the apiserver's", err)
	}
}

func TestQuotaOnLocalControlPlane(t *testing.T) {
	cfg := local.Config(t)
	const hard = 25
	for i, res := range []string{quota.ResourceConfigMaps, quota.ResourceGPU} {
		t.Run(res, func(t *testing.T) {
			// Twice the quota's creates, not a time: the quota fills and
			// refuses however slowly a loaded machine goes.
			out, r := runQuota(t.Context(), t, cfg, spec.Spec{
				Writers:    8,
				Operations: 2 * hard,
				Settings:   map[string]any{"resource": res, "hard": hard},
			}, nil)
			result := out.Result
			if i == 0 {
				var table strings.Builder
				if err := text.WriteTable(&table, result); err != nil {
					t.Fatal(err)
				}
				t.Logf("\n%s", table.String())
			}
			assertChecksPass(t, result)
			// The writers go on after the quota is full: exactly H admitted,
			// the rest refused.
			if r.InitialUsed+r.Admitted != hard || r.ExistingAtEnd != hard || r.UsedAtEnd != hard {
				t.Errorf("initial %d + admitted %d, existing %d, used %d: want all %d", r.InitialUsed, r.Admitted, r.ExistingAtEnd, r.UsedAtEnd, hard)
			}
			if r.Rejected == 0 || r.FullAt == 0 || r.RejectedLatency.Max == 0 {
				t.Errorf("rejected %d, full at %s, rejected latency %+v: want the quota to fill and refuse", r.Rejected, r.FullAt, r.RejectedLatency)
			}
			if !r.StatusInitialized || len(result.Warnings) == 0 || !strings.Contains(result.Warnings[0], "constrains nothing") {
				t.Errorf("status initialised %t, warnings %q: want the initialisation said", r.StatusInitialized, result.Warnings)
			}

			// The engine's figures are the scenario's: each create one
			// operation of one write attempt, a rejection a failed precondition.
			sum, m := result.Summary, result.Measurements
			if sum.Ops != r.Creates || sum.WriteAttempts != r.Creates ||
				m.Outcomes[metrics.FailedPrecondition.String()] != r.Rejected || m.Outcomes[metrics.Success.String()] != r.Admitted {
				t.Errorf("engine: %d ops, %d write attempts, outcomes %v; report: %d creates, %d rejected, %d admitted",
					sum.Ops, sum.WriteAttempts, m.Outcomes, r.Creates, r.Rejected, r.Admitted)
			}

			// The apiserver counted the same creates, and its own writes of
			// the quota's status: at most one per admitted create (admission
			// batches concurrent creates into one status update).
			assertServerMatch(t, result)
			var statusOK, statusConflicts int64
			for _, rc := range result.Server.Internal {
				if rc.Verb == "PUT" && rc.Resource == "resourcequotas/status" {
					switch rc.Code {
					case "200":
						statusOK += rc.Server
					case "409":
						statusConflicts += rc.Server
					}
				}
			}
			if statusOK < 1 || statusOK > r.Admitted {
				t.Errorf("the apiserver's own PUT resourcequotas/status: %d (200), want 1 to the %d admitted creates; internal %+v",
					statusOK, r.Admitted, result.Server.Internal)
			}
			t.Logf("%s: %d creates (%.0f/s): %d admitted, %d rejected, %d conflicts, full after %s; quota status writes %d (200), %d (409); etcd %+v",
				res, r.Creates, sum.Throughput, r.Admitted, r.Rejected, r.Conflicts, r.FullAt, statusOK, statusConflicts, result.Server.Races)

			if !reflect.DeepEqual(result.Figures, r.Figures()) {
				t.Errorf("result figures %+v, want the report's %+v", result.Figures, r.Figures())
			}
		})
	}
}

// The engine's driver bounds the run: operations after a warm-up, an open
// loop's rate, Ctrl-C. Counts cover the warm-up, since every admitted
// object counts against the quota.
func TestQuotaDriven(t *testing.T) {
	cfg := local.Config(t)
	const hard = 10
	settings := map[string]any{"hard": hard}

	t.Run("operations after warm-up", func(t *testing.T) {
		s := spec.Spec{Writers: 4, Operations: 40, Warmup: spec.D(200 * time.Millisecond), Settings: settings}
		out, r := runQuota(t.Context(), t, cfg, s, nil)
		res := out.Result
		if res.Summary.Ops != 40 || res.Measurements.WarmupOps == 0 || r.Creates != 40+res.Measurements.WarmupOps {
			t.Errorf("%d measured ops after %d warm-up ops, %d creates: want 40 measured, and creates to count both",
				res.Summary.Ops, res.Measurements.WarmupOps, r.Creates)
		}
		if r.Admitted != hard || r.Rejected == 0 {
			t.Errorf("admitted %d, rejected %d: want %d and some", r.Admitted, r.Rejected, hard)
		}
		assertChecksPass(t, res)
		assertServerMatch(t, res)
	})

	t.Run("open loop", func(t *testing.T) {
		// 40 creates at 300/s: the rate paces them (the 40th is not due
		// before 130ms), and the quota fills however slow the machine.
		const rate, ops = 300, 40
		s := spec.Spec{Writers: 4, Rate: rate, Operations: ops, Settings: settings}
		out, r := runQuota(t.Context(), t, cfg, s, nil)
		res := out.Result
		if res.Summary.Ops != ops || r.Creates != ops {
			t.Errorf("%d ops, %d creates: want %d, each one create", res.Summary.Ops, r.Creates, ops)
		}
		if paced := time.Duration(ops-1) * time.Second / rate; res.Ended.Sub(res.Started) < paced {
			t.Errorf("%d ops in %s at %d/s: want at least %s", ops, res.Ended.Sub(res.Started), rate, paced)
		}
		if r.Admitted != hard || r.Rejected == 0 {
			t.Errorf("admitted %d, rejected %d: want %d and some", r.Admitted, r.Rejected, hard)
		}
		assertChecksPass(t, res)
		assertServerMatch(t, res)
	})

	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s := spec.Spec{Writers: 4, Duration: spec.D(time.Hour), Settings: settings}
		// Ctrl-C once more creates have ended than the quota holds, seen
		// in the run's progress.
		var ended atomic.Int64
		out, r := runQuota(ctx, t, cfg, s, func(_ time.Duration, p metrics.SeriesPoint) {
			if ended.Add(p.Ops) > hard {
				cancel()
			}
		})
		res := out.Result
		if !res.Interrupted {
			t.Errorf("result not marked interrupted")
		}
		if r.Admitted != hard || r.Rejected == 0 {
			t.Errorf("admitted %d, rejected %d: want %d and some", r.Admitted, r.Rejected, hard)
		}
		assertChecksPass(t, res)
	})
}
