package text

import (
	"bytes"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

func TestSweepTablesGolden(t *testing.T) {
	sw := resultstest.Sweep()
	analysis.Analyze(sw)
	for _, f := range []string{"text", "markdown"} {
		var out bytes.Buffer
		if err := WriteSweepTables(&out, sw, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "sweep."+f+".golden", out.Bytes())
	}
}

// Points with a cost add its columns, "-" where a point has none.
func TestSweepTablesWithCost(t *testing.T) {
	sw := resultstest.Sweep()
	for i := range sw.Series[0].Points {
		if i == 1 {
			continue // a point without cost
		}
		w := sw.Series[0].Points[i].Value
		sw.Series[0].Points[i].Cost = &results.PointCost{ApiserverCores: 0.05 * w, ApiserverPerWrite: time.Duration(w) * time.Millisecond, HasEtcd: i > 0, EtcdPerWrite: time.Duration(w) * 300 * time.Microsecond}
	}
	analysis.Analyze(sw)
	var out bytes.Buffer
	if err := WriteSweepTables(&out, sw, "text"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "sweep-cost.text.golden", out.Bytes())
}

// A scenario figure with a direction is a column of the sweep's table
// ("-" where a point lacks it); one without (a setting) is not.
func TestSweepTablesWithFigures(t *testing.T) {
	sw := resultstest.Sweep()
	for i := range sw.Series[0].Points {
		w := sw.Series[0].Points[i].Value
		sw.Series[0].Points[i].Figures = []results.Figure{
			{Name: "failoverTime", Labels: map[string]string{"quantile": "0.5"}, Value: w * 1e8, Unit: results.UnitDuration, Better: results.BetterLower, Help: "h"},
			{Name: "releaseOnCancel", Value: 1, Unit: results.UnitBool, Help: "h"},
		}
		if i == 1 {
			sw.Series[0].Points[i].Figures = nil
		}
	}
	analysis.Analyze(sw)
	var out bytes.Buffer
	if err := WriteSweepTables(&out, sw, "text"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "sweep-figures.text.golden", out.Bytes())
}
