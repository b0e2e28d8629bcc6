package quota

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
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

func TestQuotaOnLocalControlPlane(t *testing.T) {
	cfg := local.Config(t)
	const hard = 25
	for _, res := range []string{ResourceConfigMaps, ResourceGPU} {
		t.Run(res, func(t *testing.T) {
			env := clustertest.NewEnv(t, cfg, spec.Spec{
				Scenario: spec.ScenarioQuota,
				Writers:  8,
				Duration: spec.D(2 * time.Second),
				Quota:    &spec.Quota{Resource: res, Hard: hard},
			}, nil)
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
			if env.Result.Started.IsZero() || !env.Result.Ended.After(env.Result.Started) {
				t.Errorf("measured window %s .. %s, want it set", env.Result.Started, env.Result.Ended)
			}
			snap := env.Recorder.Snapshot(time.Now())
			if snap.Ops != r.Creates || snap.Outcomes[metrics.FailedPrecondition] != r.Rejected || snap.Outcomes[metrics.Success] != r.Admitted {
				t.Errorf("recorder: %d ops, %d failed-precondition, %d success; report: %d creates, %d rejected, %d admitted",
					snap.Ops, snap.Outcomes[metrics.FailedPrecondition], snap.Outcomes[metrics.Success], r.Creates, r.Rejected, r.Admitted)
			}
		})
	}
}

// TestQuotaBoundsOnLocalControlPlane checks that an operations bound and
// Ctrl-C both end the run with its figures and checks.
func TestQuotaBoundsOnLocalControlPlane(t *testing.T) {
	cfg := local.Config(t)
	tests := []struct {
		name        string
		operations  int64
		cancelAfter time.Duration
	}{
		{"operations bound", 40, 0},
		{"interrupted", 0, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec.Spec{Scenario: spec.ScenarioQuota, Writers: 4, Operations: tt.operations, Quota: &spec.Quota{Hard: 10}}
			if tt.cancelAfter > 0 {
				s.Duration = spec.D(time.Minute)
			}
			env := clustertest.NewEnv(t, cfg, s, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelAfter > 0 {
				time.AfterFunc(tt.cancelAfter, cancel)
			}
			start := time.Now()
			if err := Run(ctx, env); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Run took %s, want it to stop promptly", took)
			}
			r := env.Result.Quota
			if r == nil {
				t.Fatal("no Quota report")
			}
			if tt.operations > 0 && r.Creates != tt.operations {
				t.Errorf("%d creates, want exactly the %d operations", r.Creates, tt.operations)
			}
			if r.Admitted != 10 || r.Rejected == 0 {
				t.Errorf("admitted %d, rejected %d: want 10 and some", r.Admitted, r.Rejected)
			}
			if len(env.Result.Checks) != 3 {
				t.Fatalf("%d checks, want 3", len(env.Result.Checks))
			}
			for _, c := range env.Result.Checks {
				if !c.Passed {
					t.Errorf("check %q failed: %s", c.Name, c.Detail)
				}
			}
		})
	}
}
