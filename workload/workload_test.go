package workload

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/spec"
)

// What Run refuses before it touches the cluster.
func TestRunRefusesEarly(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := []struct {
		name      string
		spec      spec.Spec
		opts      Options
		wantInput bool
		want      string
	}{
		{"no config", spec.Spec{}, Options{RunID: "x"}, false, "Options.Config"},
		{"no run id", spec.Spec{}, Options{Config: cfg}, false, "Options.RunID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), resolved(t, tt.spec), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || spec.IsInput(err) != tt.wantInput {
				t.Errorf("Run = %v (input error: %v), want an error saying %q (input error: %v)", err, spec.IsInput(err), tt.want, tt.wantInput)
			}
		})
	}
}

// Resolve writes the scenario's defaulted settings back into the spec, so
// the result records what ran, and names each problem by its path.
func TestResolve(t *testing.T) {
	r, errs := Resolve(spec.Spec{Settings: map[string]any{"distribution": "zipf"}})
	if len(errs) > 0 || r.Def.Name != "counter" {
		t.Fatalf("Resolve = %s, %v", r.Def.Name, errs)
	}
	if s := r.Spec; s.Settings["zipfExponent"] != 1.1 || s.Settings["objects"] != float64(1) || s.Strategy != spec.StrategyUpdate {
		t.Errorf("resolved spec %+v, want the counter's defaults recorded", s)
	}
	if w := r.Workload(); !strings.HasPrefix(w, "counter: ") || !strings.Contains(w, "strategy update") {
		t.Errorf("resolved workload %q", w)
	}
	_, errs = Resolve(spec.Spec{Writers: -1, Settings: map[string]any{"objekts": 3}})
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if got := strings.Join(fields, " "); got != "writers settings.objekts" {
		t.Errorf("errors at %q (%v), want writers, settings.objekts", got, errs)
	}
}

// Every scenario says how it runs once, by its one constructor, from
// which its traits follow.
func TestEveryScenarioDeclaresHowItRuns(t *testing.T) {
	for _, def := range Scenarios() {
		t.Run(def.Name, func(t *testing.T) {
			n := 0
			for _, set := range []bool{def.Driven != nil, def.Sharded != nil, def.Continuous != nil} {
				if set {
					n++
				}
			}
			if n != 1 || def.NewSettings == nil {
				t.Errorf("%d constructors (want exactly one of Driven, Sharded, Continuous), NewSettings set %t", n, def.NewSettings != nil)
			}
			if tr := def.Traits(); tr.Shardable && !tr.Driven {
				t.Errorf("traits %+v: a scenario that runs in shards is driven", tr)
			}
		})
	}
}

// resolved is s resolved, which must be good.
func resolved(t testing.TB, s spec.Spec) *Resolved {
	t.Helper()
	r, errs := Resolve(s)
	if len(errs) > 0 {
		t.Fatal(spec.Describe(errs))
	}
	return r
}
