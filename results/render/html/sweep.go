package html

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
)

// sweepView is one sweep's section.
type sweepView struct {
	ID, Title   string
	Workload    string
	SLO         string
	StopAt      []string
	Interrupted bool
	Series      []sweepSeriesView
	Charts      []figure
}

// sweepSeriesView is one series of a sweep: its table, fit and summary.
type sweepSeriesView struct {
	Title   string
	Head    []cell
	Rows    [][]cell
	Fit     string
	FitPoor bool
	// CostFit is the apiserver's CPU per write fit (or why there is none).
	CostFit string
	Summary string
}

func newSweepView(i int, s *results.Sweep) sweepView {
	sv := sweepView{
		ID:          "sweep-" + strconv.Itoa(i+1),
		Title:       "Sweep over " + s.Axis,
		Workload:    s.Workload,
		SLO:         "p99 ≤ " + s.SLO.String(),
		StopAt:      s.StopAt,
		Interrupted: s.Interrupted,
	}
	if s.RunID != "" {
		sv.Title += " (" + s.RunID + ")"
	}
	var head []cell
	for _, h := range append([]string{s.Axis}, results.SweepColumns...) {
		head = append(head, cell{Text: h, Class: "num"})
	}
	for _, ser := range s.Series {
		// One series has no label: the workload is said above.
		v := sweepSeriesView{Title: cmp.Or(ser.Label, "Every point"), Head: head, Summary: ser.Summary + "."}
		keys := ser.FigureColumns()
		for _, k := range keys {
			v.Head = append(slices.Clip(v.Head), cell{Text: k, Class: "num"})
		}
		for _, p := range ser.Points {
			// p99 over the objective, retries given up, lost updates and a
			// mismatch are marked bad.
			bad := map[int]bool{5: p.P99 > s.SLO, 6: p.GaveUp > 0, 7: p.LostUpdates == nil || *p.LostUpdates > 0, 8: !p.ServerMatch}
			var row []cell
			for j, text := range append(s.PointFigures(p), p.FigureCells(keys)...) {
				row = append(row, num(text, bad[j]))
			}
			v.Rows = append(v.Rows, row)
		}
		v.Fit, v.CostFit = s.Fits(ser)
		v.FitPoor = ser.Model != nil && ser.Model.Poor
		sv.Series = append(sv.Series, v)
	}
	sv.Charts = sweepCharts(s)
	return sv
}

// sweepCharts are a sweep's successful writes/s (with the fitted USL),
// conflict rate and p99 against its axis.
func sweepCharts(s *results.Sweep) []figure {
	x := sweepAxis(s)
	name := func(ser results.SweepSeries) string { return cmp.Or(ser.Label, "measured") }
	unit := s.Axis
	if s.Axis == "rate" {
		unit = "ops/s offered"
	}
	at := func(ser results.SweepSeries, p results.SweepPoint) string {
		return fmt.Sprintf("%s, %s %s", name(ser), s.AxisValue(p.Value), unit)
	}

	writes := chart{Title: "Successful writes/s by " + s.Axis, X: x, Y: axis{Label: "successful writes/s", Zero: true}}
	conflicts := chart{Title: "Conflict rate by " + s.Axis, X: x, Y: axis{Label: "conflict rate (share of write attempts)", Zero: true, Format: formatPercent}}
	p99 := chart{Title: "p99 latency by " + s.Axis, X: x, Y: latencyY(),
		Refs: []refLine{{Y: float64(s.SLO) / 1e6, Label: "SLO " + s.SLO.String()}}}
	p99.Y.Label = "p99 latency (log scale)"
	cpu := chart{Title: "apiserver CPU per successful write by " + s.Axis, X: x, Y: axis{Label: "apiserver CPU per successful write (log scale)", Scale: log10, Format: formatMillis}}
	// fit is the dashed curve of a series' fitted model (what: "USL fit").
	fit := func(i int, ser results.SweepSeries, what string, poor bool, at func(float64) float64) series {
		f := series{Name: joinNonEmpty(" ", ser.Label, what), Color: i, Dashed: true, Points: curve(at, ser.Points, x.Scale)}
		if poor {
			f.Name += " (poor fit)"
		}
		return f
	}
	var fits, costFits []series
	for i, ser := range s.Series {
		w := series{Name: name(ser), Color: i, Markers: true}
		c, l, cost := w, w, w
		for _, p := range ser.Points {
			w.Points = append(w.Points, point{X: p.Value, Y: p.WriteThroughput, Tip: fmt.Sprintf("%s: %.1f successful writes/s", at(ser, p), p.WriteThroughput)})
			c.Points = append(c.Points, point{X: p.Value, Y: 100 * p.ConflictRate, Tip: fmt.Sprintf("%s: %s conflicts", at(ser, p), words.Percent(p.ConflictRate))})
			l.Points = append(l.Points, point{X: p.Value, Y: float64(p.P99) / 1e6, Tip: fmt.Sprintf("%s: p99 %s", at(ser, p), words.Duration(p.P99))})
			if p.Cost != nil {
				cost.Points = append(cost.Points, point{X: p.Value, Y: float64(p.Cost.ApiserverPerWrite) / 1e6,
					Tip: fmt.Sprintf("%s: %s apiserver CPU per successful write, %.2f cores", at(ser, p), words.Duration(p.Cost.ApiserverPerWrite), p.Cost.ApiserverCores)})
			}
		}
		writes.Series = append(writes.Series, w)
		conflicts.Series = append(conflicts.Series, c)
		p99.Series = append(p99.Series, l)
		if len(cost.Points) > 0 {
			cpu.Series = append(cpu.Series, cost)
		}
		if m := ser.Model; m != nil && len(ser.Points) > 0 {
			fits = append(fits, fit(i, ser, "USL fit", m.Poor, m.At))
		}
		if m := ser.CostModel; m != nil && len(ser.Points) > 0 {
			costFits = append(costFits, fit(i, ser, "cost fit", m.Poor, func(n float64) float64 { return float64(m.At(n)) / 1e6 }))
		}
	}
	cpu.Series = append(cpu.Series, costFits...)
	writes.Series = append(writes.Series, fits...)
	writesCaption := "Medians of each point's samples."
	if len(fits) > 0 {
		writesCaption = "Medians of each point's samples; dashed: the Universal Scalability Law fitted to them (a poor fit predicts nothing)."
	}
	figs := []figure{
		{SVG: writes.SVG(), Caption: writesCaption},
		{SVG: conflicts.SVG(), Caption: "Write attempts that got a 409 (version or field-manager conflict)."},
		{SVG: p99.SVG(), Caption: fmt.Sprintf("Operation latency p99 against the objective (p99 ≤ %s).", s.SLO)},
	}
	if len(cpu.Series) > 0 {
		figs = append(figs, figure{SVG: cpu.SVG(), Caption: "The apiserver's CPU time in the measured window (process_cpu_seconds_total) over the successful writes: what each write that landed cost, the 409s on the way included; dashed: c·(1 + σ(N−1) + κN(N−1)) fitted to them (writers sweeps of 4 points or more)."})
	}
	return figs
}

// sweepAxis is a sweep's x axis: log2 when its values span a factor of 8
// or more, else linear; ticks at the values swept.
func sweepAxis(s *results.Sweep) axis {
	label := s.Axis
	if s.Axis == "rate" {
		label = "rate (ops/s offered)"
	}
	a := axis{Label: label, Format: func(v float64) string { return s.AxisValue(v) }}
	var values []float64
	for _, ser := range s.Series {
		for _, p := range ser.Points {
			values = append(values, p.Value)
		}
	}
	slices.Sort(values)
	values = slices.Compact(values)
	if len(values) > 0 && values[0] > 0 && values[len(values)-1]/values[0] >= 8 {
		a.Scale = log2
		a.Label += " (log scale)"
	}
	if len(values) <= maxTicks {
		a.Ticks = values
	} else {
		a.Format = nil
	}
	return a
}

// curve samples a fitted model at 60 points across the series' values,
// evenly on the axis' scale.
func curve(at func(float64) float64, pts []results.SweepPoint, sc scale) []point {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
	}
	const n = 60
	var out []point
	for k := range n {
		f := float64(k) / (n - 1)
		v := lo + f*(hi-lo)
		if sc == log2 && lo > 0 {
			v = lo * math.Pow(hi/lo, f)
		}
		if y := at(v); y > 0 && !math.IsNaN(y) && !math.IsInf(y, 0) {
			out = append(out, point{X: v, Y: y})
		}
	}
	return out
}
