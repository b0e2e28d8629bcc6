package analysis_test

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// The exact two-sided p-values of the Wilcoxon signed-rank test, from its
// table (the count of the 2^n sign assignments whose rank sum is at least
// as extreme) and R's wilcox.test(x, y, paired = TRUE).
func TestSignedRank(t *testing.T) {
	tests := []struct {
		name string
		d    []float64
		want float64
	}{
		// Every pair the same way: 2/2^n. 5 pairs can never reach 0.05.
		{"5 pairs, all up", []float64{1, 2, 3, 4, 5}, 2.0 / 32},
		{"6 pairs, all down", []float64{-1, -2, -3, -4, -5, -6}, 2.0 / 64},
		// The rank sums of {1..8} at most 3: {}, {1}, {2}, {3}, {1,2}.
		{"8 pairs, rank 2 the other way", []float64{0.1, -0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, 2.0 * 3 / 256},
		{"8 pairs, rank 3 the other way", []float64{0.1, 0.2, -0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, 2.0 * 5 / 256},
		// n = 10, the smaller rank sum 8: 25 of the 1024 sums are at most
		// 8 (the table's critical value for 0.05, two-sided).
		{"10 pairs, W = 8", []float64{-1, 2, 3, 4, 5, 6, -7, 8, 9, 10}, 2.0 * 25 / 1024},
		{"10 pairs, W = 9", []float64{-1, 2, 3, 4, 5, 6, 7, -8, 9, 10}, 2.0 * 33 / 1024},
		// R's example (Hollander & Wolfe's depression scores):
		// wilcox.test(x, y, paired = TRUE): V = 40, p-value = 0.03906.
		{"R example", diffs([]float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}, []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}), 20.0 / 512},
		// Zeros are left out: 6 pairs that moved, all up.
		{"a pair that did not move", []float64{0, 1, 2, 3, 4, 5, 6}, 2.0 / 64},
		{"no pair moved", []float64{0, 0, 0}, 1},
		{"none", nil, 1},
		// Ties share their mid-rank: |d| ranks 2, 2, 2, 4; W+ = 8 of 10;
		// the sums of the 16 assignments at least 3 from 5: 8 of them.
		{"ties", []float64{1, 1, -1, 2}, 8.0 / 16},
		{"balanced", []float64{1, -1, 2, -2}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := analysis.SignedRank(tt.d); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("p = %.6f, want %.6f", got, tt.want)
			}
			neg := make([]float64, len(tt.d))
			for i, v := range tt.d {
				neg[i] = -v
			}
			if got := analysis.SignedRank(neg); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("the other way: p = %.6f, want %.6f", got, tt.want)
			}
		})
	}
	// Beyond the exact table, the normal approximation: 70 pairs all up
	// are significant beyond doubt, alternating ones are not.
	var up, alt []float64
	for i := range 70 {
		up = append(up, float64(i+1))
		alt = append(alt, float64(i+1)*float64(1-2*(i%2)))
	}
	if p := analysis.SignedRank(up); p > 1e-6 {
		t.Errorf("70 pairs all up: p = %g, want tiny", p)
	}
	if p := analysis.SignedRank(alt); p < 0.5 {
		t.Errorf("70 alternating pairs: p = %g, want large", p)
	}
}

func diffs(x, y []float64) []float64 {
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	return d
}

// abSides are an A/B run's sides, their samples begun in the order run
// --baseline-with runs them (A B, B A, A B ...), a minute apart: base[i]
// and cand[i] are a pair.
func abSides(base, cand []float64) (b, c []*results.Result) {
	at := resultstest.Start()
	for i := range base {
		rb, rc := resultstest.Sample(base[i], 20), resultstest.Sample(cand[i], 20)
		first, second := rb, rc
		if i%2 == 1 {
			first, second = rc, rb
		}
		first.Started, second.Started = at, at.Add(time.Minute)
		at = at.Add(2 * time.Minute)
		b, c = append(b, rb), append(c, rc)
	}
	return b, c
}

// Samples that ran as interleaved pairs are matched pair by pair; others
// (stored results of another time, sides of other sizes) are not.
func TestInterleavedPairs(t *testing.T) {
	base, cand := abSides([]float64{1, 2, 3, 4, 5}, []float64{1, 2, 3, 4, 5})
	// The sides as read, in any order: pairs follow their start.
	slices.Reverse(cand)
	p := analysis.InterleavedPairs(base, cand)
	if p.Len() != 5 || !slices.Equal(p.Base, []int{0, 1, 2, 3, 4}) || !slices.Equal(p.Cand, []int{4, 3, 2, 1, 0}) {
		t.Fatalf("interleaved A B B A: pairs %+v", p)
	}
	later := func(rs []*results.Result) []*results.Result {
		var out []*results.Result
		for _, r := range rs {
			c := *r
			c.Started = c.Started.Add(time.Hour)
			out = append(out, &c)
		}
		return out
	}
	sameStart := []*results.Result{resultstest.Sample(1, 1), resultstest.Sample(1, 1)}
	for name, sides := range map[string][2][]*results.Result{
		"stored baseline, run before": {base, later(cand)},
		"one side short":              {base, cand[1:]},
		"start unknown":               {sameStart, sameStart},
		"empty":                       {nil, nil},
	} {
		if p := analysis.InterleavedPairs(sides[0], sides[1]); p != nil {
			t.Errorf("%s: pairs %+v, want none", name, p)
		}
	}
}

// A large regression on a noisy machine: twice, the machine slowed the
// baseline's sample to the candidate's level (its pair slowed as well).
// The sides' ranks overlap and Mann-Whitney cannot tell (p=0.060); every
// pair but one shows the drop, and the signed-rank test over the pairs
// fails the gate. As two stored sets of another time, the same figures
// are judged by Mann-Whitney and pass (not significant). Today's main
// passed both.
func TestJudgePairsInterleavedSamples(t *testing.T) {
	g, err := analysis.NewGate([]string{"throughput >= baseline -10%"})
	if err != nil {
		t.Fatal(err)
	}
	base, cand := abSides(
		[]float64{600, 210, 590, 480, 590, 250, 610, 585},
		[]float64{310, 212, 300, 330, 305, 240, 315, 300})
	vs, err := analysis.Judge(g, base, cand)
	if err != nil {
		t.Fatal(err)
	}
	v := vs[0]
	if v.Passed || v.Test == nil || v.Test.Pairs != 8 || math.Abs(*v.P-2.0*2/256) > 1e-9 ||
		!strings.Contains(v.Why, "significant (p=0.016, Wilcoxon signed-rank test over 8 interleaved pairs)") {
		t.Errorf("interleaved: passed %v, test %+v, p %v: %s", v.Passed, v.Test, *v.P, v.Why)
	}
	stored := make([]*results.Result, len(cand))
	for i, r := range cand {
		c := *r
		c.Started = c.Started.Add(time.Hour)
		stored[i] = &c
	}
	vs, err = analysis.Judge(g, base, stored)
	if err != nil {
		t.Fatal(err)
	}
	if v := vs[0]; !v.Passed || v.Test != nil || !strings.Contains(v.Why, "not significant (p=0.060, 8 vs 8 samples)") {
		t.Errorf("stored: passed %v, test %+v: %s", v.Passed, v.Test, v.Why)
	}
	// Five pairs cannot reach 0.05 with the signed-rank test (2/32 at
	// best): they are judged by Mann-Whitney, as before.
	vs, err = analysis.Judge(g, base[:5], cand[:5])
	if err != nil {
		t.Fatal(err)
	}
	if v := vs[0]; v.Test != nil || !strings.Contains(v.Why, "5 vs 5 samples") {
		t.Errorf("5 pairs: test %+v: %s", v.Test, v.Why)
	}
}

// compare names the test of a side that ran interleaved with the first,
// and its p-values are the pairs'.
func TestComparePairsInterleavedSamples(t *testing.T) {
	base, cand := abSides(
		[]float64{600, 210, 590, 480, 590, 250, 610, 585},
		[]float64{310, 212, 300, 330, 305, 240, 315, 300})
	c, err := analysis.Compare([]results.Side{{Label: "main", Results: base}, {Label: "pr", Results: cand}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sides[1].Test == nil || c.Sides[1].Test.Pairs != 8 || !slices.ContainsFunc(c.Notes, func(n string) bool {
		return strings.Contains(n, "pr ran interleaved with main: its p-values are from the Wilcoxon signed-rank test over 8 interleaved pairs")
	}) {
		t.Errorf("sides %+v, notes %q", c.Sides, c.Notes)
	}
	if cell := c.Rows[0].Cells[1]; c.Rows[0].Metric != "ops/s" || !cell.Significant || math.Abs(*cell.P-2.0*2/256) > 1e-9 {
		t.Errorf("ops/s: %+v", cell)
	}
	var out bytes.Buffer
	if err := text.WriteComparison(&out, c, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "changes against main by the Wilcoxon signed-rank test over interleaved pairs") {
		t.Errorf("comparison:\n%s", out.String())
	}
}
