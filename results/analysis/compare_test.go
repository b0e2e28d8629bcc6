package analysis_test

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/results/resultstest"
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
		// R's own example data; it has ties (1.06 and 1.29 twice), so R's
		// wilcox.test falls back on the normal approximation (0.1329);
		// the exact share of the C(18,9) splits is 6316/48620.
		{"R example", []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}, []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}, 6316.0 / 48620},
		{"all equal (ties)", []float64{5, 5, 5}, []float64{5, 5, 5}, 1},
		// Ties, exact: the share of the C(10,5) = 252 splits of the pooled
		// mid-ranks at least as extreme (coin::wilcox_test(distribution =
		// "exact") in R); conflict rates and counts tie often.
		{"ties, separated but for one shared value", []float64{0.5, 0.6, 0.6, 0.7, 0.7}, []float64{0.7, 0.8, 0.8, 0.9, 1.0}, 6.0 / 252},
		{"ties, 4 vs 4", []float64{1, 2, 2, 3}, []float64{3, 4, 4, 5}, 4.0 / 70},
		{"ties, one sample differs", []float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 1}, 1},
		{"empty", nil, []float64{1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := analysis.MannWhitney(tt.a, tt.b); math.Abs(got-tt.want) > 0.001 {
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
	if p := analysis.MannWhitney(a, b); p > 0.001 {
		t.Errorf("shifted samples of 30: p = %g, want tiny", p)
	}
	if p := analysis.MannWhitney(a, a); p < 0.9 {
		t.Errorf("equal samples of 30: p = %g, want about 1", p)
	}
}

// A user comparing two sets of samples sees each change against the first
// side, with its significance, and "~" where there is none to show.
func TestCompare(t *testing.T) {
	base := results.Side{Label: "before", Results: []*results.Result{resultstest.Sample(100, 20), resultstest.Sample(102, 21), resultstest.Sample(98, 19), resultstest.Sample(101, 20), resultstest.Sample(99, 22)}}
	faster := results.Side{Label: "after", Results: []*results.Result{resultstest.Sample(120, 20), resultstest.Sample(122, 19), resultstest.Sample(119, 21), resultstest.Sample(121, 22), resultstest.Sample(118, 20)}}
	c, err := analysis.Compare([]results.Side{base, faster})
	if err != nil {
		t.Fatal(err)
	}
	row := func(name string) analysis.ComparedRow {
		for _, r := range c.Rows {
			if r.Metric == name {
				return r
			}
		}
		t.Fatalf("no row %q", name)
		return analysis.ComparedRow{}
	}
	ops := row("ops/s").Cells[1]
	if ops.Median != 120 || !ops.Significant || !ops.Better || math.Abs(*ops.Delta-0.2) > 1e-9 {
		t.Errorf("ops/s cell %+v (delta %v), want median 120, +20%%, significant and better", ops, *ops.Delta)
	}
	if p99 := row("latency p99").Cells[1]; p99.Significant {
		t.Errorf("p99 from the same spread judged significant (p=%v)", *p99.P)
	}
	var out bytes.Buffer
	if err := text.WriteComparison(&out, c, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before (n=5)", "after (n=5)", "vs before", "+20.0% (p=0.008)", "~ (p="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text comparison lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := text.WriteComparison(&out, c, "markdown"); err != nil || !strings.HasPrefix(out.String(), "| metric | before (n=5) |") || !strings.Contains(out.String(), "|---|---|---|---|") {
		t.Errorf("markdown comparison (err %v):\n%s", err, out.String())
	}
	for _, f := range []string{"csv", "json"} {
		out.Reset()
		if err := text.WriteComparison(&out, c, f); err != nil || !strings.Contains(out.String(), "ops/s") {
			t.Errorf("%s comparison (err %v):\n%s", f, err, out.String())
		}
	}
	if err := text.WriteComparison(&out, c, "yaml"); err == nil {
		t.Error("an unknown format was accepted")
	}

	// One sample each: the change is shown, but no test can judge it.
	one, err := analysis.Compare([]results.Side{{Label: "a", Results: []*results.Result{resultstest.Sample(100, 20)}}, {Label: "b", Results: []*results.Result{resultstest.Sample(150, 20)}}})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	_ = text.WriteComparison(&out, one, "text")
	if !strings.Contains(out.String(), "+50.0% (too few samples to test: ~)") {
		t.Errorf("single samples:\n%s", out.String())
	}
	// Different workloads are named, not hidden.
	other := resultstest.Sample(100, 20)
	other.Workload = "quota: 16 writers"
	mixed, _ := analysis.Compare([]results.Side{base, {Label: "quota", Results: []*results.Result{other}}})
	out.Reset()
	_ = text.WriteComparison(&out, mixed, "text")
	if !strings.Contains(out.String(), "ran different workloads") {
		t.Errorf("different workloads not said:\n%s", out.String())
	}
	if _, err := analysis.Compare(nil); err == nil {
		t.Error("nothing compared without an error")
	}
	alone, err := analysis.Compare([]results.Side{base})
	if err != nil || len(alone.Rows[0].Cells) != 1 || alone.Rows[0].Cells[0].Median != 100 {
		t.Errorf("one side: %+v, %v; want its medians", alone, err)
	}
}

// A side with an interrupted sample says so under the table.
func TestCompareNamesIncompleteSamples(t *testing.T) {
	a, b := resultstest.Sample(100, 20), resultstest.Sample(100, 20)
	b.RunID, b.Interrupted = "run-b", true
	c, err := analysis.Compare([]results.Side{{Label: "before", Results: []*results.Result{a}}, {Label: "after", Results: []*results.Result{b}}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := text.WriteComparison(&out, c, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "WARNING: not every sample") || !strings.Contains(out.String(), "after sample 1 (run-b) was interrupted") {
		t.Errorf("the comparison does not name the interrupted sample:\n%s", out.String())
	}
}

// A side's label is a directory's name, which may hold anything: in
// markdown it cannot add a column or a row, in CSV it cannot be run as a
// formula, in text it stays on its line.
func TestHostileLabels(t *testing.T) {
	base := results.Side{Label: "=HYPERLINK(\"http://x\")", Results: []*results.Result{resultstest.Sample(100, 20)}}
	other := results.Side{Label: "a|b\nc", Results: []*results.Result{resultstest.Sample(120, 20)}}
	c, err := analysis.Compare([]results.Side{base, other})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := text.WriteComparison(&md, c, "markdown"); err != nil {
		t.Fatal(err)
	}
	table := strings.Split(strings.TrimSpace(md.String()), "\n\n")[0]
	lines := strings.Split(table, "\n")
	if len(lines) != 2+len(c.Rows) {
		t.Fatalf("%d table lines, want %d:\n%s", len(lines), 2+len(c.Rows), table)
	}
	cols := func(line string) int { return len(strings.Split(strings.ReplaceAll(line, `\|`, ""), "|")) }
	for _, l := range lines {
		if cols(l) != cols(lines[1]) {
			t.Errorf("a row of %d cells, the header of %d:\n%s", cols(l), cols(lines[1]), table)
		}
	}
	if !strings.Contains(lines[0], `a\|b c (n=1)`) {
		t.Errorf("the label is not escaped: %s", lines[0])
	}
	var csvOut bytes.Buffer
	if err := text.WriteComparison(&csvOut, c, "csv"); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		for _, cell := range rec {
			if cell != "" && strings.ContainsRune("=+@\t\r", rune(cell[0])) {
				t.Errorf("cell %q would run as a formula", cell)
			}
			if cell != "" && cell[0] == '-' {
				if _, err := strconv.ParseFloat(cell, 64); err != nil {
					t.Errorf("cell %q would run as a formula", cell)
				}
			}
		}
	}
	if recs[0][1] != `'=HYPERLINK("http://x") median` {
		t.Errorf("header cell %q", recs[0][1])
	}
	var txt bytes.Buffer
	if err := text.WriteComparison(&txt, c, "text"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(txt.String(), "a|b\nc") {
		t.Errorf("a label broke a text line:\n%s", txt.String())
	}
}
