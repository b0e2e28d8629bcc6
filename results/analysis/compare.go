// Package analysis answers questions about results without touching a
// cluster: it merges shards, cross-checks the apiserver's counts, compares
// and gates sides of samples, and models sweeps. It is one package because
// these share their statistics, the small-sample words and the rule of
// what a complete sample is.
package analysis

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
)

// Alpha is the significance level of a comparison: a change whose
// Mann-Whitney p-value is above it is shown as "~" (no significant change).
const Alpha = 0.05

// figure is one figure of a result that a comparison shows and a
// threshold may name.
type figure struct {
	// name is its row in a comparison ("" when not compared), metric its
	// name in a threshold.
	name, metric string
	unit         results.Unit
	// better says which way is an improvement ("": neither).
	better results.Better
	// percentile is its latencyPercentiles name when it is one.
	percentile string
	// value reads it in its unit, as Threshold.Value holds it.
	value func(r *results.Result) float64
	// missing, when set, says why r does not hold the figure ("" when it
	// does): a threshold on it fails, and a comparison leaves its row out.
	missing func(r *results.Result) string
	// unknownCells: a sample lacks the figure because the run could not
	// measure it, not because of the kind of result it is, so a comparison
	// shows the figure unknown rather than leave it out.
	unknownCells bool
}

// figures are the figures of a result, in the order a comparison shows them.
var figures = []figure{
	{"ops/s", "throughput", results.UnitRate, results.BetterHigher, "", func(r *results.Result) float64 { return r.Summary.Throughput }, nil, false},
	{"successful writes/s", "writeThroughput", results.UnitRate, results.BetterHigher, "", func(r *results.Result) float64 { return r.Summary.WriteThroughput }, nil, false},
	{"conflict rate", "conflictRate", results.UnitPercent, results.BetterLower, "", func(r *results.Result) float64 { return r.Summary.ConflictRate }, nil, false},
	{"attempts p99", "attemptsP99", results.UnitCount, results.BetterLower, "", func(r *results.Result) float64 { return float64(r.Summary.AttemptsP99) }, nil, false},
	{"gave up", "gaveUp", results.UnitCount, results.BetterLower, "", func(r *results.Result) float64 { return float64(r.Summary.GaveUp) }, nil, false},
	{"latency p50", "p50", results.UnitDuration, results.BetterLower, "p50", func(r *results.Result) float64 { return float64(r.Summary.Latency.P50) }, nil, false},
	{"", "p90", results.UnitDuration, results.BetterLower, "p90", func(r *results.Result) float64 { return float64(r.Summary.Latency.P90) }, nil, false},
	{"latency p99", "p99", results.UnitDuration, results.BetterLower, "p99", func(r *results.Result) float64 { return float64(r.Summary.Latency.P99) }, nil, false},
	{"latency p99.9", "p999", results.UnitDuration, results.BetterLower, "p99.9", func(r *results.Result) float64 { return float64(r.Summary.Latency.P999) }, nil, false},
	{"lost updates", "lostUpdates", results.UnitCount, results.BetterLower, "", func(r *results.Result) float64 {
		if r.Summary.LostUpdates == nil {
			return math.NaN() // not measured: missing says so first
		}
		return float64(*r.Summary.LostUpdates)
	}, func(r *results.Result) string {
		if why := results.UnknownLostUpdates(r.Checks); r.Summary.LostUpdates == nil {
			return "did not count its lost updates (" + cmp.Or(why, "not checked") + ")"
		}
		return ""
	}, true},
	{"server match", "serverMatch", results.UnitBool, results.BetterHigher, "", func(r *results.Result) float64 {
		if r.Server != nil && r.Server.Available && r.Server.Match {
			return 1
		}
		return 0
	}, nil, false},
	// CPU time per successful write (a duration: "2ms").
	cpuPerWrite("apiserver CPU/write", "apiserverCPUPerWrite", "apiserver", func(f results.CostFigures) results.PerUnit { return f.Apiserver }, func(c *results.Cost) results.ProcessCost { return c.Apiserver }),
	cpuPerWrite("etcd CPU/write", "etcdCPUPerWrite", "etcd", func(f results.CostFigures) results.PerUnit { return f.Etcd }, func(c *results.Cost) results.ProcessCost { return c.Etcd }),
	// The apiserver's CPU per successful write less its background CPU
	// over the window: on a slow or loaded machine, where few writes
	// share the background, the figure that stays the requests' own.
	netCPUPerWrite(),
}

// MetricNames are the names a threshold may give its metric, in the
// order a comparison shows them.
func MetricNames() []string {
	names := make([]string, len(figures))
	for i, f := range figures {
		names[i] = f.metric
	}
	return names
}

// figureNamed is the figure a threshold's metric names: a built-in one,
// or a scenario's figure by its Key that one of rs holds.
func figureNamed(metric string, rs ...[]*results.Result) (figure, bool) {
	all := metricsOf(slices.Concat(rs...))
	i := slices.IndexFunc(all, func(f figure) bool { return f.metric == metric })
	if i < 0 {
		return figure{}, false
	}
	return all[i], true
}

// metricsOf is the built-in figures, then each scenario figure rs hold
// by its Key, in the unit and direction of the first that holds it.
func metricsOf(rs []*results.Result) []figure {
	all := slices.Clone(figures)
	for _, r := range rs {
		for _, f := range r.Figures {
			key := f.Key()
			if slices.ContainsFunc(all, func(m figure) bool { return m.metric == key }) {
				continue
			}
			all = append(all, figure{key, key, f.Unit, f.Better, "",
				func(r *results.Result) float64 { g, _ := r.FigureNamed(key); return g.Value },
				func(r *results.Result) string {
					if _, ok := r.FigureNamed(key); !ok {
						return "has no figure " + key
					}
					return ""
				}, true})
		}
	}
	return all
}

// cpuPerWrite is a process's CPU per successful write.
func cpuPerWrite(name, metric, what string, per func(results.CostFigures) results.PerUnit, process func(*results.Cost) results.ProcessCost) figure {
	return figure{name, metric, results.UnitDuration, results.BetterLower, "",
		func(r *results.Result) float64 { return float64(per(r.Cost.Figures(r.Summary)).PerWrite) },
		func(r *results.Result) string {
			switch {
			case r.Cost == nil:
				return "has no cost (a result from before kb-bench measured it)"
			case r.Summary.Writes == 0:
				return "made no successful write"
			case !process(r.Cost).Available:
				return "has no " + what + " CPU: " + process(r.Cost).Reason
			}
			return ""
		}, false}
}

// netCPUPerWrite is the apiserver's net CPU per successful write
// (CostFigures.ApiserverNet).
func netCPUPerWrite() figure {
	gross := cpuPerWrite("", "", "apiserver", nil, func(c *results.Cost) results.ProcessCost { return c.Apiserver })
	return figure{"apiserver net CPU/write", "apiserverNetCPUPerWrite", results.UnitDuration, results.BetterLower, "",
		func(r *results.Result) float64 { return float64(r.Cost.Figures(r.Summary).ApiserverNet.PerWrite) },
		func(r *results.Result) string {
			if why := gross.missing(r); why != "" {
				return why
			}
			if r.Cost.ApiserverIdle == nil {
				return "has no background CPU of the apiserver (a result from before kb-bench.io/v1alpha4 measured it, or a run stopped before its window)"
			}
			return ""
		}, false}
}

func (f figure) compareUnit() string {
	return map[results.Unit]string{results.UnitRate: "/s", results.UnitPercent: "%", results.UnitDuration: "ms", results.UnitBool: "yes/no"}[f.unit]
}

// compareValue is the figure as a comparison shows it: a percentage times
// 100, a duration in milliseconds.
func (f figure) compareValue(r *results.Result) float64 {
	switch v := f.value(r); f.unit {
	case results.UnitPercent:
		return 100 * v
	case results.UnitDuration:
		return v / float64(time.Millisecond)
	default:
		return v
	}
}

// Comparison is the key figures of several sides, each against the first.
type Comparison struct {
	// Sides are the labels and sample counts, in column order.
	Sides []ComparedSide `json:"sides"`
	// Rows are one per figure.
	Rows []ComparedRow `json:"rows"`
	// Workloads are the sides' workload lines, when they differ.
	Workloads []string `json:"workloads,omitempty"`
	// LeftOut names the samples that did not measure what they were asked
	// to (interrupted, target lost, a check not made, no operation
	// measured): they are left out of their side's medians and tests.
	LeftOut []string `json:"leftOut,omitempty"`
	// Incomplete names such samples of a side that has no other: their
	// figures are in the medians, and the reader should know.
	Incomplete []string `json:"incomplete,omitempty"`
	// Notes say what the reader of the latency percentiles should know:
	// sides whose percentiles were computed differently, percentiles that
	// rest on a side's slowest few operations (see FewBeyond).
	Notes []string `json:"notes,omitempty"`
}

// ComparedSide is one column's label and sample count.
type ComparedSide struct {
	Label   string `json:"label"`
	Samples int    `json:"samples"`
	// Test is set when the side's p-values are the signed-rank test's over
	// its samples interleaved with the first side's (else Mann-Whitney U).
	Test *Test `json:"test,omitempty"`
}

// ComparedRow is one figure across the sides.
type ComparedRow struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit,omitempty"`
	// Neutral: no way is better (a scenario's figure with no direction),
	// so a change of it is neither better nor worse.
	Neutral bool           `json:"neutral,omitempty"`
	Cells   []ComparedCell `json:"cells"`
}

// ComparedCell is one figure of one side: the median of its samples with
// their range, and, for every side but the first, the change of the median
// against the first side's and the Mann-Whitney p-value of the difference.
type ComparedCell struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Delta is the relative change of the median against the first side
	// (0.1 is +10%); NaN (omitted) when the first side's median is 0.
	Delta *float64 `json:"delta,omitempty"`
	// P is the p-value of the side's test (ComparedSide.Test: Mann-Whitney
	// U, or the signed-rank test over interleaved pairs); Significant is
	// P <= Alpha.
	P           *float64 `json:"p,omitempty"`
	Significant bool     `json:"significant"`
	// Better says the change goes the good way (only when Significant).
	Better bool `json:"better,omitempty"`
	// Unknown, when set, says which of the side's samples did not measure
	// the figure: the cell has no median, and no change is tested.
	Unknown string `json:"unknown,omitempty"`
}

// Compare compares every side with the first (one side alone gives its
// medians and ranges). Each side needs at least one sample.
func Compare(sides []results.Side) (*Comparison, error) {
	if len(sides) == 0 {
		return nil, fmt.Errorf("nothing to compare")
	}
	c := &Comparison{}
	sides = slices.Clone(sides)
	for k, s := range sides {
		if len(s.Results) == 0 {
			return nil, fmt.Errorf("%s holds no results", s.Label)
		}
		for _, r := range s.Results {
			c.Workloads = results.AppendNew(c.Workloads, r.Workload)
		}
		kept, left := completeOnly(s.Results)
		for i := range left {
			left[i] = s.Label + " " + left[i]
		}
		if len(kept) == 0 {
			c.Incomplete = append(c.Incomplete, left...)
		} else {
			c.LeftOut = append(c.LeftOut, left...)
			sides[k].Results = kept
		}
		c.Sides = append(c.Sides, ComparedSide{Label: s.Label, Samples: len(sides[k].Results)})
	}
	if len(c.Workloads) == 1 {
		c.Workloads = nil
	}
	pairs, tests := make([]*Pairs, len(sides)), make([]Test, len(sides))
	for i := 1; i < len(sides); i++ {
		if err := sameRun(sides[0].Label, sides[0].Results, sides[i].Label, sides[i].Results); err != nil {
			c.Notes = append(c.Notes, err.Error())
		}
		pairs[i] = InterleavedPairs(sides[0].Results, sides[i].Results)
		t := chooseTest(pairs[i])
		tests[i] = t
		if t.Pairs > 0 {
			c.Sides[i].Test = &t
			c.Notes = append(c.Notes, fmt.Sprintf("%s ran interleaved with %s: its p-values are from the %s (each pair shared the machine's moment)", sides[i].Label, sides[0].Label, t))
		}
	}
	for _, m := range metricsOf(allResults(sides)) {
		lacks := func(r *results.Result) bool { return m.missing != nil && m.missing(r) != "" }
		if m.name == "" || slices.ContainsFunc(allResults(sides), lacks) && !m.unknownCells {
			continue // results from before it was measured, or a process not read
		}
		row := ComparedRow{Metric: m.name, Unit: m.compareUnit(), Neutral: m.better == ""}
		unknown := func(rs []*results.Result) string {
			if n := len(slices.DeleteFunc(slices.Clone(rs), func(r *results.Result) bool { return !lacks(r) })); n > 0 {
				return fmt.Sprintf("%d of %d samples did not measure it", n, len(rs))
			}
			return ""
		}
		baseUnknown := unknown(sides[0].Results)
		base := values(sides[0].Results, m.compareValue)
		for i, s := range sides {
			if u := unknown(s.Results); u != "" {
				row.Cells = append(row.Cells, ComparedCell{Unknown: u})
				continue
			}
			values := values(s.Results, m.compareValue)
			cell := ComparedCell{Median: median(values), Min: slices.Min(values), Max: slices.Max(values)}
			if i > 0 && baseUnknown == "" {
				b := median(base)
				if b != 0 {
					cell.Delta = new(cell.Median/b - 1)
				}
				p := tests[i].pValue(pairs[i], base, values)
				cell.P, cell.Significant = &p, p <= Alpha
				cell.Better = cell.Significant && m.better != "" && (cell.Median > b) == (m.better == results.BetterHigher)
			}
			row.Cells = append(row.Cells, cell)
		}
		c.Rows = append(c.Rows, row)
	}
	c.Notes = append(c.Notes, percentileNotes(sides)...)
	return c, nil
}

// sameRun says when two sides hold the same sample (a directory copied
// into both), which would compare a run with itself; nil when they do not.
func sameRun(labelA string, a []*results.Result, labelB string, b []*results.Result) error {
	for _, r := range b {
		if r.RunID != "" && slices.ContainsFunc(a, func(x *results.Result) bool { return x.RunID == r.RunID && reflect.DeepEqual(x.Summary, r.Summary) }) {
			return fmt.Errorf("%s and %s both hold run %s, figures and all: the same run on both sides compares it with itself; pass each side's own results", labelA, labelB, r.RunID)
		}
	}
	return nil
}

// Table is c as text under a header row (first, then each side's label
// and sample count): each side's Value and, but for the first, its Change.
func (c *Comparison) Table(first string) [][]string {
	head := []string{first}
	for i, s := range c.Sides {
		head = append(head, fmt.Sprintf("%s (n=%d)", s.Label, s.Samples))
		if i > 0 {
			head = append(head, "vs "+c.Sides[0].Label)
		}
	}
	table := [][]string{head}
	for _, row := range c.Rows {
		line := []string{row.Metric}
		for i, cell := range row.Cells {
			line = append(line, cell.Value(row.Unit, c.Sides[i].Samples))
			if i > 0 {
				line = append(line, cell.Change(c.Sides[i].Samples, c.Sides[0].Samples))
			}
		}
		table = append(table, line)
	}
	return table
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Value formats a cell's median with its range when samples differ.
func (c ComparedCell) Value(unit string, samples int) string {
	if c.Unknown != "" {
		return "unknown (" + c.Unknown + ")"
	}
	v := formatFigure(c.Median, unit)
	if samples > 1 && c.Max != c.Min {
		v += fmt.Sprintf(" (%s-%s)", formatFigure(c.Min, unit), formatFigure(c.Max, unit))
	}
	return v
}

// Change is the cell's change against the first side: "+12.3% (p=0.008)",
// "~ (p=0.400)", or "+12.3% (too few samples to test: ~)" where even the
// most extreme difference could not be significant.
func (c ComparedCell) Change(samples, baseSamples int) string {
	if c.P == nil {
		return ""
	}
	var d string
	switch {
	case (c.Delta != nil && *c.Delta == 0 || c.Delta == nil && c.Median == 0) && c.Min == c.Max:
		return "~" // the same value in every sample
	case c.Delta != nil:
		d = fmt.Sprintf("%+.1f%%", 100**c.Delta)
	case c.Median == 0:
		d = "+0.0%"
	default:
		d = "up from 0"
	}
	switch {
	case minP(baseSamples, samples) > Alpha:
		return d + " (too few samples to test: ~)"
	case !c.Significant:
		return fmt.Sprintf("~ (p=%.3f)", *c.P)
	}
	return fmt.Sprintf("%s (p=%.3f)", d, *c.P)
}

// minP is the smallest two-sided p-value samples of n1 and n2 can give.
func minP(n1, n2 int) float64 {
	a, b := make([]float64, n1), make([]float64, n2)
	for i := range a {
		a[i] = float64(i)
	}
	for i := range b {
		b[i] = float64(n1 + i)
	}
	return MannWhitney(a, b)
}

func formatFigure(v float64, unit string) string {
	switch unit {
	case "ms":
		return words.Duration(time.Duration(v * float64(time.Millisecond)))
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	case "/s":
		return strconv.FormatFloat(v, 'f', 1, 64)
	case "yes/no":
		if v == 1 || v == 0 {
			return map[float64]string{1: "yes", 0: "no"}[v]
		}
		return fmt.Sprintf("%.0f%% of samples", 100*v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
