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
	for _, l := range []string{"p99 <= baseline +10%", "throughput >= baseline -10%", "lostUpdates == 0", "serverMatch == true", "p99 < 25ms"} {
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
