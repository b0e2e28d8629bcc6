package html

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// readResult decodes one of results' golden Result documents.
func readResult(t *testing.T, name string) *results.Result {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "store", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := results.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// samples makes n samples of r that differ as repeated runs do: each
// sample's throughput k% off and its latency the other way. Only the
// summary differs (the comparison reads it); the histograms are r's.
func samples(r *results.Result, n int, spread float64) []*results.Result {
	out := make([]*results.Result, n)
	for k := range out {
		f := 1 + spread*float64(k-n/2)
		c := *r
		c.RunID = r.RunID + "-s" + string(rune('1'+k))
		s := c.Summary
		s.Throughput *= f
		s.WriteThroughput *= f
		s.ConflictRate /= f
		s.Latency.P50 = time.Duration(float64(s.Latency.P50) / f).Round(time.Microsecond)
		s.Latency.P99 = time.Duration(float64(s.Latency.P99) / f).Round(time.Microsecond)
		s.Latency.P999 = time.Duration(float64(s.Latency.P999) / f).Round(time.Microsecond)
		c.Summary = s
		out[k] = &c
	}
	return out
}

// testSweep is a writers sweep of two series of five points: one the USL
// fits well, with p99 over the objective at 16 writers; one it fits
// poorly, with retries giving up and a server mismatch.
func testSweep() *results.Sweep {
	ms := time.Millisecond
	s := &results.Sweep{
		RunID:    "sweep-20250101-120000",
		Workload: "counter: 1 object, shared fields, closed loop, 10s after 2s warm-up",
		Axis:     "writers",
		SLO:      results.DefaultSLO,
		StopAt:   []string{"p99 > 5s"},
	}
	retry := results.SweepSeries{Label: "strategy=retry"}
	for i, p := range []struct {
		n, ops, writes, conflicts float64
		p99                       time.Duration
	}{
		{1, 310, 310, 0, 6 * ms},
		{2, 560, 548, 0.12, 9 * ms},
		{4, 880, 842, 0.31, 24 * ms},
		{8, 1010, 955, 0.52, 160 * ms},
		{16, 930, 820, 0.71, 1400 * ms},
	} {
		retry.Points = append(retry.Points, results.SweepPoint{Value: p.n, Dir: "retry/w" + string(rune('1'+i)), Samples: 3,
			Throughput: p.ops, WriteThroughput: p.writes, ConflictRate: p.conflicts, AttemptsP99: int64(1 + i), P99: p.p99, LostUpdates: new(int64(0)), ServerMatch: true,
			// A figure with a direction is a column; one without is not.
			Figures: []results.Figure{{Name: "rejected", Value: 10 * p.n, Unit: results.UnitCount, Better: results.BetterLower, Help: "h"}, {Name: "hard", Value: 50, Unit: results.UnitCount, Help: "h"}}})
	}
	ssa := results.SweepSeries{Label: "strategy=ssa"}
	for i, p := range []struct {
		n, writes float64
		p99       time.Duration
		gaveUp    int64
	}{
		{1, 280, 5 * ms, 0},
		{2, 150, 7 * ms, 0},
		{4, 420, 11 * ms, 0},
		{8, 120, 30 * ms, 0},
		{16, 390, 90 * ms, 12},
	} {
		pt := results.SweepPoint{Value: p.n, Dir: "ssa/w" + string(rune('1'+i)), Samples: 3,
			Throughput: p.writes * 1.02, WriteThroughput: p.writes, ConflictRate: 0.04 * float64(i), AttemptsP99: 1, P99: p.p99,
			GaveUp: p.gaveUp, ServerMatch: i != 3}
		if p.gaveUp > 0 {
			pt.GaveUpRatio = 0.0021
		}
		if i != 3 { // the point whose server did not match: its lost updates were not counted
			pt.LostUpdates = new(int64(0))
		}
		ssa.Points = append(ssa.Points, pt)
	}
	s.Series = []results.SweepSeries{retry, ssa}
	analysis.Analyze(s)
	return s
}

// withFigures gives rs a scenario's figures: a count, a duration of two
// labels, a bool, and one the last sample lacks.
func withFigures(rs []*results.Result) []*results.Result {
	for i, r := range rs {
		q := func(v string) map[string]string { return map[string]string{"quantile": v} }
		r.Figures = []results.Figure{
			{Name: "rejected", Value: float64(1150 + i), Unit: results.UnitCount, Better: results.BetterLower, Sum: true, Help: "creates the quota refused (403)"},
			{Name: "failoverTime", Labels: q("0.5"), Value: float64(time.Duration(1200+10*i) * time.Millisecond), Unit: results.UnitDuration, Better: results.BetterLower, Help: "from a leader's stop to the next leader"},
			{Name: "failoverTime", Labels: q("0.99"), Value: float64(2100 * time.Millisecond), Unit: results.UnitDuration, Better: results.BetterLower, Help: "from a leader's stop to the next leader"},
			{Name: "releaseOnCancel", Value: 1, Unit: results.UnitBool, Help: "a stopped leader released the Lease"},
		}
		if i == len(rs)-1 {
			r.Figures = r.Figures[:3]
		}
	}
	return rs
}

// testPages are the pages the golden files hold.
func testPages(t *testing.T) map[string]Page {
	closed := readResult(t, "closed-loop-result.json.golden")
	open := readResult(t, "open-loop-result.json.golden")
	return map[string]Page{
		"one-result.html.golden": {
			Title:   "kb-bench report: closed loop",
			Version: "v0.9.0-test",
			Runs:    []Run{{Label: "closed-loop", Results: []*results.Result{closed}}},
		},
		"two-sets-and-sweep.html.golden": {
			Title:   "retry against ssa <& a sweep>",
			Version: "v0.9.0-test",
			Runs: []Run{
				{Label: "retry", Results: withFigures(samples(closed, 5, 0.03))},
				{Label: "ssa", Results: samples(open, 5, 0.02)},
			},
			Sweeps: []*results.Sweep{testSweep()},
		},
		"sweep-only.html.golden": {
			Version: "v0.9.0-test",
			Sweeps:  []*results.Sweep{testSweep()},
		},
	}
}

func TestGolden(t *testing.T) {
	for name, p := range testPages(t) {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, p); err != nil {
				t.Fatal(err)
			}
			checkSelfContained(t, b.String())
			var again bytes.Buffer
			if err := Write(&again, p); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), again.Bytes()) {
				t.Error("two renderings of the same page differ: the output is not deterministic")
			}
			golden.Check(t, name, b.Bytes())
		})
	}
}

// notANumber finds a NaN or an infinity printed by Go or JavaScript.
var notANumber = regexp.MustCompile(`(?i)\bnan\b|\binf(inity)?\b`)

// checkSelfContained fails on anything that would fetch at view time, on
// scripts, and on NaN or Inf having made it into the page.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"http://", "https://", "//cdn", "<script", "<link", "src=", "url(", "@import", "@font-face", "<iframe", "<img", "<object", "<embed",
		"<no value>", "ZgotmplZ"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("the page contains %q: ...%s...", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	if loc := notANumber.FindStringIndex(page); loc != nil {
		t.Errorf("the page contains %q: ...%s...", page[loc[0]:loc[1]], page[max(0, loc[0]-80):min(len(page), loc[1]+80)])
	}
	if n, m := strings.Count(page, `<svg class="chart"`), strings.Count(page, "</svg>"); n == 0 || n != m {
		t.Errorf("the page has %d charts and %d </svg>", n, m)
	}
}

func TestWriteRefusesEmpty(t *testing.T) {
	closed := readResult(t, "closed-loop-result.json.golden")
	for _, tc := range []struct {
		name string
		page Page
		want string
	}{
		{"nothing", Page{}, "nothing to report"},
		{"a run without results", Page{Runs: []Run{{Label: "a", Results: []*results.Result{closed}}, {Label: "b"}}}, "b holds no results"},
		{"a missing result", Page{Runs: []Run{{Results: []*results.Result{nil}}}}, "run 1: result 1 is missing"},
		{"a missing sweep", Page{Sweeps: []*results.Sweep{nil}}, "sweep 1 is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := Write(&b, tc.page)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Write: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// A run that measured nothing (no ops, no series, no histograms) and a
// sweep whose series ran no point still make a page: charts that say "no
// data", and no NaN.
func TestEmptyRunAndSweep(t *testing.T) {
	empty := &results.Result{Workload: "counter: nothing ran", Measurements: results.Measurements{Histograms: map[string]string{}}}
	sweep := &results.Sweep{Axis: "writers", SLO: time.Second, Series: []results.SweepSeries{{Label: "strategy=update"}}}
	analysis.Analyze(sweep)
	var b bytes.Buffer
	if err := Write(&b, Page{Runs: []Run{{Results: []*results.Result{empty}}, {Results: []*results.Result{empty}}}, Sweeps: []*results.Sweep{sweep}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	checkSelfContained(t, page)
	// Every chart of this page is empty: the comparison's, 3 per run, 3 for the sweep.
	if got, want := strings.Count(page, ">no data</text>"), 1+3*2+3; got != want {
		t.Errorf("%d charts say no data, want %d", got, want)
	}
	if strings.Contains(page, `class="series"`) {
		t.Error("an empty chart drew a series")
	}
}

// Text from results is escaped, in the HTML and in the SVG.
func TestEscapes(t *testing.T) {
	r := readResult(t, "closed-loop-result.json.golden")
	c := *r
	c.Workload = `<b>"bold" & 'quoted'</b>`
	var b bytes.Buffer
	if err := Write(&b, Page{Title: "<i>title</i>", Runs: []Run{{Label: "<label>", Results: []*results.Result{&c}}, {Label: "x", Results: []*results.Result{r}}}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, raw := range []string{"<b>", "<i>", "<label>"} {
		if strings.Contains(page, raw) {
			t.Errorf("the page contains %s unescaped", raw)
		}
	}
	if !strings.Contains(page, "&lt;label&gt;") {
		t.Error("the label is not in the page, escaped")
	}
}

// A sweep that was stopped says so on its page, as its table does.
func TestInterruptedSweep(t *testing.T) {
	for _, interrupted := range []bool{false, true} {
		s := testSweep()
		s.Interrupted = interrupted
		var b bytes.Buffer
		if err := Write(&b, Page{Sweeps: []*results.Sweep{s}}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "INTERRUPTED</span>The sweep was stopped early"); got != interrupted {
			t.Errorf("interrupted %v: the page says so: %v", interrupted, got)
		}
	}
}

// The report says an unmeasured lost-update count is unknown (marked
// bad), never 0, and names the samples the comparison left out.
func TestReportShowsUnknownAndLeftOut(t *testing.T) {
	r := readResult(t, "closed-loop-result.json.golden")
	lost := *r
	lost.RunID, lost.TargetLost = "lost-1", "the apiserver stopped answering"
	lost.Checks = []results.Check{{Name: "objects read back", Detail: "connection refused"}}
	lost.Summary.LostUpdates = results.LostUpdatesOf(lost.Checks)
	ok2 := *r
	ok2.RunID = "ok-2"
	var b bytes.Buffer
	if err := Write(&b, Page{Title: "t", Runs: []Run{{Label: "a", Results: []*results.Result{r}}, {Label: "b", Results: []*results.Result{&ok2, &lost}}, {Label: "c", Results: []*results.Result{&lost}}}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<td class="num bad">unknown (1 of 1 samples did not measure it)</td>`,
		"Left out of the medians and tests", "b sample 2 (lost-1) lost its target",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}
