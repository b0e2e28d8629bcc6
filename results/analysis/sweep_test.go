package analysis_test

import (
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

func TestSweepAnalysis(t *testing.T) {
	sw := resultstest.Sweep()
	analysis.Analyze(sw)
	update, retry := sw.Series[0], sw.Series[1]
	if update.SLO.Within != 64 || update.SLO.Breach != 128 || update.SLO.ConflictRate != 1-1.0/64 {
		t.Errorf("update SLO answer %+v: p99 is 640ms at 64 writers and 1.28s at 128", update.SLO)
	}
	if retry.SLO.Within != 64 || retry.SLO.Breach != 0 {
		t.Errorf("retry SLO answer %+v: every p99 is within 1s", retry.SLO)
	}
	if update.Model == nil || update.Model.Poor || update.Model.PeakN < 18 || update.Model.PeakN > 26 {
		t.Errorf("update's points follow a USL curve peaking at 22 writers; fit %+v (%s)", update.Model, update.ModelNote)
	}
	// Throughput 100/N is the USL with σ=1, κ=1: it falls from one writer on.
	if m := retry.Model; m == nil || m.Poor || m.Sigma < 0.99 || m.Kappa < 0.9 || m.Kappa > 1.1 || m.PeakN != 0 {
		t.Errorf("retry fit %+v", retry.Model)
	}
	for _, want := range []string{"at most 1291 successful writes/s (at 16 writers)", "a peak of 1338/s at ~22 writers", "p99 under 1s up to 64 writers (98.4% conflicts there), over it from 128 writers", "the USL fit predicts a peak"} {
		if !strings.Contains(update.Summary, want) {
			t.Errorf("update summary lacks %q: %s", want, update.Summary)
		}
	}
	for _, want := range []string{"at most 100 successful writes/s (at 1 writer)", "retries give up from 64 writers (25.0% of operations)", "p99 under 1s at every point up to 64 writers", "stopped early: gaveUp > 0"} {
		if !strings.Contains(retry.Summary, want) {
			t.Errorf("retry summary lacks %q: %s", want, retry.Summary)
		}
	}
}
