package analysis_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// A percentile resting on fewer than FewBeyond ops beyond it says which
// op it is, counted from the slowest.
func TestWeakPercentile(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		n    int64
		want string
	}{
		{0.999, 590, "the slowest op"},      // 0 ops beyond rank 590
		{0.999, 1000, "the 2nd slowest op"}, // rank 999
		{0.999, 2986, "the 3rd slowest op"}, // rank 2984
		{0.999, 4999, "the 5th slowest op"}, // rank 4995: 4 beyond
		{0.999, 5000, ""},                   // rank 4995: 5 beyond
		{0.99, 400, "the 5th slowest op"},
		{0.99, 500, ""},
		{0.99, 2978, ""},
		{0.5, 1, "the slowest op"},
		{0.5, 9, "the 5th slowest op"}, // rank 5: 4 beyond
		{0.5, 10, ""},
		{0.999, 0, ""},
	} {
		want := ""
		if tc.want != "" {
			want = fmt.Sprintf("p of %d ops = %s", tc.n, tc.want)
		}
		if got := analysis.WeakPercentile("p", tc.q, tc.n); got != want {
			t.Errorf("WeakPercentile(p, %v, %d) = %q, want %q", tc.q, tc.n, got, want)
		}
	}
}

// compare says when sides computed their percentiles differently, and
// which percentiles rest on a side's slowest few ops.
func TestComparePercentileNotes(t *testing.T) {
	small, big := resultstest.SmallSample(t), resultstest.Simulated(t, false, resultstest.All, nil)
	older := resultstest.Simulated(t, false, resultstest.All, nil)
	older.Summary.Percentiles = results.PercentilesRoundedRank
	for _, tc := range []struct {
		name  string
		sides []results.Side
		want  []string
	}{
		{"same definition, enough ops", []results.Side{{Label: "a", Results: []*results.Result{big}}, {Label: "b", Results: []*results.Result{big}}}, []string{
			"latency p99.9 is weakly supported (fewer than 5 ops beyond it): a: p99.9 of 1205 ops = the 2nd slowest op; b: p99.9 of 1205 ops = the 2nd slowest op",
		}},
		{"an older side", []results.Side{{Label: "old", Results: []*results.Result{older}}, {Label: "new", Results: []*results.Result{big, small}}}, []string{
			"the percentiles were computed differently, so their changes mix two definitions: old: HdrHistogram's rounded rank (kb-bench.io/v1alpha2 results: it can understate the tail by an op); new: nearest rank",
			// The rounded rank sits at the nearest rank or one below.
			"latency p99.9 is weakly supported (fewer than 5 ops beyond it): old: p99.9 of 1205 ops = one of the 3 slowest ops; new: 2 of 2 samples: p99.9 of 1205 ops = the 2nd slowest op, p99.9 of 590 ops = the slowest op",
		}},
		{"mixed within a side", []results.Side{{Label: "set", Results: []*results.Result{older, big, big}}}, []string{
			"the percentiles were computed differently, so their changes mix two definitions: set: 1 of 3 samples HdrHistogram's rounded rank (kb-bench.io/v1alpha2 results: it can understate the tail by an op), 2 of 3 samples nearest rank",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := analysis.Compare(tc.sides)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := text.WriteComparison(&out, c, "text"); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), "note: "+w+"\n") {
					t.Errorf("comparison lacks the note %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// A threshold on a percentile that rests on the slowest few ops is said
// to be weakly supported, pass or fail; one judged on older percentiles
// says how they were computed.
func TestGatePercentileNotes(t *testing.T) {
	small, big := resultstest.SmallSample(t), resultstest.Simulated(t, false, resultstest.All, nil)
	older := resultstest.Simulated(t, false, resultstest.All, nil)
	older.Summary.Percentiles = results.PercentilesRoundedRank
	for _, tc := range []struct {
		name                string
		threshold           string
		baseline, candidate []*results.Result
		passed              bool
		whyHas, whyLacks    string
	}{
		{"weak pass", "p999 < 50ms", nil, []*results.Result{small}, true,
			"41.0ms < 50.0ms holds; weakly supported, fewer than 5 ops beyond it: candidate: p99.9 of 590 ops = the slowest op", ""},
		{"weak fail", "p999 < 20ms", nil, []*results.Result{small}, false,
			"does not hold; weakly supported, fewer than 5 ops beyond it: candidate: p99.9 of 590 ops = the slowest op", ""},
		{"well supported", "p99 < 50ms", nil, []*results.Result{small}, true, "holds", "weakly"},
		{"not a percentile", "throughput > 1", nil, []*results.Result{small}, true, "holds", "weakly"},
		{"older candidate", "p99 < 10s", nil, []*results.Result{older}, true,
			"holds; percentiles computed by candidate: HdrHistogram's rounded rank (kb-bench.io/v1alpha2 results: it can understate the tail by an op)", ""},
		{"older baseline", "p99 <= baseline +1000%", []*results.Result{older}, []*results.Result{big}, true,
			"; percentiles computed by candidate: nearest rank; baseline: HdrHistogram's rounded rank", ""},
		{"weak baseline", "p999 <= baseline +1000%", []*results.Result{small}, []*results.Result{big}, false, // 1 vs 1: the medians decide
			"weakly supported, fewer than 5 ops beyond it: candidate: p99.9 of 1205 ops = the 2nd slowest op; baseline: p99.9 of 590 ops = the slowest op", "computed by"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := analysis.NewGate([]string{tc.threshold})
			if err != nil {
				t.Fatal(err)
			}
			vs, err := analysis.Judge(g, tc.baseline, tc.candidate)
			if err != nil {
				t.Fatal(err)
			}
			v := vs[len(vs)-1]
			if v.Passed != tc.passed || !strings.Contains(v.Why, tc.whyHas) || tc.whyLacks != "" && strings.Contains(v.Why, tc.whyLacks) {
				t.Errorf("verdict passed=%v why %q\nwant passed=%v, why with %q and without %q", v.Passed, v.Why, tc.passed, tc.whyHas, tc.whyLacks)
			}
		})
	}
}
