package bench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/store"
)

// A gated run saves its verdicts beside its results (an A/B run's in its
// directory, beside its sides), and show prints them after the rest
// exactly as the run printed them, in text and in json; the saved
// document and show's text are golden.
func TestGatedRunSavesItsVerdicts(t *testing.T) {
	dir := abRun(t, 3)
	g, err := analysis.NewGate([]string{"p99 <= baseline +10%", "conflictRate < 1%", "lostUpdates == 0"})
	if err != nil {
		t.Fatal(err)
	}
	out := &Outcome{Dir: dir}
	for _, side := range []string{"baseline", "candidate"} {
		rs, err := ReadSide(t.Context(), filepath.Join(dir, side), nil)
		if err != nil {
			t.Fatal(err)
		}
		out.Cells = append(out.Cells, CellResults{Dir: filepath.Join(dir, side), Results: rs.Results})
	}
	for _, format := range []string{"text", "json"} {
		var printed bytes.Buffer
		err := gateEnd(Options{Gate: g, Stdout: &printed, Format: format}, true, out)
		if !errors.Is(err, ErrGateFailed) {
			t.Fatalf("%s: %v, want the conflict rate's threshold to fail the gate", format, err)
		}
		var shown bytes.Buffer
		if err := Show(t.Context(), &shown, dir, format); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(shown.Bytes(), printed.Bytes()) || !strings.Contains(printed.String(), "conflictRate") {
			t.Errorf("%s: show does not end with the verdicts the run printed:\n%s\nthe run printed\n%s", format, shown.String(), printed.String())
		}
		if format == "text" { // json: the documents, and the verdicts' below
			golden.Check(t, "gated-ab.show.golden", shown.Bytes())
		}
	}
	saved, err := os.ReadFile(filepath.Join(dir, store.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "gated-ab."+store.VerdictsFile+".golden", saved)
}

// Verdicts that cannot be saved are still shown, and the run fails
// saying where they are not.
func TestVerdictsNotSavedAreShown(t *testing.T) {
	dir := abRun(t, 1)
	g, err := analysis.NewGate([]string{"lostUpdates == 0"})
	if err != nil {
		t.Fatal(err)
	}
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadSide(t.Context(), filepath.Join(dir, "candidate"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var printed bytes.Buffer
	err = gateEnd(Options{Gate: g, Stdout: &printed, Format: "text"}, false, &Outcome{Dir: notADir, Cells: []CellResults{{Results: rs.Results}}})
	if !errors.Is(err, ErrNotSaved) || !strings.Contains(err.Error(), notADir) || !strings.Contains(printed.String(), "lostUpdates == 0") {
		t.Errorf("verdicts that cannot be saved: %v, printed\n%s", err, printed.String())
	}
}
