package results

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/golden"
)

// The p-values of textbook cases and of R's wilcox.test: fully separated
// samples of 3 and 3 can reach p = 0.1 at best (the too-few-samples rule),
// of 4 and 4 p = 0.029 (2/70); equal samples 1.
func TestMannWhitney(t *testing.T) {
	tests := []struct {
		name string
		a, b []float64
		want float64
	}{
		{"3 vs 3 separated", []float64{1, 2, 3}, []float64{4, 5, 6}, 0.1},
		{"4 vs 4 separated", []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 2.0 / 70},
		{"4 vs 4 reversed", []float64{5, 6, 7, 8}, []float64{1, 2, 3, 4}, 2.0 / 70},
		// R: wilcox.test(c(1,3,5,7), c(2,4,6,8))$p.value = 0.6857
		{"interleaved", []float64{1, 3, 5, 7}, []float64{2, 4, 6, 8}, 0.686},
		// R: wilcox.test(c(1.83,0.50,1.62,2.48,1.68,1.88,1.55,3.06,1.30),
		//    c(0.878,0.647,0.598,2.05,1.06,1.29,1.06,3.14,1.29))$p.value
		// = 0.1329 (R's own example data, exact: no ties)
		{"R example", []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}, []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}, 0.1329},
		{"all equal (ties)", []float64{5, 5, 5}, []float64{5, 5, 5}, 1},
		{"empty", nil, []float64{1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MannWhitney(tt.a, tt.b); math.Abs(got-tt.want) > 0.001 {
				t.Errorf("p = %.4f, want %.4f", got, tt.want)
			}
		})
	}
	// Large samples with ties use the normal approximation: a clear shift
	// is significant, the same values are not.
	var a, b []float64
	for i := range 30 {
		a, b = append(a, float64(i%10)), append(b, float64(i%10+5))
	}
	if p := MannWhitney(a, b); p > 0.001 {
		t.Errorf("shifted samples of 30: p = %g, want tiny", p)
	}
	if p := MannWhitney(a, a); p < 0.9 {
		t.Errorf("equal samples of 30: p = %g, want about 1", p)
	}
}

func sample(ops float64, p99ms int64) *Result {
	r := &Result{Workload: "counter: 8 writers on 1 object"}
	r.Summary.Throughput = ops
	r.Summary.Latency.P99 = time.Duration(p99ms) * time.Millisecond
	r.Server = &ServerCheck{Available: true, Match: true}
	return r
}

// A user comparing two sets of samples sees each change against the first
// side, with its significance, and "~" where there is none to show.
func TestCompare(t *testing.T) {
	base := Side{Label: "before", Results: []*Result{sample(100, 20), sample(102, 21), sample(98, 19), sample(101, 20), sample(99, 22)}}
	faster := Side{Label: "after", Results: []*Result{sample(120, 20), sample(122, 19), sample(119, 21), sample(121, 22), sample(118, 20)}}
	c, err := Compare([]Side{base, faster})
	if err != nil {
		t.Fatal(err)
	}
	row := func(name string) ComparedRow {
		for _, r := range c.Rows {
			if r.Metric == name {
				return r
			}
		}
		t.Fatalf("no row %q", name)
		return ComparedRow{}
	}
	ops := row("ops/s").Cells[1]
	if ops.Median != 120 || !ops.Significant || !ops.Better || math.Abs(*ops.Delta-0.2) > 1e-9 {
		t.Errorf("ops/s cell %+v (delta %v), want median 120, +20%%, significant and better", ops, *ops.Delta)
	}
	if p99 := row("latency p99").Cells[1]; p99.Significant {
		t.Errorf("p99 from the same spread judged significant (p=%v)", *p99.P)
	}
	var out bytes.Buffer
	if err := WriteComparison(&out, c, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before (n=5)", "after (n=5)", "vs before", "+20.0% (p=0.008)", "~ (p="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text comparison lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := WriteComparison(&out, c, "markdown"); err != nil || !strings.HasPrefix(out.String(), "| metric | before (n=5) |") || !strings.Contains(out.String(), "|---|---|---|---|") {
		t.Errorf("markdown comparison (err %v):\n%s", err, out.String())
	}
	for _, f := range []string{"csv", "json"} {
		out.Reset()
		if err := WriteComparison(&out, c, f); err != nil || !strings.Contains(out.String(), "ops/s") {
			t.Errorf("%s comparison (err %v):\n%s", f, err, out.String())
		}
	}
	if err := WriteComparison(&out, c, "yaml"); err == nil {
		t.Error("an unknown format was accepted")
	}

	// One sample each: the change is shown, but no test can judge it.
	one, err := Compare([]Side{{Label: "a", Results: []*Result{sample(100, 20)}}, {Label: "b", Results: []*Result{sample(150, 20)}}})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	_ = WriteComparison(&out, one, "text")
	if !strings.Contains(out.String(), "+50.0% (too few samples to test: ~)") {
		t.Errorf("single samples:\n%s", out.String())
	}
	// Different workloads are named, not hidden.
	other := sample(100, 20)
	other.Workload = "quota: 16 writers"
	mixed, _ := Compare([]Side{base, {Label: "quota", Results: []*Result{other}}})
	out.Reset()
	_ = WriteComparison(&out, mixed, "text")
	if !strings.Contains(out.String(), "ran different workloads") {
		t.Errorf("different workloads not said:\n%s", out.String())
	}
	if _, err := Compare(nil); err == nil {
		t.Error("nothing compared without an error")
	}
	alone, err := Compare([]Side{base})
	if err != nil || len(alone.Rows[0].Cells) != 1 || alone.Rows[0].Cells[0].Median != 100 {
		t.Errorf("one side: %+v, %v; want its medians", alone, err)
	}
}

// The rendered comparison and gate, in every format, as a user reads them.
func TestCompareAndGateGolden(t *testing.T) {
	base := Side{Label: "before", Results: []*Result{sample(100, 20), sample(102, 21), sample(98, 19), sample(101, 20), sample(99, 22)}}
	after := Side{Label: "after", Results: []*Result{sample(120, 26), sample(122, 27), sample(119, 25), sample(121, 28), sample(118, 26)}}
	c, err := Compare([]Side{base, after})
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
	g := &Gate{}
	for _, l := range []string{"p99 <= baseline +10%", "throughput >= baseline -10%", "lostUpdates == 0", "serverMatch == true", "p99 < 25ms"} {
		th, err := ParseThreshold(l)
		if err != nil {
			t.Fatal(err)
		}
		g.Thresholds = append(g.Thresholds, th)
	}
	vs, err := Judge(g, base.Results, after.Results)
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

// A side with an interrupted sample says so under the table.
func TestCompareNamesIncompleteSamples(t *testing.T) {
	a, b := sample(100, 20), sample(100, 20)
	b.RunID, b.Interrupted = "run-b", true
	c, err := Compare([]Side{{Label: "before", Results: []*Result{a}}, {Label: "after", Results: []*Result{b}}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteComparison(&out, c, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "WARNING: not every sample") || !strings.Contains(out.String(), "after sample 1 (run-b) was interrupted") {
		t.Errorf("the comparison does not name the interrupted sample:\n%s", out.String())
	}
}
