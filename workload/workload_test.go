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
		{"unknown scenario", spec.Spec{Scenario: "chaos"}, Options{Config: cfg, RunID: "x"}, true, `scenario: Unsupported value: "chaos"`},
		{"invalid settings", spec.Spec{Settings: map[string]any{"objects": -1}}, Options{Config: cfg, RunID: "x"}, true, "settings.objects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tt.spec, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || spec.IsInput(err) != tt.wantInput {
				t.Errorf("Run = %v (input error: %v), want an error saying %q (input error: %v)", err, spec.IsInput(err), tt.want, tt.wantInput)
			}
		})
	}
}

// Resolve writes the scenario's defaulted settings back into the spec, so
// the result records what ran, and names each problem by its path.
func TestResolve(t *testing.T) {
	s := spec.Spec{Settings: map[string]any{"distribution": "zipf"}}
	def, _, errs := Resolve(&s)
	if len(errs) > 0 || def.Name != "counter" {
		t.Fatalf("Resolve = %s, %v", def.Name, errs)
	}
	if s.Settings["zipfExponent"] != 1.1 || s.Settings["objects"] != float64(1) || s.Strategy != spec.StrategyUpdate {
		t.Errorf("resolved spec %+v, want the counter's defaults recorded", s)
	}
	bad := spec.Spec{Writers: -1, Settings: map[string]any{"objekts": 3}}
	_, _, errs = Resolve(&bad)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if got := strings.Join(fields, " "); got != "writers settings.objekts" {
		t.Errorf("errors at %q (%v), want writers, settings.objekts", got, errs)
	}
}
