package results

import (
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/spec"
)

// Describe puts the scenario's own words (what; each scenario package
// tests its own) between the scenario's name and the shared settings: the
// strategy, the loop (only for a scenario the engine's driver runs) and
// the bounds.
func TestDescribe(t *testing.T) {
	counterTraits := spec.Traits{Strategies: true, Driven: true}
	custom, err := spec.ParseBackoff("10,5ms,1.5,0.1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		s      spec.Spec
		traits spec.Traits
		what   string
		want   string
	}{
		{"defaults", spec.Spec{Scenario: "counter", Writers: 8}, counterTraits, "8 writers on 1 object, shared fields",
			"counter: 8 writers on 1 object, shared fields, strategy update, closed loop, 10s"},
		{"unconditional update", spec.Spec{Scenario: "counter", Strategy: spec.StrategyUpdate, Unconditional: true}, counterTraits, "x",
			"counter: x, strategy update without resourceVersion (last write wins), closed loop, 10s"},
		{"retry with the default backoff", spec.Spec{Scenario: "controller-status", Strategy: spec.StrategyRetry}, counterTraits, "4 controllers x 2 workers",
			"controller-status: 4 controllers x 2 workers, strategy retry (backoff default-retry), closed loop, 10s"},
		{"retry with a backoff of numbers", spec.Spec{Scenario: "counter", Strategy: spec.StrategyRetry, Backoff: &custom}, counterTraits, "x",
			"counter: x, strategy retry (backoff 10,5ms,1.5,0.1), closed loop, 10s"},
		{"retry without a backoff", spec.Spec{Scenario: "counter", Strategy: spec.StrategyRetry, Backoff: nil}, spec.Traits{Driven: true}, "x",
			"counter: x, strategy retry, closed loop, 10s"},
		{"patch with a precondition", spec.Spec{Scenario: "counter", Strategy: spec.StrategyPatch, PatchType: spec.PatchStrategic, PatchPrecondition: true}, counterTraits, "x",
			"counter: x, strategy patch strategic with resourceVersion precondition, closed loop, 10s"},
		{"json patch", spec.Spec{Scenario: "counter", Strategy: spec.StrategyPatch, PatchType: spec.PatchJSON}, counterTraits, "x",
			"counter: x, strategy patch json, closed loop, 10s"},
		{"apply, shared managers, force", spec.Spec{Scenario: "counter", Strategy: spec.StrategySSA, FieldManager: spec.ManagerShared, Force: true}, counterTraits, "x",
			"counter: x, strategy ssa (shared field managers, force), closed loop, 10s"},
		{"open loop with warm-up", spec.Spec{Scenario: "counter", Strategy: spec.StrategySSA, Rate: 750, Warmup: spec.D(time.Second), Duration: spec.D(4 * time.Second)}, counterTraits, "x",
			"counter: x, strategy ssa (per-writer field managers), open loop 750 ops/s (max 8 in flight), 4s after 1s warm-up"},
		{"think time, bounded by time or operations", spec.Spec{Scenario: "counter", ThinkTime: spec.D(50 * time.Millisecond), Duration: spec.D(time.Minute), Operations: 1000}, counterTraits, "x",
			"counter: x, strategy update, closed loop, think time 50ms, 1m0s or 1000 ops"},
		{"bounded by operations only", spec.Spec{Scenario: "quota", Writers: 16, Operations: 500}, spec.Traits{Driven: true}, "16 writers creating objects under a ResourceQuota of count/configmaps=50",
			"quota: 16 writers creating objects under a ResourceQuota of count/configmaps=50, closed loop, 500 ops"},
		{"not driven: no strategy, no loop", spec.Spec{Scenario: "leader-election", Writers: 5, Duration: spec.D(time.Minute)}, spec.Traits{}, "5 candidates on one Lease",
			"leader-election: 5 candidates on one Lease, 1m0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.s.Defaults(c.traits)
			if got := Describe(c.s, c.what, c.traits.Driven); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// A count says its noun in the plural it takes: "2 writers", "2 series"
// (a sweep's header once said "2 seriess").
func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		what string
		want string
	}{{1, "writer", "1 writer"}, {0, "writer", "0 writers"}, {2, "writer", "2 writers"}, {1, "series", "1 series"}, {2, "series", "2 series"}} {
		if got := words.Plural(tc.n, tc.what); got != tc.want {
			t.Errorf("words.Plural(%d, %q) = %q, want %q", tc.n, tc.what, got, tc.want)
		}
	}
}
