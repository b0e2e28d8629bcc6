package workload

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/results/resultstest"
	"github.com/kb-bench/kb-bench/spec"
)

// The integration tests run the engine against a real kube-apiserver and
// etcd on loopback, one control plane for the whole package (see
// clustertest.Shared).

// local is the package's control plane, started by the first test that
// needs it.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

var runSeq atomic.Int64

// runID returns a run id no other test uses.
func runID() string { return fmt.Sprintf("it-%d-%d", os.Getpid(), runSeq.Add(1)) }

// logWriter sends the engine's log to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// runOn runs s on the control plane and logs its summary.
func runOn(ctx context.Context, t testing.TB, cfg *rest.Config, s spec.Spec) *results.Result {
	t.Helper()
	return runWith(ctx, t, s, Options{Config: cfg})
}

// runWith runs s with o (its run id, version, log and namespace
// finalizing filled in here) and logs the summary table.
func runWith(ctx context.Context, t testing.TB, s spec.Spec, o Options) *results.Result {
	t.Helper()
	o.RunID, o.Version, o.Log, o.FinalizeNamespace = runID(), "test", logWriter{t}, true
	out, err := Run(ctx, resolved(t, s), o)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := text.WriteTable(&table, out.Result); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if out.Result.Summary.Ops == 0 {
		t.Fatalf("no operations ran")
	}
	// The result.json a run writes reports the nearest rank of its stored
	// histograms, recomputed by a decoder of the test's own.
	doc, err := results.Encode(out.Result)
	if err != nil {
		t.Fatal(err)
	}
	if err := resultstest.CheckPercentiles(doc); err != nil {
		t.Errorf("the reported percentiles are not the nearest rank of the stored histograms: %v", err)
	}
	return out.Result
}

// backoff parses a --backoff value.
func backoff(t testing.TB, s string) *spec.Backoff {
	t.Helper()
	b, err := spec.ParseBackoff(s)
	if err != nil {
		t.Fatal(err)
	}
	return &b
}

// assertServerMatch checks the apiserver counted exactly the requests
// kb-bench's clients sent in the measured window.
func assertServerMatch(t *testing.T, res *results.Result) {
	t.Helper()
	if sc := res.Server; sc == nil || !sc.Available || !sc.Match || len(sc.Requests) == 0 {
		t.Errorf("server cross-check %+v, want every count to match the apiserver's", sc)
	}
}

func count(m map[string]int64, o metrics.Outcome) int64 { return m[o.String()] }

func assertNoLostUpdates(t *testing.T, res *results.Result) {
	t.Helper()
	if len(res.Checks) == 0 {
		t.Fatalf("no correctness checks")
	}
	for _, c := range res.Checks {
		if !c.Passed || c.Lost != 0 {
			t.Errorf("check %s failed: expected %d observed %d lost %d: %s", c.Name, c.Expected, c.Observed, c.Lost, c.Detail)
		}
	}
}

const short = 2 * time.Second

// The behaviour of each strategy under contention, as the Kubernetes
// semantics say it must be.
func TestStrategiesOnTheRealAPIServer(t *testing.T) {
	cfg := local.Config(t)
	ctx := context.Background()
	base := spec.Spec{Writers: 6, Duration: spec.D(short)}

	t.Run("update: raw conflicts, no lost updates, the server agrees", func(t *testing.T) {
		s := base
		s.Strategy = spec.StrategyUpdate
		res := runOn(ctx, t, cfg, s)
		if count(res.Measurements.Outcomes, metrics.VersionConflict) == 0 {
			t.Errorf("no version conflicts with %d writers on one object", s.Writers)
		}
		if res.Summary.AttemptsMax != 1 {
			t.Errorf("update made up to %d attempts, want exactly 1 (a 409 ends the operation)", res.Summary.AttemptsMax)
		}
		assertNoLostUpdates(t, res)
		assertServerMatch(t, res)
	})

	t.Run("retry: every attempt counted, conflicts resolved", func(t *testing.T) {
		s := base
		s.Strategy = spec.StrategyRetry
		s.Backoff = backoff(t, "50,1ms,1.2,1")
		res := runOn(ctx, t, cfg, s)
		if res.Summary.AttemptsMax < 2 {
			t.Errorf("max attempts %d: retry never retried with %d writers on one object", res.Summary.AttemptsMax, s.Writers)
		}
		if count(res.Measurements.WriteOutcomes, metrics.VersionConflict) == 0 {
			t.Errorf("no conflicting write attempts were counted inside the retries")
		}
		if n := count(res.Measurements.Outcomes, metrics.VersionConflict); n != 0 || res.Measurements.GaveUp != 0 {
			t.Errorf("%d operations ended in a conflict (%d gave up), want none with 50 steps", n, res.Measurements.GaveUp)
		}
		if _, ok := res.Measurements.Histograms[results.HistBackoff]; !ok {
			t.Errorf("no backoff histogram")
		}
		assertNoLostUpdates(t, res)
	})

	t.Run("merge patch: the server absorbs conflicts", func(t *testing.T) {
		s := base
		s.Strategy, s.PatchType = spec.StrategyPatch, spec.PatchMerge
		res := runOn(ctx, t, cfg, s)
		if n := count(res.Measurements.WriteOutcomes, metrics.VersionConflict); n != 0 {
			t.Errorf("%d client-visible conflicts from a merge patch without precondition, want 0", n)
		}
		// A counter patched from a stale read loses increments: that
		// is what kb-bench reports, not an error in the run.
		t.Logf("lost updates with a blind merge patch: %s", results.FormatLost(res.Summary.LostUpdates))
	})

	t.Run("merge patch with precondition: optimistic lock", func(t *testing.T) {
		s := base
		s.Strategy, s.PatchType, s.PatchPrecondition = spec.StrategyPatch, spec.PatchMerge, true
		res := runOn(ctx, t, cfg, s)
		if count(res.Measurements.Outcomes, metrics.VersionConflict) == 0 {
			t.Errorf("no conflicts from a patch carrying resourceVersion with %d writers", s.Writers)
		}
		assertNoLostUpdates(t, res)
	})

	t.Run("json patch: compare-and-swap", func(t *testing.T) {
		s := base
		s.Strategy, s.PatchType = spec.StrategyPatch, spec.PatchJSON
		res := runOn(ctx, t, cfg, s)
		if count(res.Measurements.Outcomes, metrics.FailedPrecondition) == 0 {
			t.Errorf("no failed test ops with %d writers on one counter", s.Writers)
		}
		if n := count(res.Measurements.Outcomes, metrics.Other); n != 0 {
			t.Errorf("%d outcomes classed other: a failed test op must count as failed-precondition", n)
		}
		assertNoLostUpdates(t, res)
	})

	t.Run("unconditional update: lost updates detected", func(t *testing.T) {
		s := base
		s.Strategy, s.Unconditional = spec.StrategyUpdate, true
		res := runOn(ctx, t, cfg, s)
		if n := count(res.Measurements.WriteOutcomes, metrics.VersionConflict); n != 0 {
			t.Errorf("%d conflicts from PUTs without resourceVersion, want 0", n)
		}
		if res.Summary.LostUpdates == nil || *res.Summary.LostUpdates == 0 {
			t.Fatalf("no lost updates with %d writers doing last-write-wins on one counter", s.Writers)
		}
		c := res.Checks[0]
		if c.Passed || c.Lost != c.Expected-c.Observed || !strings.Contains(c.Detail, "updates were lost") {
			t.Errorf("check %+v does not say plainly that updates were lost", c)
		}
	})

	t.Run("ssa disjoint fields: no conflicts, nothing lost", func(t *testing.T) {
		s := base
		s.Strategy, s.Settings = spec.StrategySSA, map[string]any{"fields": "disjoint"}
		res := runOn(ctx, t, cfg, s)
		if n := count(res.Measurements.WriteOutcomes, metrics.VersionConflict) + count(res.Measurements.WriteOutcomes, metrics.FieldManagerConflict); n != 0 {
			t.Errorf("%d conflicts applying disjoint fields with per-writer managers, want 0", n)
		}
		if got := len(res.Checks); got != s.Writers {
			t.Errorf("%d checks, want one per writer", got)
		}
		assertNoLostUpdates(t, res)
	})

	t.Run("ssa shared field, per-writer managers: field-manager conflicts", func(t *testing.T) {
		s := base
		s.Strategy = spec.StrategySSA
		res := runOn(ctx, t, cfg, s)
		if count(res.Measurements.Outcomes, metrics.FieldManagerConflict) == 0 {
			t.Errorf("no field-manager conflicts with %d managers applying one field", s.Writers)
		}
		if n := count(res.Measurements.Outcomes, metrics.VersionConflict); n != 0 {
			t.Errorf("%d field-manager conflicts were classed as version conflicts", n)
		}
	})

	t.Run("ssa shared field with force: no conflicts", func(t *testing.T) {
		s := base
		s.Strategy, s.Force = spec.StrategySSA, true
		res := runOn(ctx, t, cfg, s)
		if n := count(res.Measurements.WriteOutcomes, metrics.FieldManagerConflict) + count(res.Measurements.WriteOutcomes, metrics.VersionConflict); n != 0 {
			t.Errorf("%d conflicts with force, want 0", n)
		}
	})

	t.Run("update disjoint fields over several objects: conflicts, nothing lost", func(t *testing.T) {
		s := base
		s.Strategy, s.Settings = spec.StrategyUpdate, map[string]any{"fields": "disjoint", "objects": 3, "distribution": "zipf"}
		res := runOn(ctx, t, cfg, s)
		if count(res.Measurements.Outcomes, metrics.VersionConflict) == 0 {
			t.Errorf("no conflicts: fields are disjoint but the resourceVersion is per object")
		}
		assertNoLostUpdates(t, res)
	})
}

func TestOpenLoopRateOnTheRealAPIServer(t *testing.T) {
	cfg := local.Config(t)
	s := spec.Spec{Writers: 4, Rate: 50, Duration: spec.D(short), Settings: map[string]any{"objects": 2}}
	res := runOn(context.Background(), t, cfg, s)
	// Every arrival due is accounted for: run, or dropped when no writer
	// was free. How many are dropped is the machine's: on a loaded one a
	// writer's operation can take longer than the 80ms 4 writers have at
	// 50/s.
	want := s.Rate * short.Seconds()
	ops, dropped := res.Summary.Ops, res.Measurements.Dropped
	if due := float64(ops + dropped); ops == 0 || due < want-1 || due > want+1 {
		t.Errorf("%d ops and %d arrivals dropped at %g/s for %v, want %v due in all and some run", ops, dropped, s.Rate, short, want)
	}
	if _, ok := res.Measurements.Histograms[results.HistOpRaw]; !ok {
		t.Errorf("open loop kept no raw latency histogram")
	}
	assertNoLostUpdates(t, res)
}

func TestBoundsOnTheRealAPIServer(t *testing.T) {
	cfg := local.Config(t)
	ctx := context.Background()

	t.Run("operations", func(t *testing.T) {
		res := runOn(ctx, t, cfg, spec.Spec{Writers: 4, Operations: 150, Strategy: spec.StrategyRetry})
		if res.Summary.Ops != 150 {
			t.Errorf("%d ops, want exactly 150", res.Summary.Ops)
		}
		assertNoLostUpdates(t, res)
	})

	t.Run("warm-up is excluded and recorded", func(t *testing.T) {
		res := runOn(ctx, t, cfg, spec.Spec{Writers: 4, Warmup: spec.D(time.Second), Duration: spec.D(time.Second)})
		if res.Measurements.WarmupOps == 0 {
			t.Errorf("no warm-up operations recorded")
		}
		// The warm-up drains before the first scrape, so the server's
		// counts cover exactly the measured operations.
		assertServerMatch(t, res)
		if s := res.Summary.Seconds; s < 1 {
			t.Errorf("measured %.2fs, want the 1s after the warm-up", s)
		}
		// The correctness check covers warm-up writes too.
		assertNoLostUpdates(t, res)
	})
}

// The engine, not its caller, says in the Result what the run ran
// against: the target it was given, and what the delaying proxy in front
// of etcd observed, read once the run is over.
func TestResultNamesItsTarget(t *testing.T) {
	cfg := local.Config(t)
	target := spec.TargetInfo{Kind: spec.TargetLocal, Server: cfg.Host, ServerVersion: "v1.37.1", Storage: spec.StorageMemory}
	reads := 0
	observed := spec.DelayObserved{Count: 42, Mean: spec.D(time.Millisecond), Max: spec.D(3 * time.Millisecond)}
	res := runWith(context.Background(), t, spec.Spec{Writers: 2, Operations: 20}, Options{Config: cfg, Target: target,
		EtcdDelay: func() spec.DelayObserved { reads++; return observed }})
	target.EtcdProxy = &observed
	if !reflect.DeepEqual(res.Target, target) || reads != 1 {
		t.Errorf("the result's target is %+v (the proxy read %d times), want %+v read once", res.Target, reads, target)
	}
}

// Ctrl-C: the run stops early, keeps its figures, still checks and cleans up.
func TestInterruptedRunKeepsFiguresAndCleansUp(t *testing.T) {
	cfg := local.Config(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Ctrl-C once the first second of the measured window has been seen.
	res := runWith(ctx, t, spec.Spec{Writers: 4, Duration: spec.D(time.Hour)},
		Options{Config: cfg, Progress: func(time.Duration, metrics.SeriesPoint) { cancel() }})
	if !res.Interrupted {
		t.Errorf("result not marked interrupted")
	}
	assertNoLostUpdates(t, res)
	assertNamespaceGone(t, cfg, res.Namespace)
}

func TestKeepLeavesTheNamespace(t *testing.T) {
	cfg := local.Config(t)
	res := runOn(context.Background(), t, cfg, spec.Spec{Writers: 2, Operations: 10, Keep: true})
	kube := kubernetes.NewForConfigOrDie(cfg)
	cms, err := kube.CoreV1().ConfigMaps(res.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("kept namespace holds %v (err %v), want the one object", cms, err)
	}
	ns, _ := kube.CoreV1().Namespaces().Get(context.Background(), res.Namespace, metav1.GetOptions{})
	if ns.Labels[k8s.LabelManagedBy] != "kb-bench" || ns.Labels[k8s.LabelRunID] != res.RunID {
		t.Errorf("namespace labels %v", ns.Labels)
	}
	if err := deleteNamespace(context.Background(), kube, res.Namespace, []groupResource{{"", "configmaps"}}, true); err != nil {
		t.Error(err)
	}
}

// assertNamespaceGone checks the run cleaned up: the namespace is gone
// (finalized by kb-bench, as a bare control plane has no namespace
// controller) and so are the objects.
func assertNamespaceGone(t *testing.T, cfg *rest.Config, name string) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cfg)
	ns, err := kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if err == nil {
		t.Errorf("namespace %s is still there (deletion timestamp %v, finalizers %v)", name, ns.DeletionTimestamp, ns.Spec.Finalizers)
	} else if !apierrors.IsNotFound(err) {
		t.Error(err)
	}
	cms, err := kube.CoreV1().ConfigMaps(name).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(cms.Items) != 0 {
		t.Errorf("namespace %s still holds %d ConfigMaps (err %v)", name, len(cms.Items), err)
	}
	pods, err := kube.CoreV1().Pods(name).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("namespace %s still holds %d Pods (err %v)", name, len(pods.Items), err)
	}
	leases, err := kube.CoordinationV1().Leases(name).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(leases.Items) != 0 {
		t.Errorf("namespace %s still holds %d Leases (err %v)", name, len(leases.Items), err)
	}
}

// Every registered scenario runs on the real apiserver through the
// engine's shared frame (namespace, clients, recorder, window, clean-up),
// returns its checks and its figures, every one valid, and its requests
// match the apiserver's counts exactly: adding a scenario to the registry
// puts it under this test. Where a scenario's settings make something
// happen (a quota that fills, a leader stopped), the figure that says so
// is there.
func TestEveryScenarioRunsAndMatchesTheServer(t *testing.T) {
	cfg := local.Config(t)
	// What some scenarios are made to do, and the figure (key: least
	// value) that must show it.
	happens := map[string]struct {
		settings map[string]any
		want     map[string]float64
	}{
		"quota": {map[string]any{"hard": 3}, map[string]float64{"admitted": 3, "rejected": 1, `hard{resource="count/configmaps"}`: 3}},
		"leader-election": {map[string]any{"leaseDuration": "1s", "renewDeadline": "500ms", "retryPeriod": "100ms", "failoverEvery": "700ms", "releaseOnCancel": true},
			map[string]float64{"failovers": 1, "failoversResolved": 1, `failoverTime{quantile="1"}`: 1, "leaderships": 2}},
		"controller-status": {nil, map[string]float64{`statusWrites{pods="owned"}`: 1, `statusWrites{pods="shared"}`: 1}},
	}
	for _, def := range Scenarios() {
		t.Run(def.Name, func(t *testing.T) {
			s := spec.Spec{Scenario: def.Name, Writers: 2, Duration: spec.D(short), Settings: happens[def.Name].settings}
			res := runOn(context.Background(), t, cfg, s)
			if res.Started.IsZero() || !res.Ended.After(res.Started) {
				t.Errorf("measured window %v to %v", res.Started, res.Ended)
			}
			if len(res.Checks) == 0 {
				t.Errorf("the scenario's checks did not reach the result")
			}
			if errs := results.ValidateFigures(field.NewPath("figures"), res.Figures); len(errs) > 0 {
				t.Errorf("the scenario's figures do not validate: %v", errs)
			}
			for _, w := range res.Warnings {
				if strings.Contains(w, "figure") {
					t.Errorf("warning: %s", w)
				}
			}
			for key, least := range happens[def.Name].want {
				if f, ok := res.FigureNamed(key); !ok || f.Value < least {
					t.Errorf("figure %s = %v (there: %t), want at least %v; figures %+v", key, f.Value, ok, least, res.Figures)
				}
			}
			for _, f := range res.Figures {
				t.Logf("figure %s = %v %s", f.Key(), f.Value, f.Unit)
			}
			assertServerMatch(t, res)
			assertNamespaceGone(t, cfg, res.Namespace)
		})
	}
}
