package bench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/store"
)

// saveSet saves copies of r as a set of n samples in dir, labelled as
// configuration cell of a matrix run; sample i starts i seconds after r.
func saveSet(t *testing.T, r *results.Result, dir, label string, cell, n int) {
	t.Helper()
	set := &results.ResultSet{RunID: "m", Label: label, Cell: cell}
	for i := 1; i <= n; i++ {
		c := *r
		c.Started = r.Started.Add(time.Duration(i) * time.Second)
		c.RunID = strings.ReplaceAll(label, "=", "-") + "-" + string(rune('0'+i))
		if err := store.Write(store.SampleDir(dir, i), &c); err != nil {
			t.Fatal(err)
		}
		set.Samples = append(set.Samples, filepath.Base(store.SampleDir(dir, i)))
	}
	if err := store.WriteSet(dir, set); err != nil {
		t.Fatal(err)
	}
}

// A matrix run is shown as it ran: its configurations in the order they
// ran (not their directories' names'), named as the run named them, their
// samples interleaved in the order they started (each round's order was
// drawn at random), then their comparison.
func TestShowMatrix(t *testing.T) {
	r, err := store.Read(t.Context(), "testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := *r
	first.Started = r.Started.Add(-time.Second / 2)
	saveSet(t, r, filepath.Join(dir, store.DirName("strategy=update")), "strategy=update", 1, 2)
	saveSet(t, &first, filepath.Join(dir, store.DirName("strategy=ssa")), "strategy=ssa", 2, 2)
	var out bytes.Buffer
	if err := Show(t.Context(), &out, dir, "text"); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, line := range strings.Split(out.String(), "\n") {
		if label, _, ok := strings.Cut(line, ": "); ok && strings.Contains(label, " sample ") {
			labels = append(labels, label)
		}
	}
	if got := strings.Join(labels, "|"); got != "strategy=ssa sample 1|strategy=update sample 1|strategy=ssa sample 2|strategy=update sample 2" {
		t.Errorf("samples shown in the order %q:\n%s", got, out.String())
	}
	if !strings.Contains(out.String(), "strategy=update (n=2)  strategy=ssa (n=2)  vs strategy=update") {
		t.Errorf("the comparison does not put the configurations in their order:\n%s", out.String())
	}
	var docs bytes.Buffer
	if err := Show(t.Context(), &docs, dir, "json"); err != nil || strings.Count(docs.String(), `"kind": "Result"`) != 4 {
		t.Errorf("--format json: %v\n%.300s", err, docs.String())
	}
	if err := Show(t.Context(), &out, t.TempDir(), "text"); err == nil || !strings.Contains(err.Error(), "holds no result") {
		t.Errorf("an empty directory: %v", err)
	}
}

// A result written before figures (v1alpha4, with its scenario's Details)
// shows its numbers and flags as figures named by their path, said to be
// of unknown unit, with no scenario code; a gate can fail it on one.
func TestShowAndGateV1alpha4Results(t *testing.T) {
	tests := []struct {
		dir  string
		want []string
	}{
		{"testdata/v1alpha4-quota", []string{"\nquota         hard 50\n", "              rejected 1155\n", "              fullAt 180000000\n", "              statusInitialized no\n"}},
		{"testdata/v1alpha4-leader-election", []string{"\nleader-election  candidates 3\n", "releaseOnCancel yes\n", "failoversDuration index=0: 1200000000, index=1: 2100000000\n", "failoverTimeP50 1200000000\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			var out bytes.Buffer
			if err := Show(t.Context(), &out, tt.dir, "text"); err != nil {
				t.Fatal(err)
			}
			for _, w := range append(tt.want, "their units are not known (a duration is in nanoseconds)") {
				if !strings.Contains(out.String(), w) {
					t.Errorf("show lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	gate := filepath.Join(t.TempDir(), "gate.yaml")
	if err := os.WriteFile(gate, []byte("apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- rejected < 1000\n- hard == 50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vs, err := Gate(t.Context(), GateRequest{Candidate: "testdata/v1alpha4-quota", Thresholds: gate})
	if !errors.Is(err, ErrGateFailed) || len(vs) != 2 || vs[0].Passed || !strings.Contains(vs[0].Why, "1155 < 1000 does not hold") || !vs[1].Passed {
		t.Errorf("gate on a scenario figure: %v %+v", err, vs)
	}
}

// A result of a scenario this build does not know shows its figures:
// show reads the saved figures, not the scenario's code.
func TestShowUnknownScenario(t *testing.T) {
	r, err := store.Read(t.Context(), "testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	r.Spec.Scenario = "informerreads"
	r.Figures = []results.Figure{{Name: "watchDelay", Labels: map[string]string{"quantile": "0.99"}, Value: 2.5e6, Unit: results.UnitDuration, Better: results.BetterLower, Help: "h"}}
	dir := t.TempDir()
	if err := store.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Show(t.Context(), &out, dir, "text"); err != nil || !strings.Contains(out.String(), "\ninformerreads  watchDelay quantile=0.99: 2.50ms\n") {
		t.Errorf("show of an unknown scenario: %v\n%s", err, out.String())
	}
}
