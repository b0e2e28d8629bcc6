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
		scenario  string
		opts      Options
		wantInput bool
		want      string
	}{
		{"no config", spec.ScenarioCounter, Options{RunID: "x"}, false, "Options.Config"},
		{"no run id", spec.ScenarioCounter, Options{Config: cfg}, false, "Options.RunID"},
		{"unknown scenario", "chaos", Options{Config: cfg, RunID: "x"}, true, "not known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec.Default()
			s.Scenario = tt.scenario
			_, err := Run(context.Background(), s, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || spec.IsInput(err) != tt.wantInput {
				t.Errorf("Run = %v (input error: %v), want an error saying %q (input error: %v)", err, spec.IsInput(err), tt.want, tt.wantInput)
			}
		})
	}
}

func TestWriterCountInOpenLoop(t *testing.T) {
	s := spec.Spec{Writers: 8, Rate: 100, MaxInFlight: 32}
	if got := writerCount(s); got != 32 {
		t.Errorf("open loop with max-in-flight 32: %d writers, want 32", got)
	}
	s = spec.Spec{Writers: 8}
	if got := writerCount(s); got != 8 {
		t.Errorf("closed loop: %d writers, want 8", got)
	}
}
