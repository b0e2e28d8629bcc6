package controllerstatus_test

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
	"github.com/kb-bench/kb-bench/workload/controllerstatus"
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

// runScenario runs s as the controller-status scenario through the engine,
// with opts' Progress, and returns the outcome and the scenario's report.
func runScenario(ctx context.Context, t *testing.T, cfg *rest.Config, s spec.Spec, progress func(time.Duration, metrics.SeriesPoint)) (*workload.Outcome, *controllerstatus.Report) {
	t.Helper()
	s.Scenario = controllerstatus.Name
	r, errs := workload.Resolve(s)
	if len(errs) > 0 {
		t.Fatal(spec.Describe(errs))
	}
	out, err := workload.Run(ctx, r, workload.Options{
		Config:            cfg,
		RunID:             fmt.Sprintf("cs-%d-%d", os.Getpid(), runSeq.Add(1)),
		Version:           "test",
		Log:               logWriter{t},
		FinalizeNamespace: true,
		Progress:          progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	report, ok := out.Report.(*controllerstatus.Report)
	if !ok {
		t.Fatalf("report is a %T, want *controllerstatus.Report", out.Report)
	}
	return out, report
}

// settings are the scenario's settings as a profile gives them.
func settings(controllers, owned, shared int) map[string]any {
	return map[string]any{"controllers": controllers, "objectsPerController": owned, "sharedObjects": shared}
}

// assertNoFailures checks that no operation failed other than by a 409.
func assertNoFailures(t *testing.T, res *results.Result) {
	t.Helper()
	for _, o := range []metrics.Outcome{metrics.Other, metrics.ServerError, metrics.Timeout} {
		if n := res.Measurements.Outcomes[o.String()]; n > 0 {
			t.Errorf("%d operations ended %s: %v", n, o, res.Measurements.Errors)
		}
	}
}

// statusWrites sums the apiserver's counts of writes to pods/status, and
// of those answered 409, from the server cross-check.
func statusWrites(sc *results.ServerCheck) (writes, conflicts int64) {
	for _, r := range sc.Requests {
		if r.Resource != "pods/status" || r.Verb == "GET" {
			continue
		}
		writes += r.Server
		if r.Code == "409" {
			conflicts += r.Server
		}
	}
	return writes, conflicts
}

func TestStrategiesOnTheRealAPIServer(t *testing.T) {
	cfg := local.Config(t)
	// A run of operations, not of time: 90 are five passes of every
	// controller over its 6 Pods, so each shared Pod is written by more
	// than one controller (a 409 or a lost status is then certain) however
	// slowly a loaded machine goes; 700ms once gave a worker 2 operations,
	// none on a shared Pod.
	base := spec.Spec{Writers: 1, Clients: 1, Operations: 90, Settings: settings(3, 4, 2)}
	with := func(f func(s *spec.Spec)) spec.Spec {
		s := base
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
		// table: log the run's summary table.
		table bool
	}{
		{name: "update", spec: with(func(s *spec.Spec) { s.Strategy = spec.StrategyUpdate }), sharedConflicts: true, table: true},
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
			out, st := runScenario(t.Context(), t, cfg, tt.spec, nil)
			res := out.Result
			if tt.table {
				var table strings.Builder
				if err := text.WriteTable(&table, res); err != nil {
					t.Fatal(err)
				}
				t.Logf("\n%s", table.String())
			}
			if res.Summary.Ops != tt.spec.Operations {
				t.Errorf("measured %d operations, want %d", res.Summary.Ops, tt.spec.Operations)
			}
			t.Logf("%s: %d ops (%.0f/s); owned: %d writes, %d conflicts; shared: %d writes, %d conflicts",
				tt.name, res.Summary.Ops, res.Summary.Throughput, st.OwnedWrites, st.OwnedConflicts, st.SharedWrites, st.SharedConflicts)

			if st.OwnedWrites == 0 || st.SharedWrites == 0 {
				t.Fatalf("no writes on owned (%d) or shared (%d) Pods", st.OwnedWrites, st.SharedWrites)
			}
			if st.OwnedConflicts != 0 {
				t.Errorf("%d conflicts on owned Pods, which only their controller writes", st.OwnedConflicts)
			}
			if got := st.SharedConflicts > 0; got != tt.sharedConflicts {
				t.Errorf("conflicts on shared Pods: %d, want some: %t", st.SharedConflicts, tt.sharedConflicts)
			}
			writes, conflicts := st.OwnedWrites+st.SharedWrites, st.OwnedConflicts+st.SharedConflicts
			if res.Summary.WriteAttempts != writes || res.Summary.Conflicts != conflicts {
				t.Errorf("the engine counts %d write attempts and %d conflicts, the scenario %d and %d",
					res.Summary.WriteAttempts, res.Summary.Conflicts, writes, conflicts)
			}
			assertNoFailures(t, res)

			// The apiserver saw exactly the status writes and 409s the
			// scenario counts.
			if err := resultstest.ServerAgrees(res.Server); err != nil {
				t.Fatalf("server cross-check: %v, want every count to match the apiserver's", err)
			}
			if w, c := statusWrites(res.Server); w != writes || c != conflicts {
				t.Errorf("the apiserver counts %d pods/status writes and %d 409s, the scenario %d and %d", w, c, writes, conflicts)
			}

			if !reflect.DeepEqual(res.Figures, st.Figures()) {
				t.Errorf("result figures %+v, want the report's %+v", res.Figures, st.Figures())
			}
			checks := res.Checks
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

// Every 409 has one cause, and the causes add up to the 409s, wherever
// the controllers read: a live GET is never stale; the watch cache and an
// informer may be, and the apiserver still counts what the run counts.
func TestReadSourcesTellEvery409ByItsCause(t *testing.T) {
	cfg := local.Config(t)
	for _, read := range spec.ReadSources {
		t.Run(string(read), func(t *testing.T) {
			// 80 operations, not a time: the four workers on the shared
			// Pod write it more than once each however slow the machine.
			s := spec.Spec{Writers: 2, Clients: 2, Strategy: spec.StrategyUpdate, Read: read,
				Operations: 80, Settings: settings(4, 1, 1)}
			out, _ := runScenario(t.Context(), t, cfg, s, nil)
			res := out.Result
			conflicts := res.Measurements.WriteOutcomes[metrics.VersionConflict.String()]
			figure := func(key string) float64 {
				f, ok := res.FigureNamed(key)
				if !ok {
					t.Fatalf("no figure %s among %v", key, res.Figures)
				}
				return f.Value
			}
			stale, over := figure(`conflictsByCause{cause="staleRead"}`), figure(`conflictsByCause{cause="overtaken"}`)
			t.Logf("%s: %d ops, %d 409s: %g stale at read, %g overtaken", read, res.Summary.Ops, conflicts, stale, over)
			if conflicts == 0 {
				t.Fatalf("no 409s to classify")
			}
			if int64(stale+over) != conflicts {
				t.Errorf("stale %g + overtaken %g, want the %d 409s", stale, over, conflicts)
			}
			if read == spec.ReadGet && stale != 0 {
				t.Errorf("%g 409s stale at read with a live GET, which sees every acknowledged write", stale)
			}
			assertNoFailures(t, res)
			if err := resultstest.ServerAgrees(res.Server); err != nil {
				t.Errorf("server cross-check: %v, want every count to match the apiserver's", err)
			}
			for _, c := range res.Checks {
				if !c.Passed {
					t.Errorf("check failed: %+v", c)
				}
			}
		})
	}
}

func TestOperationsBoundAfterWarmup(t *testing.T) {
	cfg := local.Config(t)
	s := spec.Spec{Writers: 2, Operations: 57, Warmup: spec.D(200 * time.Millisecond), Settings: settings(2, 3, 1)}
	start := time.Now()
	out, _ := runScenario(t.Context(), t, cfg, s, nil)
	res := out.Result
	if res.Started.Sub(start) < 200*time.Millisecond || !res.Ended.After(res.Started) {
		t.Errorf("measured window from %s to %s after Run began: want it to start after the 200ms warm-up",
			res.Started.Sub(start), res.Ended.Sub(start))
	}
	if res.Summary.Ops != 57 {
		t.Errorf("measured %d operations, want exactly 57", res.Summary.Ops)
	}
	if res.Measurements.WarmupOps == 0 {
		t.Errorf("no warm-up operations recorded in a 200ms warm-up")
	}
	if err := resultstest.ServerAgrees(res.Server); err != nil {
		t.Errorf("server cross-check: %v, want every count to match the apiserver's", err)
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("check failed: %+v", c)
		}
	}
}

// TestInterrupted stops a long run early, as Ctrl-C does: reconciles in
// flight finish rather than fail, and the Pods are still verified.
func TestInterrupted(t *testing.T) {
	cfg := local.Config(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := spec.Spec{Writers: 2, Duration: spec.D(time.Hour), Settings: settings(3, 3, 1)}
	// Ctrl-C once the first second of the measured window has been seen.
	out, _ := runScenario(ctx, t, cfg, s, func(time.Duration, metrics.SeriesPoint) { cancel() })
	res := out.Result
	if !res.Interrupted {
		t.Errorf("result not marked interrupted")
	}
	if res.Summary.Ops == 0 {
		t.Fatal("no operations before the interrupt")
	}
	assertNoFailures(t, res)
	if len(res.Checks) != 3+1 {
		t.Fatalf("%d checks after an interrupt, want 4", len(res.Checks))
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("check failed: %+v", c)
		}
	}
}
