package counter

import (
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results"
)

func shared(pairs ...[2]int64) []sharedTally {
	t := make([]sharedTally, len(pairs))
	for i, p := range pairs {
		t[i].successes.Store(p[0])
		t[i].uncertain.Store(p[1])
	}
	return t
}

func TestSharedChecks(t *testing.T) {
	names := []string{"kb-bench-0"}
	tests := []struct {
		name       string
		objects    map[string]map[string]string
		tally      [2]int64 // successes, uncertain
		wantPassed bool
		wantLost   int64
		wantDetail string // a phrase the detail must hold ("" for none)
	}{
		{"every increment shows", obj("counter", "120"), [2]int64{120, 0}, true, 0, ""},
		{"lost updates", obj("counter", "100"), [2]int64{120, 0}, false, 20, "20 updates were lost"},
		{"lost beside uncertain writes is a lower bound", obj("counter", "100"), [2]int64{120, 3}, false, 20, "lower bound"},
		{"a timed-out write that landed passes", obj("counter", "122"), [2]int64{120, 3}, true, 0, "2 writes that timed out"},
		{"above every write", obj("counter", "130"), [2]int64{120, 3}, false, 0, "another client"},
		{"absent field reads 0", map[string]map[string]string{"kb-bench-0": {}}, [2]int64{0, 0}, true, 0, ""},
		{"absent field after increments is loss", map[string]map[string]string{"kb-bench-0": {}}, [2]int64{4, 0}, false, 4, "4 updates were lost"},
		{"not a number", obj("counter", "x"), [2]int64{1, 0}, false, 0, "not a number"},
		{"object gone", map[string]map[string]string{}, [2]int64{1, 0}, false, 0, "is gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := sharedChecks(names, tt.objects, "counter", shared(tt.tally))
			if len(checks) != 1 {
				t.Fatalf("got %d checks, want 1", len(checks))
			}
			assertCheck(t, checks[0], tt.wantPassed, tt.wantLost, tt.wantDetail)
			if checks[0].Expected != tt.tally[0] {
				t.Errorf("Expected = %d, want the %d successful increments", checks[0].Expected, tt.tally[0])
			}
		})
	}
}

func TestDisjointChecks(t *testing.T) {
	names := []string{"kb-bench-0", "kb-bench-1"}
	keys := []string{"w-0", "w-1"}
	tests := []struct {
		name       string
		objects    map[string]map[string]string
		tallies    [][]fieldTally
		wantPassed []bool
		wantLost   []int64
		wantDetail []string
	}{
		{
			name: "each field ends at its writer's last value",
			objects: map[string]map[string]string{
				"kb-bench-0": {"w-0": "3", "w-1": "5"},
				"kb-bench-1": {"w-0": "2", "w-1": "0"},
			},
			tallies:    [][]fieldTally{{{3, 0}, {2, 0}}, {{5, 0}, {0, 0}}},
			wantPassed: []bool{true, true},
			wantLost:   []int64{0, 0},
			wantDetail: []string{"", ""},
		},
		{
			name: "a stale copy overwrote writer 1's field",
			objects: map[string]map[string]string{
				"kb-bench-0": {"w-0": "3", "w-1": "4"},
				"kb-bench-1": {"w-0": "2", "w-1": "1"},
			},
			tallies:    [][]fieldTally{{{3, 0}, {2, 0}}, {{5, 0}, {2, 0}}},
			wantPassed: []bool{true, false},
			wantLost:   []int64{0, 2},
			wantDetail: []string{"", "2 updates were lost: writer 1"},
		},
		{
			name: "a removed field (shared apply manager) is lost",
			objects: map[string]map[string]string{
				"kb-bench-0": {"w-1": "5"},
				"kb-bench-1": {},
			},
			tallies:    [][]fieldTally{{{3, 0}, {0, 0}}, {{5, 0}, {0, 0}}},
			wantPassed: []bool{false, true},
			wantLost:   []int64{3, 0},
			wantDetail: []string{"3 updates were lost", ""},
		},
		{
			name: "loss in one object is not hidden by a landed write in another",
			objects: map[string]map[string]string{
				"kb-bench-0": {"w-0": "4", "w-1": "0"},
				"kb-bench-1": {"w-0": "1", "w-1": "0"},
			},
			tallies:    [][]fieldTally{{{3, 1}, {2, 0}}, {{0, 0}, {0, 0}}},
			wantPassed: []bool{false, true},
			wantLost:   []int64{1, 0},
			wantDetail: []string{"1 updates were lost", ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := disjointChecks(names, tt.objects, keys, tt.tallies)
			if len(checks) != len(keys) {
				t.Fatalf("got %d checks, want one per writer (%d)", len(checks), len(keys))
			}
			for i, c := range checks {
				assertCheck(t, c, tt.wantPassed[i], tt.wantLost[i], tt.wantDetail[i])
			}
		})
	}
}

func obj(key, value string) map[string]map[string]string {
	return map[string]map[string]string{"kb-bench-0": {key: value}}
}

func assertCheck(t *testing.T, c results.Check, passed bool, lost int64, detail string) {
	t.Helper()
	if c.Passed != passed || c.Lost != lost {
		t.Errorf("%s: passed=%v lost=%d, want passed=%v lost=%d (detail: %s)", c.Name, c.Passed, c.Lost, passed, lost, c.Detail)
	}
	if detail == "" && !c.Passed {
		t.Errorf("%s failed without the test expecting a detail", c.Name)
	}
	if detail != "" && !strings.Contains(c.Detail, detail) {
		t.Errorf("%s: detail %q does not say %q", c.Name, c.Detail, detail)
	}
	if !c.Passed && c.Detail == "" {
		t.Errorf("%s failed without a sentence saying why", c.Name)
	}
}
