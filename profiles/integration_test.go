package profiles

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/resultstest"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

// local is the real kube-apiserver and etcd the package's integration tests
// share.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

// TestShippedRunLocal runs every shipped profile, shortened, through the
// engine against the real local control plane: each must run as shipped and
// show what its name promises.
func TestShippedRunLocal(t *testing.T) {
	cfg := local.Config(t)

	// promise checks what a profile's name says, on its result.
	promise := map[string]func(res *results.Result) string{
		"counter": func(res *results.Result) string {
			if res.Measurements.Outcomes["conflict"] == 0 {
				return "8 writers on one counter with update saw no 409"
			}
			return ""
		},
		"hot-key": func(res *results.Result) string {
			if res.Measurements.Outcomes["conflict"] == 0 {
				return "zipf traffic on hot keys saw no 409"
			}
			return ""
		},
		"custom-resource": func(res *results.Result) string {
			if res.Measurements.Outcomes["conflict"] == 0 {
				return "8 writers on one custom resource's status with update saw no 409"
			}
			return ""
		},
		"lease-renewal": func(res *results.Result) string {
			if n := res.Measurements.Outcomes["conflict"]; n > 0 {
				return "holders renewing their own Leases got 409s"
			}
			return ""
		},
		"informer": func(res *results.Result) string {
			if f, ok := res.FigureNamed(`watchDelay{quantile="0.99",watcher="plain"}`); !ok || f.Value == 0 {
				return "the watchers timed no write"
			}
			if _, ok := res.FigureNamed(`conflictsByCause{cause="staleRead"}`); !ok {
				return "no 409s by cause"
			}
			return ""
		},
		"ssa-disjoint": func(res *results.Result) string {
			if n := res.Measurements.Outcomes["field-manager-conflict"] + res.Measurements.Outcomes["conflict"]; n > 0 {
				return "writers applying disjoint fields got conflicts"
			}
			return ""
		},
		"ssa-shared": func(res *results.Result) string {
			if res.Measurements.Outcomes["field-manager-conflict"] == 0 {
				return "managers applying one field without force saw no field-manager conflict"
			}
			return ""
		},
	}

	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p, err := Shipped(name, resolve)
			if err != nil {
				t.Fatal(err)
			}
			s := p.Spec
			s.Duration = spec.D(1500 * time.Millisecond)
			// Run resolves the spec (defaults and validation) itself.
			r, errs := workload.Resolve(s)
			if len(errs) > 0 {
				t.Fatal(spec.Describe(errs))
			}
			out, err := workload.Run(t.Context(), r, workload.Options{
				Config: cfg,
				// A new namespace each run, finalized at the end: the
				// shared control plane has no namespace controller.
				RunID:             fmt.Sprintf("profile-%s-%d", name, time.Now().UnixNano()),
				Log:               testLog{t},
				FinalizeNamespace: true,
			})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			res := out.Result
			// The result records the scenario and its settings as they ran:
			// the profile's, resolved.
			if res.Spec.Scenario != p.Spec.Scenario || !reflect.DeepEqual(res.Spec.Settings, r.Spec.Settings) {
				t.Errorf("result records %s %v, want %s %v", res.Spec.Scenario, res.Spec.Settings, p.Spec.Scenario, r.Spec.Settings)
			}
			if res.Measurements.Ops == 0 {
				t.Errorf("no operations measured")
			}
			// Every profile's requests match the apiserver's own counts.
			if sc := res.Server; resultstest.ServerAgrees(sc) != nil {
				t.Errorf("server cross-check: %v, want the apiserver's counts to equal kb-bench's", resultstest.ServerAgrees(sc))
			} else if name == "quota" && len(sc.Internal) == 0 {
				t.Errorf("the apiserver's own ResourceQuota status updates were not reported")
			}
			for _, c := range res.Checks {
				switch {
				case c.Passed:
				case name == "ssa-shared":
					// Without force, a writer that read a stale counter and
					// applies the value already there becomes a co-owner:
					// the apply succeeds and changes nothing, which the
					// counter check rightly reports as lost increments.
					t.Logf("check failed, as SSA co-ownership allows: %+v", c)
				default:
					t.Errorf("check failed: %+v", c)
				}
			}
			if check := promise[name]; check != nil {
				if msg := check(res); msg != "" {
					t.Errorf("%s (outcomes %v)", msg, res.Measurements.Outcomes)
				}
			}
			t.Logf("%s: %d ops, %.0f/s, outcomes %v, p99 %s", name, res.Summary.Ops, res.Summary.Throughput, res.Summary.Outcomes, res.Summary.Latency.P99)
		})
	}
}

// testLog sends the engine's notes to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
