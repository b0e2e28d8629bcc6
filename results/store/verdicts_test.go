package store

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/spec"
)

// A gated run's verdicts read back as they were saved; a run that was not
// gated has none; and a directory holding them (an A/B run's, whose
// samples are below it) is not a place for another run.
func TestVerdictsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if vs, err := ReadVerdicts(t.Context(), dir); vs != nil || err != nil {
		t.Fatalf("a run without a gate: %v, %v; want none", vs, err)
	}
	p := 0.01
	saved := []analysis.Verdict{{Threshold: analysis.Threshold{Text: "p99 <= baseline +10%", Metric: "p99", Op: "<=", Value: 0.1, Relative: true},
		Shape: analysis.ShapeGuard, P: &p, Passed: false, Why: "it rose"}}
	if err := WriteVerdicts(dir, saved); err != nil {
		t.Fatal(err)
	}
	got, err := ReadVerdicts(t.Context(), dir)
	if err != nil || !reflect.DeepEqual(got, saved) {
		t.Errorf("read back %+v, %v; want %+v", got, err, saved)
	}
	if err := CheckOutDir(dir); !spec.IsInput(err) || !strings.Contains(err.Error(), VerdictsFile) {
		t.Errorf("a directory holding verdicts as --out: %v, want it refused", err)
	}
	if err := os.WriteFile(filepath.Join(dir, VerdictsFile), []byte(`{"kind":"Result"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadVerdicts(t.Context(), dir); err == nil || !strings.Contains(err.Error(), VerdictsFile) {
		t.Errorf("another document in verdicts.json: %v, want an error naming the file", err)
	}
}
