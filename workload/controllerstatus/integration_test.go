package controllerstatus

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// local is the real kube-apiserver and etcd the package's integration tests
// share.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

func TestRunLocal(t *testing.T) {
	cfg := local.Config(t)

	base := spec.Spec{
		Scenario:   spec.ScenarioControllerStatus,
		Writers:    1,
		Clients:    1,
		Duration:   spec.D(700 * time.Millisecond),
		Controller: &spec.Controller{Controllers: 3, ObjectsPerController: 4, SharedObjects: 2},
	}
	with := func(f func(s *spec.Spec)) spec.Spec {
		s := base
		c := *base.Controller
		s.Controller = &c
		f(&s)
		return s
	}
	tests := []struct {
		name string
		spec spec.Spec
		// sharedConflicts: whether 409s on the shared Pods are expected.
		sharedConflicts bool
		// lost: whether shared Pods must lose status updates (the checks fail).
		lost bool
	}{
		{name: "update", spec: with(func(s *spec.Spec) { s.Strategy = spec.StrategyUpdate }), sharedConflicts: true},
		{name: "update-2-workers-2-clients", spec: with(func(s *spec.Spec) {
			s.Strategy, s.Writers, s.Clients = spec.StrategyUpdate, 2, 2
		}), sharedConflicts: true},
		{name: "retry", spec: with(func(s *spec.Spec) { s.Strategy = spec.StrategyRetry }), sharedConflicts: true},
		{name: "strategic-patch", spec: with(func(s *spec.Spec) {
			s.Strategy, s.PatchType = spec.StrategyPatch, spec.PatchStrategic
		})},
		{name: "patch-with-precondition", spec: with(func(s *spec.Spec) {
			s.Strategy, s.PatchType, s.PatchPrecondition = spec.StrategyPatch, spec.PatchStrategic, true
		}), sharedConflicts: true},
		// A merge patch replaces the whole conditions list: every write
		// drops the other controllers' conditions without a conflict.
		{name: "merge-patch-loses-updates", spec: with(func(s *spec.Spec) {
			s.Strategy, s.PatchType = spec.StrategyPatch, spec.PatchMerge
		}), lost: true},
		{name: "ssa-per-controller", spec: with(func(s *spec.Spec) {
			s.Strategy, s.FieldManager = spec.StrategySSA, spec.ManagerPerWriter
		})},
		// One manager for every controller: each apply removes the
		// conditions the manager applied before for the others.
		{name: "ssa-shared-manager-loses-updates", spec: with(func(s *spec.Spec) {
			s.Strategy, s.FieldManager = spec.StrategySSA, spec.ManagerShared
		}), lost: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			env := clustertest.NewEnv(t, cfg, tt.spec, &log)
			st, err := run(t.Context(), env)
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, log.String())
			}
			snap := env.Recorder.Snapshot(time.Now())
			// The window excludes setup and verification; it covers the
			// duration, give or take the last reconciles finishing.
			if w := env.Result.Ended.Sub(env.Result.Started); w < tt.spec.Duration.Duration || w > tt.spec.Duration.Duration+time.Second {
				t.Errorf("measured window %s, want about the %s duration", w, tt.spec.Duration)
			}
			t.Logf("%s: %d ops in %s (%.0f/s); owned: %d writes, %d conflicts; shared: %d writes, %d conflicts",
				tt.name, snap.Ops, tt.spec.Duration, float64(snap.Ops)/tt.spec.Duration.Seconds(),
				st.ownedWrites, st.ownedConflicts, st.sharedWrites, st.sharedConflicts)

			if st.ownedWrites == 0 || st.sharedWrites == 0 {
				t.Fatalf("no writes on owned (%d) or shared (%d) Pods", st.ownedWrites, st.sharedWrites)
			}
			if st.ownedConflicts != 0 {
				t.Errorf("%d conflicts on owned Pods, which only their controller writes", st.ownedConflicts)
			}
			if got := st.sharedConflicts > 0; got != tt.sharedConflicts {
				t.Errorf("conflicts on shared Pods: %d, want some: %t", st.sharedConflicts, tt.sharedConflicts)
			}
			recorded := snap.AttemptOutcomes[metrics.Write][metrics.VersionConflict] + snap.AttemptOutcomes[metrics.Write][metrics.FieldManagerConflict]
			if recorded != st.ownedConflicts+st.sharedConflicts {
				t.Errorf("recorder counts %d conflicting writes, the scenario %d", recorded, st.ownedConflicts+st.sharedConflicts)
			}
			if snap.Outcomes[metrics.Other]+snap.Outcomes[metrics.ServerError]+snap.Outcomes[metrics.Timeout] > 0 {
				t.Errorf("unexpected failures: %v %v", snap.Outcomes, snap.Errors)
			}

			checks := env.Result.Checks
			if want := 3 + 2; len(checks) != want {
				t.Fatalf("%d checks, want %d (one per controller, one per shared Pod): %+v", len(checks), want, checks)
			}
			for _, c := range checks {
				shared := strings.Contains(c.Name, "shared Pod")
				switch {
				case !shared || !tt.lost:
					if !c.Passed || c.Lost != 0 || c.Observed != c.Expected {
						t.Errorf("check failed: %+v", c)
					}
				case c.Passed || c.Lost == 0:
					t.Errorf("check passed, but this strategy loses other controllers' conditions: %+v", c)
				}
			}
		})
	}
}

func TestRunLocalOperations(t *testing.T) {
	cfg := local.Config(t)
	s := spec.Spec{
		Scenario:   spec.ScenarioControllerStatus,
		Writers:    2,
		Operations: 57,
		Warmup:     spec.D(200 * time.Millisecond),
		Controller: &spec.Controller{Controllers: 2, ObjectsPerController: 3, SharedObjects: 1},
	}
	env := clustertest.NewEnv(t, cfg, s, nil)
	// Operations is the only bound here (Defaults sets no duration); the
	// test's own deadline guards against a run that never ends.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := run(ctx, env); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the run did not stop at its operations bound")
	}
	snap := env.Recorder.Snapshot(time.Now())
	if w := env.Result.Ended.Sub(env.Result.Started); w <= 0 || env.Result.Started.Sub(start) < 200*time.Millisecond {
		t.Errorf("measured window %s from %s after Run began: want it to start after the 200ms warm-up", w, env.Result.Started.Sub(start))
	}
	if snap.Ops != 57 {
		t.Errorf("measured %d operations, want exactly 57", snap.Ops)
	}
	if snap.WarmupOps == 0 {
		t.Errorf("no warm-up operations recorded in a 200ms warm-up")
	}
	for _, c := range env.Result.Checks {
		if !c.Passed {
			t.Errorf("check failed: %+v", c)
		}
	}
}

// TestRunLocalInterrupted stops a long run early, as Ctrl-C does: the run
// ends promptly, reconciles in flight finish rather than fail, and the Pods
// are still verified.
func TestRunLocalInterrupted(t *testing.T) {
	cfg := local.Config(t)
	s := spec.Spec{
		Scenario:   spec.ScenarioControllerStatus,
		Writers:    2,
		Duration:   spec.D(time.Minute),
		Controller: &spec.Controller{Controllers: 3, ObjectsPerController: 3, SharedObjects: 1},
	}
	env := clustertest.NewEnv(t, cfg, s, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 800*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := run(ctx, env); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run took %s after an interrupt at 800ms", took)
	}
	snap := env.Recorder.Snapshot(time.Now())
	if snap.Ops == 0 {
		t.Fatal("no operations before the interrupt")
	}
	if n := snap.Outcomes[metrics.Other] + snap.Outcomes[metrics.Timeout]; n > 0 {
		t.Errorf("%d reconciles failed at the interrupt: %v", n, snap.Errors)
	}
	if len(env.Result.Checks) != 3+1 {
		t.Fatalf("%d checks after an interrupt, want 4", len(env.Result.Checks))
	}
	for _, c := range env.Result.Checks {
		if !c.Passed {
			t.Errorf("check failed: %+v", c)
		}
	}
}
