package html

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// runView is one run's section.
type runView struct {
	ID, Label   string
	Samples     int
	Workloads   []string
	Target      string
	Interrupted bool
	Headline    [][]cell
	Notes       []string
	// Figures is the scenario's figures, a row a figure and a column a
	// sample (nil: none).
	Figures  *table
	Checks   []checkView
	Warnings []string
	Errors   []string
	Charts   []figure
}

// checkView is a correctness check, or several that passed.
type checkView struct {
	Passed bool
	Text   string
}

func newRunView(i int, r Run) (runView, error) {
	first := r.Results[0]
	rv := runView{ID: "run-" + strconv.Itoa(i+1), Label: r.Label, Samples: len(r.Results), Target: results.DescribeTarget(first.Target, false)}
	for _, res := range r.Results {
		rv.Workloads = results.AppendNew(rv.Workloads, res.Workload)
		rv.Interrupted = rv.Interrupted || res.Interrupted
		rv.Warnings = results.AppendNew(rv.Warnings, res.Warnings...)
		rv.Errors = results.AppendNew(rv.Errors, res.Measurements.Errors...)
	}
	var err error
	if rv.Headline, rv.Notes, err = headline(r); err != nil {
		return rv, err
	}
	rv.Checks = checks(r.Results)
	rv.Figures = scenarioFigures(r.Results)

	m, err := merged(r.Results)
	if err != nil {
		return rv, fmt.Errorf("%s: %w", r.Label, err)
	}
	latency, err := spectrumChart(r, m)
	if err != nil {
		return rv, err
	}
	rv.Charts = append(rv.Charts, latency, timeChart(r), attemptsChart(r, m))
	return rv, nil
}

// headline is a run's key figures: a result's own, or a set's medians
// with their range, and the notes on its percentiles.
func headline(r Run) ([][]cell, []string, error) {
	c, err := analysis.Compare([]Run{r})
	if err != nil {
		return nil, nil, err
	}
	n := len(r.Results)
	var rows [][]cell
	if n == 1 {
		s := r.Results[0].Summary
		rows = append(rows, []cell{{Text: "measured"}, {Text: fmt.Sprintf("%d ops in %s s (%d succeeded)", s.Ops, trimFloat(s.Seconds, 3), s.Successes), Class: "num"}})
	} else {
		rows = append(rows, []cell{{Text: "samples"}, {Text: fmt.Sprintf("%d: medians (range)", n), Class: "num"}})
	}
	for _, row := range c.Rows {
		if row.Metric == "server match" || slices.ContainsFunc(r.Results, func(x *results.Result) bool { _, ok := x.FigureNamed(row.Metric); return ok }) {
			continue // said in words below; a scenario's figure in its own table
		}
		cl := row.Cells[0]
		bad := (row.Metric == "lost updates" || row.Metric == "gave up") && (cl.Max > 0 || cl.Unknown != "")
		rows = append(rows, []cell{{Text: row.Metric}, num(cl.Value(row.Unit, n), bad)})
	}
	server, bad := serverText(r.Results)
	rows = append(rows, []cell{{Text: "server"}, num(server, bad)})
	return rows, c.Notes, nil
}

// table is a table's head and rows.
type table struct {
	Head []cell
	Rows [][]cell
}

// scenarioFigures is the table of the scenario's figures of rs, a row a
// Key and a column a sample; nil when rs hold none.
func scenarioFigures(rs []*results.Result) *table {
	t := &table{Head: []cell{{Text: "figure"}}}
	for i := range rs {
		t.Head = append(t.Head, cell{Text: "sample " + strconv.Itoa(i+1), Class: "num"})
	}
	if len(rs) == 1 {
		t.Head[1].Text = "value"
	}
	t.Head = append(t.Head, cell{Text: "what it is"})
	seen := map[string]bool{}
	for _, r := range rs {
		for _, f := range r.Figures {
			if seen[f.Key()] {
				continue
			}
			seen[f.Key()] = true
			row := []cell{{Text: f.Key()}}
			for _, x := range rs {
				v := "-"
				if g, ok := x.FigureNamed(f.Key()); ok {
					v = g.Text()
				}
				row = append(row, cell{Text: v, Class: "num"})
			}
			t.Rows = append(t.Rows, append(row, cell{Text: f.Help}))
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// serverText says how the results' server cross-checks went; bad is set
// when one did not match.
func serverText(rs []*results.Result) (text string, bad bool) {
	if len(rs) == 1 {
		c := rs[0].Server
		switch {
		case c == nil:
			return "not checked", false
		case !c.Available:
			return joinNonEmpty(": ", "not checked", c.Reason), false
		case c.Match:
			return "match: the apiserver counted the same requests", false
		}
		return "MISMATCH: " + c.Mismatch, true
	}
	count := map[string]int{} // samples by how their check went
	var reason string
	for _, r := range rs {
		switch c := r.Server; {
		case c == nil || !c.Available:
			count["not checked"]++
			if c != nil && reason == "" {
				reason = c.Reason
			}
		case c.Match:
			count["match"]++
		default:
			count["MISMATCH"]++
		}
	}
	if count["not checked"] == len(rs) {
		return joinNonEmpty(": ", "not checked", reason), false
	}
	var parts []string
	for _, what := range []string{"match", "MISMATCH", "not checked"} {
		if n := count[what]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	return fmt.Sprintf("%d samples: %s", len(rs), strings.Join(parts, ", ")), count["MISMATCH"] > 0
}

// checks lists a result's checks; a set's failures one by one and its
// passes in one line.
func checks(rs []*results.Result) []checkView {
	var out []checkView
	if len(rs) == 1 {
		for _, c := range rs[0].Checks {
			out = append(out, checkView{Passed: c.Passed, Text: describeCheck(c)})
		}
		return out
	}
	var passed int
	var names []string
	for i, r := range rs {
		for _, c := range r.Checks {
			if c.Passed {
				passed++
				names = results.AppendNew(names, c.Name)
				continue
			}
			out = append(out, checkView{Text: fmt.Sprintf("sample %d: %s", i+1, describeCheck(c))})
		}
	}
	if passed > 0 {
		out = append(out, checkView{Passed: true, Text: fmt.Sprintf("%s passed (%s)", words.Plural(passed, "check"), strings.Join(names, ", "))})
	}
	return out
}

func describeCheck(c results.Check) string {
	s := fmt.Sprintf("%s: expected %d, observed %d", c.Name, c.Expected, c.Observed)
	if c.Lost > 0 {
		s += fmt.Sprintf(", %d LOST UPDATES", c.Lost)
	}
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// spectrumX is the percentile axis of a latency spectrum.
func spectrumX() axis {
	return axis{Label: "percentile (log scale of 1/(1−p))", Scale: nines, Format: func(p float64) string { return trimFloat(100*p, 6) + "%" }}
}

// latencyY is a latency axis, in milliseconds on a log scale.
func latencyY() axis {
	return axis{Label: "latency (log scale)", Scale: log10, Format: formatMillis}
}

// marked are the percentiles a spectrum marks, with their names.
var marked = []struct {
	p    float64
	name string
}{{0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}, {0.999, "p99.9"}, {0.9999, "p99.99"}, {0.99999, "p99.999"}}

// spectrum is a histogram's latency (ms) by percentile, HdrHistogram
// style, with markers at the usual percentiles and the maximum.
func spectrum(h *hdrhistogram.Histogram, name string) []point {
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	end := math.Log10(float64(n)) // the largest value sits at 1 − 1/n
	var pts []point
	weak := map[int]string{} // a marked point's small-sample words
	for _, m := range marked {
		if t := -math.Log10(1 - m.p); t < end-1e-9 {
			weak[len(pts)] = analysis.WeakPercentile(m.name, m.p, n)
			pts = append(pts, point{X: m.p, Tip: name + " " + m.name})
		}
	}
	for k := 0; float64(k)/20 < end-1e-9; k++ {
		pts = append(pts, point{X: 1 - math.Pow(10, -float64(k)/20)})
	}
	ps := make([]float64, len(pts))
	for i, p := range pts {
		ps[i] = p.X
	}
	for i, v := range metrics.Percentiles(h, ps...) {
		pts[i].Y = float64(v) / 1000
		if pts[i].Tip != "" {
			pts[i].Tip += ": " + formatMillis(pts[i].Y)
		}
		if w := weak[i]; w != "" {
			pts[i].Tip += " (" + w + ")"
		}
	}
	// Sorted, a marked percentile comes first of its place and replaces
	// the grid point there.
	slices.SortStableFunc(pts, func(a, b point) int { return cmp.Compare(a.X, b.X) })
	pts = slices.CompactFunc(pts, func(a, b point) bool { return math.Abs(a.X-b.X) < 1e-12 })
	largest := float64(h.Max()) / 1000
	pts = append(pts, point{X: 1 - 1/float64(n), Y: largest, Tip: fmt.Sprintf("%s max: %s (%d ops)", name, formatMillis(largest), n)})
	if n == 1 {
		pts = pts[len(pts)-1:]
		pts[0].X = 0
	}
	return pts
}

// spectrumSeries is the latency spectrum of the histogram hist of m (no
// points when m has none), of the run labelled label.
func spectrumSeries(m results.Measurements, hist, label, name string, color int) (series, error) {
	s := series{Name: name, Color: color}
	h, ok, err := m.Histogram(hist)
	if err != nil {
		return s, fmt.Errorf("%s: %w", label, err)
	}
	if ok {
		s.Points = spectrum(h, name)
	}
	return s, nil
}

// spectrumChart is a run's latency spectrum: the op histogram, and in an
// open loop the uncorrected one too.
func spectrumChart(r Run, m results.Measurements) (figure, error) {
	ch := chart{Title: "Latency by percentile", X: spectrumX(), Y: latencyY()}
	open := r.Results[0].Summary.RawLatency != nil
	name, caption := "operation latency", "Operation latency"
	if open {
		name, caption = "corrected (from intended start)", "Open loop: latency from each operation's scheduled start (corrected for coordinated omission) and from its actual start (uncorrected)"
	}
	add := func(hist, name string, color int) error {
		s, err := spectrumSeries(m, hist, r.Label, name, color)
		ch.Series = append(ch.Series, s)
		return err
	}
	if err := add(results.HistOp, name, 0); err != nil {
		return figure{}, err
	}
	if open {
		if err := add(results.HistOpRaw, "uncorrected (from actual start)", 1); err != nil {
			return figure{}, err
		}
	}
	if len(r.Results) > 1 {
		caption += fmt.Sprintf(", the %d samples merged", len(r.Results))
	}
	return figure{SVG: ch.SVG(), Caption: caption + ". Hover a marker for its value."}, nil
}

// timeChart is the first result's throughput and conflicts per second.
func timeChart(r Run) figure {
	res := r.Results[0]
	ch := chart{
		Title:  "Throughput and conflicts over time",
		X:      axis{Label: "seconds into the measured window", Zero: true, Format: func(v float64) string { return formatNumber(v) + " s" }},
		Y:      axis{Label: "per second", Zero: true},
		Series: []series{{Name: "operations/s", Color: 0}, {Name: "successful writes/s", Color: 2}, {Name: "conflicts/s", Color: 1}},
	}
	for _, p := range res.Series {
		if p.Span <= 0 {
			continue
		}
		for i, n := range []int64{p.Ops, p.Writes[metrics.Success.String()], p.Conflicts()} {
			ch.Series[i].Points = append(ch.Series[i].Points, point{X: p.At.Seconds(), Y: float64(n) / p.Span.Seconds()})
		}
	}
	for i := range ch.Series {
		ch.Series[i].Markers = len(ch.Series[0].Points) <= 60
	}
	caption := "Each point is one interval of the per-second series; conflicts are 409s of either kind (version and field manager)"
	if len(r.Results) > 1 {
		caption += fmt.Sprintf(". First sample of %d: samples' series do not add", len(r.Results))
	}
	return figure{SVG: ch.SVG(), Caption: caption + "."}
}

// attemptsChart is the share of operations by their number of write
// attempts.
func attemptsChart(r Run, m results.Measurements) figure {
	var total int64
	for _, c := range m.Attempts {
		total += c
	}
	s := series{Name: "share of operations", Color: 4, Markers: true}
	for n, c := range m.Attempts {
		if c == 0 || total == 0 {
			continue
		}
		share := 100 * float64(c) / float64(total)
		s.Points = append(s.Points, point{X: float64(n), Y: share,
			Tip: fmt.Sprintf("%s: %s of operations (%d)", words.Plural(n, "attempt"), formatPercent(share), c)})
	}
	ch := chart{
		Title:  "Write attempts per operation",
		X:      axis{Label: "write attempts", Integer: true},
		Y:      axis{Label: "share of operations (log scale)", Scale: log10, Format: formatPercent},
		Series: []series{s},
	}
	caption := "How many write attempts operations made (retries after conflicts); empty counts are left out"
	if len(r.Results) > 1 {
		caption += fmt.Sprintf(", the %d samples added", len(r.Results))
	}
	return figure{SVG: ch.SVG(), Caption: caption + "."}
}
