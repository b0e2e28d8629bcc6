package results

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/golden"
)

// testSweep is a writers sweep of two series: update, whose throughput
// follows a USL curve and whose p99 passes the SLO at 128 writers, and
// retry, whose retries give up from 64 writers and which a stop condition
// ended there.
func testSweep() *Sweep {
	model := USL{Lambda: 180, Sigma: 0.05, Kappa: 0.002}
	sw := &Sweep{RunID: "sweep-1", Workload: "counter: 1 ConfigMap, closed loop, 10s", Axis: "writers", SLO: time.Second, StopAt: []string{"p99 > 5s"}}
	var update, retry SweepSeries
	update.Label, retry.Label = "strategy=update", "strategy=retry"
	for i, n := range []float64{1, 2, 4, 8, 16, 32, 64, 128} {
		p99 := time.Duration(n) * 10 * time.Millisecond
		update.Points = append(update.Points, SweepPoint{Value: n, Dir: fmt.Sprintf("strategy-update/writers-%g", n),
			Samples: 1, Throughput: 1.2 * model.At(n) * (1 + float64(i%2)*0.01), WriteThroughput: model.At(n) * (1 + float64(i%2)*0.01),
			ConflictRate: 1 - 1/n, AttemptsP99: 1, P99: p99, ServerMatch: true})
		if n <= 64 {
			pt := SweepPoint{Value: n, Dir: "x", Samples: 1, Throughput: 100, WriteThroughput: 100 / n, ConflictRate: 0.5, AttemptsP99: int64(n), P99: p99 / 2, ServerMatch: true}
			if n == 64 {
				pt.GaveUp, pt.GaveUpRatio = 40, 0.25
			}
			retry.Points = append(retry.Points, pt)
		}
	}
	retry.Stopped = "gaveUp > 0 at 64 writers (gaveUp 40)"
	sw.Series = []SweepSeries{update, retry}
	sw.Analyze()
	return sw
}

func TestSweepAnalysis(t *testing.T) {
	sw := testSweep()
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

func TestSweepTablesGolden(t *testing.T) {
	for _, f := range []string{"text", "markdown"} {
		var out bytes.Buffer
		if err := WriteSweepTables(&out, testSweep(), f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "sweep."+f+".golden", out.Bytes())
	}
}

func TestSweepRoundTrip(t *testing.T) {
	dir := t.TempDir()
	sw := testSweep()
	if err := WriteSweep(dir, sw); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != KindSweep || len(got.Series) != 2 || got.Series[0].Model == nil || got.Series[1].Stopped != sw.Series[1].Stopped {
		t.Errorf("read back %+v", got)
	}
	if _, err := ReadSweep(filepath.Join(dir, "nope")); err == nil {
		t.Error("a missing sweep read without error")
	}
}
