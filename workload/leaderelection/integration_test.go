package leaderelection_test

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
	"github.com/kb-bench/kb-bench/workload/leaderelection"
)

// local is the real kube-apiserver and etcd the package's integration tests
// share.
var local clustertest.Shared

// TestMain also serves as the candidate processes of the pause fault's
// runs, which start this test binary.
func TestMain(m *testing.M) {
	if status, ok := leaderelection.CandidateMain(); ok {
		os.Exit(status)
	}
	os.Exit(local.Main(m))
}

var runSeq atomic.Int64

// logWriter sends the engine's log to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// runScenario runs s as the leader-election scenario through the engine
// and returns the outcome and the scenario's report.
func runScenario(ctx context.Context, t *testing.T, cfg *rest.Config, s spec.Spec, o workload.Options) (*workload.Outcome, *leaderelection.Report) {
	t.Helper()
	s.Scenario = leaderelection.Name
	r, errs := workload.Resolve(s)
	if len(errs) > 0 {
		t.Fatal(spec.Describe(errs))
	}
	o.Config, o.RunID, o.Version, o.Log, o.FinalizeNamespace = cfg, fmt.Sprintf("le-%d-%d", os.Getpid(), runSeq.Add(1)), "test", logWriter{t}, true
	out, err := workload.Run(ctx, r, o)
	if err != nil {
		t.Fatal(err)
	}
	report, ok := out.Report.(*leaderelection.Report)
	if !ok {
		t.Fatalf("report is a %T, want *leaderelection.Report", out.Report)
	}
	return out, report
}

// leaseRequests sums the apiserver's counts of requests on Leases with
// the given verbs whose code passes code.
func leaseRequests(sc *results.ServerCheck, code func(string) bool, verbs ...string) int64 {
	var n int64
	for _, r := range sc.Requests {
		if r.Resource != "leases.coordination.k8s.io" || !code(r.Code) {
			continue
		}
		for _, v := range verbs {
			if r.Verb == v {
				n += r.Server
			}
		}
	}
	return n
}

func anyCode(string) bool       { return true }
func success(code string) bool  { return strings.HasPrefix(code, "2") }
func conflict(code string) bool { return code == "409" }

// assertServerAgrees checks that the apiserver counted, in the measured
// window, exactly the Lease requests the report counts, and that the
// recorder measured the same writes.
func assertServerAgrees(t *testing.T, res *results.Result, r *leaderelection.Report) {
	t.Helper()
	sc := res.Server
	if err := resultstest.ServerAgrees(sc); err != nil {
		t.Fatalf("server cross-check: %v, want every count to match the apiserver's", err)
	}
	reads := r.Acquire.Reads + r.Renew.Reads + r.Release.Reads
	conflicts := r.Acquire.Conflicts + r.Renew.Conflicts + r.Release.Conflicts
	errs := r.Acquire.Errors + r.Renew.Errors + r.Release.Errors
	if errs != 0 {
		t.Errorf("%d Lease requests failed other than by a 409", errs)
	}
	if got := leaseRequests(sc, success, "PUT", "POST"); got != leaseWrites(res)-conflicts {
		t.Errorf("the apiserver answered %d Lease writes with 2xx, the result counts %d writes of which %d conflicted", got, leaseWrites(res), conflicts)
	}
	if got := leaseRequests(sc, conflict, "PUT", "POST"); got != conflicts {
		t.Errorf("the apiserver answered %d Lease writes with 409, the report counts %d", got, conflicts)
	}
	if got := leaseRequests(sc, anyCode, "GET"); got != reads {
		t.Errorf("the apiserver counted %d Lease reads, the report %d", got, reads)
	}
	if res.Summary.Ops != leaseWrites(res) {
		t.Errorf("the recorder measured %d operations, the result counts %d Lease writes", res.Summary.Ops, leaseWrites(res))
	}
}

// leaseWrites adds up the Lease writes of every phase in res's figures.
func leaseWrites(res *results.Result) int64 {
	var n int64
	for _, f := range res.Figures {
		if f.Name == "leaseWrites" {
			n += int64(f.Value)
		}
	}
	return n
}

// timings are the settings of a quick run: a 2s lease keeps failover with
// and without release apart. client-go compares Lease records with their
// times cut to the second, so a standby's last sight of a change may be up
// to about a second old, and failover without release lands anywhere from
// about lease-1s to lease+2.2 retry periods.
func timings(failoverEvery time.Duration, release bool) map[string]any {
	return map[string]any{
		"leaseDuration": "2s", "renewDeadline": "1s", "retryPeriod": "200ms",
		"failoverEvery": failoverEvery.String(), "releaseOnCancel": release,
	}
}

func TestLeaderElectionOnLocalControlPlane(t *testing.T) {
	cfg := local.Config(t)
	const lease = 2 * time.Second
	tests := []struct {
		name    string
		release bool
		table   bool
	}{
		{"release on cancel", true, true},
		{"lease kept on stop", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, r := runScenario(t.Context(), t, cfg, spec.Spec{
				// 6s: on a loaded machine the window's first edge holds the
				// leader's renewals past its 1s renew deadline, so the
				// window may open leaderless and wait out the 2s lease
				// before its first failover.
				Writers: 3, Clients: 2, Warmup: spec.D(300 * time.Millisecond), Duration: spec.D(6 * time.Second),
				Settings: timings(time.Second, tt.release),
			}, workload.Options{})
			res := out.Result
			if tt.table {
				var b strings.Builder
				if err := text.WriteTable(&b, res); err != nil {
					t.Fatal(err)
				}
				t.Logf("\n%s", b.String())
			}

			if r.FirstLeader == "" {
				t.Errorf("no candidate was elected")
			}
			if len(res.Checks) != 1 || res.Checks[0].Name != leaderelection.CheckOneLeader || !res.Checks[0].Passed {
				t.Errorf("checks = %+v, want %q passed", res.Checks, leaderelection.CheckOneLeader)
			}
			if len(r.Overlaps) != 0 {
				t.Errorf("overlapping leadership: %+v", r.Overlaps)
			}
			f := r.FailoverTime
			if f.Resolved < 1 {
				t.Fatalf("%d failovers resolved of %d, want at least 1", f.Resolved, f.Count)
			}
			if tt.release {
				// A released Lease is free at once: a standby takes it at its
				// next retry, where without release it waits out the lease.
				// How soon is the machine's: at a load of 17 the fastest
				// of one failover took 3.28s. What release guarantees is
				// the release write; the times are logged.
				t.Logf("release on cancel: %d failovers resolved of %d, fastest %s (lease %s)", f.Resolved, f.Count, f.Min, lease)
				if r.Release.Writes < 1 {
					t.Errorf("no release writes in the window after %d stops", f.Count)
				}
			} else {
				// Standbys wait out the lease from their last sight of a
				// change, which is at most about a second old.
				if f.Min < lease/4 {
					t.Errorf("failover min %s without release, want about the lease duration %s", f.Min, lease)
				}
				if r.Release.Writes != 0 {
					t.Errorf("%d release writes without release on cancel", r.Release.Writes)
				}
			}
			if r.Transitions < f.Resolved || r.LeaseTransitions < f.Resolved {
				t.Errorf("transitions %d (Lease says %d), want at least the %d resolved failovers", r.Transitions, r.LeaseTransitions, f.Resolved)
			}
			if r.Acquire.Writes < 1 || r.Renew.Writes < 1 {
				t.Errorf("acquire writes %d, renew writes %d: want both", r.Acquire.Writes, r.Renew.Writes)
			}
			assertServerAgrees(t, res, r)

			if !reflect.DeepEqual(res.Figures, r.Figures()) {
				t.Errorf("result figures %+v, want the report's %+v", res.Figures, r.Figures())
			}
		})
	}
}

// TestLeaderElectionInterrupted stops a long run once the leader has been
// renewing for a while, as Ctrl-C does: the run ends with its figures, and
// the releasing leader gives the Lease up on the way out, inside the
// measured window.
func TestLeaderElectionInterrupted(t *testing.T) {
	cfg := local.Config(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := spec.Spec{Writers: 2, Duration: spec.D(time.Hour), Settings: map[string]any{
		"leaseDuration": "2s", "renewDeadline": "1s", "retryPeriod": "200ms", "releaseOnCancel": true,
	}}
	// Ctrl-C after the first second of the window in which Leases were written.
	out, r := runScenario(ctx, t, cfg, s, workload.Options{Progress: func(_ time.Duration, p metrics.SeriesPoint) {
		if p.Ops > 0 {
			cancel()
		}
	}})
	if !out.Result.Interrupted {
		t.Errorf("result not marked interrupted")
	}
	if r.FirstLeader == "" || r.Renew.Writes == 0 {
		t.Fatalf("report %+v, want a leader that renewed", r)
	}
	if r.Release.Writes != 1 || r.Release.Conflicts != 0 {
		t.Errorf("%d release writes (%d conflicts), want the last leader's one, successful", r.Release.Writes, r.Release.Conflicts)
	}
	assertServerAgrees(t, out.Result, r)
}

// TestLeaderElectionOperationsBound ends a run by its operations: the
// run stops soon after the 20th measured Lease write, long before its
// duration would.
func TestLeaderElectionOperationsBound(t *testing.T) {
	cfg := local.Config(t)
	s := spec.Spec{Writers: 2, Operations: 20, Duration: spec.D(time.Hour), Settings: map[string]any{
		"leaseDuration": "1s", "renewDeadline": "500ms", "retryPeriod": "100ms",
	}}
	out, r := runScenario(t.Context(), t, cfg, s, workload.Options{})
	res := out.Result
	if res.Interrupted {
		t.Errorf("result marked interrupted")
	}
	// After the 20th write the engine stops the candidates: each may have
	// one write in flight.
	if ops := res.Summary.Ops; ops < 20 || ops > 20+int64(s.Writers) {
		t.Errorf("measured %d operations, want 20 and at most one more per candidate", ops)
	}
	assertServerAgrees(t, res, r)
}
