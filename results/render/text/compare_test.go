package text

import (
	"bytes"
	"testing"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// The rendered comparison and gate, in every format, as a user reads them.
func TestCompareAndGateGolden(t *testing.T) {
	base := results.Side{Label: "before", Results: []*results.Result{resultstest.Sample(100, 20), resultstest.Sample(102, 21), resultstest.Sample(98, 19), resultstest.Sample(101, 20), resultstest.Sample(99, 22)}}
	after := results.Side{Label: "after", Results: []*results.Result{resultstest.Sample(120, 26), resultstest.Sample(122, 27), resultstest.Sample(119, 25), resultstest.Sample(121, 28), resultstest.Sample(118, 26)}}
	// A scenario's figures: rows of the comparison, metrics of the gate.
	for i, r := range append(base.Results, after.Results...) {
		slow := float64(i / 5) // the after side's failovers are slower
		r.Figures = []results.Figure{
			{Name: "rejected", Value: float64(1150 + i%5), Unit: results.UnitCount, Better: results.BetterLower, Sum: true, Help: "h"},
			{Name: "failoverTime", Labels: map[string]string{"quantile": "0.5"}, Value: (0.9 + 0.01*float64(i%5) + slow) * 1e9, Unit: results.UnitDuration, Better: results.BetterLower, Help: "h"},
		}
	}
	c, err := analysis.Compare([]results.Side{base, after})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range CompareFormats {
		var out bytes.Buffer
		if err := WriteComparison(&out, c, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "compare."+f+".golden", out.Bytes())
	}
	g := &analysis.Gate{}
	for _, l := range []string{"p99 <= baseline +10%", "throughput >= baseline -10%", "lostUpdates == 0", "serverMatch == true", "p99 < 25ms", `failoverTime{quantile="0.5"} < 1s`, "rejected <= baseline +10%"} {
		th, err := analysis.ParseThreshold(l)
		if err != nil {
			t.Fatal(err)
		}
		g.Thresholds = append(g.Thresholds, th)
	}
	vs, err := analysis.Judge(g, base.Results, after.Results)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range GateFormats {
		var out bytes.Buffer
		if err := WriteVerdicts(&out, vs, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "gate."+f+".golden", out.Bytes())
	}
}
