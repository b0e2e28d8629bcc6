package html

import (
	"cmp"
	"html"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// scale maps an axis' values onto its length.
type scale int

// The scales an axis can have.
const (
	// linear spaces values evenly.
	linear scale = iota
	// log10 spaces decades evenly; it shows values > 0 only.
	log10
	// log2 spaces doublings evenly; it shows values > 0 only.
	log2
	// nines is a percentile axis for shares p in [0, 1): it spaces
	// log10(1/(1−p)) evenly, so that 90%, 99%, 99.9%... are as far apart
	// as in HdrHistogram's plots.
	nines
)

// axis is one axis of a chart.
type axis struct {
	// Label names the axis and its unit.
	Label string
	Scale scale
	// Zero includes 0 in a linear axis' range.
	Zero bool
	// Integer keeps a linear axis' ticks on whole numbers.
	Integer bool
	// Ticks, when set, are the ticks, and the range spans them and the data.
	Ticks []float64
	// Format writes a tick label or a value in a tooltip; nil writes the
	// number.
	Format func(float64) string
}

// point is one value of a series. A point with a Tip is always drawn with a
// marker whose tooltip is the Tip.
type point struct {
	X, Y float64
	Tip  string
}

// series is one line of a chart.
type series struct {
	Name   string
	Points []point
	// Color is an index in palette, wrapping around (color).
	Color int
	// Dashed draws a dashed line: a model rather than a measurement.
	Dashed bool
	// Markers draws a marker with a tooltip at every point.
	Markers bool
}

// refLine is a horizontal reference line, such as an objective.
type refLine struct {
	Y     float64
	Label string
}

// chart is a line chart: one or more series against two axes, with a
// legend, and horizontal reference lines.
type chart struct {
	Title  string
	X, Y   axis
	Series []series
	Refs   []refLine
}

// palette is the Okabe-Ito palette, safe for colour-blind readers, ordered
// for a white background. series take colours by index.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// color is the series' palette colour.
func (s series) color() string { return palette[s.Color%len(palette)] }

// chart geometry, in SVG user units.
const (
	chartWidth = 560
	plotLeft   = 66
	plotRight  = 30
	plotTop    = 52
	plotHeight = 230
	plotWidth  = chartWidth - plotLeft - plotRight
	legendRow  = 20
	charWidth  = 6.7 // about the width of a 12px character, to lay out the legend
	maxTicks   = 12
	// maxTickSteps bounds the loops that place ticks: a nice step makes
	// at most a few dozen of them, and a loop that cannot advance (a step
	// lost in the precision of huge values) ends all the same.
	maxTickSteps = 4 * maxTicks
	maxNines     = 9 // 99.9999999%: more than a histogram of a day's ops needs
	minNines     = 5 // 99.999%, the least a percentile axis shows
	textColor    = "#1f2328"
	mutedColor   = "#57606a"
	gridColor    = "#e4e8ec"
	frameColor   = "#8c959f"
	background   = "#ffffff"
	refColor     = "#3d444d"
	noDataLabel  = "no data"
)

// transform maps a value into the axis' linear space; ok is false for a
// value the scale cannot show (≤ 0 on a log scale, NaN, ±Inf).
func (s scale) transform(v float64) (t float64, ok bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	switch s {
	case log10:
		return math.Log10(v), v > 0
	case log2:
		return math.Log2(v), v > 0
	case nines:
		return -math.Log10(1 - v), v >= 0 && v < 1
	}
	return v, true
}

// inverse maps t from the axis' linear space back to a value.
func (s scale) inverse(t float64) float64 {
	switch s {
	case log10:
		return math.Pow(10, t)
	case log2:
		return math.Exp2(t)
	case nines:
		return 1 - math.Pow(10, -t)
	}
	return t
}

// tick is one labelled position on an axis.
type tick struct {
	Value float64
	Label string
}

// axisRange is an axis' extent, in its scale's linear space, and its ticks.
type axisRange struct {
	scale  scale
	lo, hi float64
	ticks  []tick
}

// frac is where v falls on the axis, from 0 (lo) to 1 (hi).
func (r axisRange) frac(v float64) (float64, bool) {
	t, ok := r.scale.transform(v)
	if !ok {
		return 0, false
	}
	return (t - r.lo) / (r.hi - r.lo), true
}

// label formats v as the axis does.
func (a axis) label(v float64) string {
	if a.Format != nil {
		return a.Format(v)
	}
	return formatNumber(v)
}

// layout computes the axis' range and ticks for the values vs it must
// show; ok is false when its scale can show none of them.
func (a axis) layout(vs []float64) (r axisRange, ok bool) {
	r.scale = a.Scale
	var ts []float64
	for _, v := range vs {
		if t, ok := a.Scale.transform(v); ok {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return r, false
	}
	var explicit []float64
	for _, v := range a.Ticks {
		if t, ok := a.Scale.transform(v); ok {
			explicit = append(explicit, v)
			ts = append(ts, t)
		}
	}
	lo, hi := slices.Min(ts), slices.Max(ts)
	if math.IsInf(hi-lo, 0) {
		// Values a float64 cannot span (±1.7e308): nothing to lay out.
		return r, false
	}
	values := explicit // tick values: those given, else nice ones made below
	switch a.Scale {
	case nines:
		lo, hi = 0, math.Min(math.Max(minNines, math.Ceil(hi-1e-9)), maxNines)
		for k := 0; k <= int(hi); k++ {
			r.ticks = append(r.ticks, tick{Value: a.Scale.inverse(float64(k)), Label: ninesLabel(k)})
		}
		r.lo, r.hi = lo, hi
		return r, true
	case log10, log2:
		if len(explicit) == 0 {
			lo, hi = math.Floor(lo+1e-9), math.Ceil(hi-1e-9)
		}
		if hi-lo < 1e-9 {
			lo, hi = lo-1, hi+1
		}
		if len(explicit) > 0 {
			break
		}
		step := math.Max(1, math.Ceil((hi-lo)/(maxTicks-1)))
		for i := 0; i <= maxTickSteps; i++ { // bounded, whatever the values
			k := lo + float64(i)*step
			if k > hi+1e-9 {
				break
			}
			d := a.Scale.inverse(k) // a whole power: exact
			values = append(values, d)
			// Within two decades, 2 and 5 help reading values.
			if a.Scale == log10 && hi-lo <= 2 && k < hi-1e-9 {
				values = append(values, 2*d, 5*d)
			}
		}
	default:
		if a.Zero {
			lo, hi = math.Min(lo, 0), math.Max(hi, 0)
		}
		if hi-lo < 1e-12*math.Max(math.Abs(lo), 1) {
			d := cmp.Or(math.Abs(lo)/2, 1)
			if a.Zero && lo >= 0 {
				lo, hi = 0, hi+2*d
			} else {
				lo, hi = lo-d, hi+d
			}
		}
		if len(explicit) > 0 {
			break
		}
		step := niceStep((hi-lo)/5, a.Integer)
		lo, hi = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
		first := math.Round(lo / step)
		for i := 0; i <= maxTickSteps; i++ { // bounded, whatever the values
			v := (first + float64(i)) * step
			if v > hi+step*1e-9 {
				break
			}
			values = append(values, v)
		}
	}
	r.lo, r.hi = lo, hi
	slices.Sort(values)
	values = slices.Compact(values)
	every := max((len(values)+maxTicks-1)/maxTicks, 1) // at most maxTicks of them
	for i, v := range values {
		if f, ok := r.frac(v); ok && i%every == 0 && f >= -1e-9 && f <= 1+1e-9 {
			r.ticks = append(r.ticks, tick{Value: v, Label: a.label(v)})
		}
	}
	return r, true
}

// niceStep is the step of 1, 2, 2.5 or 5 times a power of ten nearest
// above raw (at least 1 for integer axes).
func niceStep(raw float64, integer bool) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if raw/mag <= m {
			step = m * mag
			break
		}
	}
	if integer {
		step = math.Max(1, math.Floor(step))
	}
	return step
}

// ninesLabel labels the percentile 1 − 10^−k: 0%, 90%, 99%, 99.9%...
func ninesLabel(k int) string {
	if k <= 2 {
		return []string{"0%", "90%", "99%"}[max(k, 0)]
	}
	return "99." + strings.Repeat("9", k-2) + "%"
}

// legendEntry is one series in the legend, its name there (marked when
// it has no point to show) and where it goes.
type legendEntry struct {
	s      series
	name   string
	x, row int
}

// SVG draws the chart as an inline SVG element of class "chart", with a
// <title>, one element of class "series" per series that has a point to
// show, and tooltips (SVG <title>) on the lines and markers. A chart with
// nothing to show says "no data".
func (c chart) SVG() template.HTML {
	// The points each axis can show; the rest are left out.
	shown := make([][]point, len(c.Series))
	var xs, ys []float64
	for i, s := range c.Series {
		for _, p := range s.Points {
			_, okx := c.X.Scale.transform(p.X)
			_, oky := c.Y.Scale.transform(p.Y)
			if okx && oky {
				shown[i] = append(shown[i], p)
				xs, ys = append(xs, p.X), append(ys, p.Y)
			}
		}
	}
	for _, ref := range c.Refs {
		ys = append(ys, ref.Y)
	}
	xr, okx := c.X.layout(xs) // no point shown: no data
	yr, oky := c.Y.layout(ys)
	hasData := okx && oky

	// The legend, wrapped in rows under the plot.
	var legend []legendEntry
	x, row := 0, 0
	for i, s := range c.Series {
		if s.Name == "" {
			continue
		}
		e := legendEntry{s: s, name: s.Name}
		if len(shown[i]) == 0 {
			e.name += " (no data)"
		}
		w := 34 + int(math.Ceil(charWidth*float64(utf8.RuneCountInString(e.name)))) + 18
		if x > 0 && x+w > chartWidth-2*12 {
			x, row = 0, row+1
		}
		e.x, e.row = x, row
		legend = append(legend, e)
		x += w
	}
	rows := 0
	if len(legend) > 0 {
		rows = row + 1
	}
	xAxisBottom := plotTop + plotHeight + 44
	height := xAxisBottom + rows*legendRow + 10

	write := func(b *strings.Builder, parts ...string) { b.WriteString(strings.Join(parts, "")) }
	var b strings.Builder
	w := func(parts ...string) { write(&b, parts...) }
	w(`<svg class="chart" viewBox="0 0 `, itoa(chartWidth), " ", itoa(height), `" width="`, itoa(chartWidth), `" height="`, itoa(height),
		`" role="img" font-size="12">`, "\n")
	w(`<title>`, esc(c.Title), "</title>\n")
	w(`<rect width="`, itoa(chartWidth), `" height="`, itoa(height), `" fill="`, background, `"/>`, "\n")
	w(`<text x="12" y="22" font-size="15" font-weight="600" fill="`, textColor, `">`, esc(c.Title), "</text>\n")
	if c.Y.Label != "" {
		w(`<text x="`, itoa(plotLeft), `" y="`, itoa(plotTop-10), `" fill="`, mutedColor, `">`, esc(c.Y.Label), "</text>\n")
	}
	if c.X.Label != "" {
		w(`<text x="`, itoa(plotLeft+plotWidth/2), `" y="`, itoa(xAxisBottom-4), `" text-anchor="middle" fill="`, mutedColor, `">`, esc(c.X.Label), "</text>\n")
	}
	px := func(f float64) string { return coord(plotLeft + f*plotWidth) }
	py := func(f float64) string { return coord(plotTop + plotHeight - f*plotHeight) }
	// at is where a point shown goes: its x and y coordinates.
	at := func(p point) (string, string) {
		fx, _ := xr.frac(p.X)
		fy, _ := yr.frac(p.Y)
		return px(fx), py(fy)
	}

	if hasData {
		// Each tick has a grid line and a label, in two groups.
		var grid, labels strings.Builder
		for _, t := range xr.ticks {
			f, _ := xr.frac(t.Value)
			write(&grid, `<line x1="`, px(f), `" x2="`, px(f), `" y1="`, itoa(plotTop), `" y2="`, itoa(plotTop+plotHeight), `"/>`, "\n")
			write(&labels, `<text x="`, px(f), `" y="`, itoa(plotTop+plotHeight+17), `" text-anchor="middle">`, esc(t.Label), "</text>\n")
		}
		for _, t := range yr.ticks {
			f, _ := yr.frac(t.Value)
			write(&grid, `<line x1="`, itoa(plotLeft), `" x2="`, itoa(plotLeft+plotWidth), `" y1="`, py(f), `" y2="`, py(f), `"/>`, "\n")
			write(&labels, `<text x="`, itoa(plotLeft-7), `" y="`, coord(plotTop+plotHeight-f*plotHeight+4), `" text-anchor="end">`, esc(t.Label), "</text>\n")
		}
		w(`<g class="grid" stroke="`, gridColor, `" stroke-width="1">`, "\n", grid.String(), "</g>\n")
		w(`<g class="ticks" fill="`, mutedColor, `">`, "\n", labels.String(), "</g>\n")
	}
	w(`<rect class="frame" x="`, itoa(plotLeft), `" y="`, itoa(plotTop), `" width="`, itoa(plotWidth), `" height="`, itoa(plotHeight),
		`" fill="none" stroke="`, frameColor, `"/>`, "\n")
	if !hasData {
		w(`<text class="no-data" x="`, itoa(plotLeft+plotWidth/2), `" y="`, itoa(plotTop+plotHeight/2+5), `" text-anchor="middle" font-size="15" fill="`, mutedColor, `">`, noDataLabel, "</text>\n")
	} else {
		for _, ref := range c.Refs {
			f, ok := yr.frac(ref.Y)
			if !ok {
				continue
			}
			w(`<g class="ref"><line x1="`, itoa(plotLeft), `" x2="`, itoa(plotLeft+plotWidth), `" y1="`, py(f), `" y2="`, py(f),
				`" stroke="`, refColor, `" stroke-width="1.5" stroke-dasharray="2 3"/>`)
			w(`<text x="`, itoa(plotLeft+6), `" y="`, coord(plotTop+plotHeight-f*plotHeight-5), `" fill="`, refColor, `">`, esc(ref.Label), "</text>")
			w(`<title>`, esc(ref.Label), "</title></g>\n")
		}
		for i, s := range c.Series {
			pts := shown[i]
			if len(pts) == 0 {
				continue
			}
			col := s.color()
			w(`<g class="series-group">`, "\n")
			if len(pts) > 1 {
				w(`<polyline class="series" fill="none" stroke="`, col, `" stroke-width="2" stroke-linejoin="round" stroke-linecap="round"`)
				if s.Dashed {
					w(` stroke-dasharray="7 5"`)
				}
				xy := make([]string, len(pts))
				for j, p := range pts {
					x, y := at(p)
					xy[j] = x + "," + y
				}
				w(` points="`, strings.Join(xy, " "), `"><title>`, esc(s.Name), "</title></polyline>\n")
			}
			for _, p := range pts {
				if !s.Markers && p.Tip == "" && len(pts) > 1 {
					continue
				}
				tip := cmp.Or(p.Tip, c.tip(s, p))
				x, y := at(p)
				class := "marker"
				if len(pts) == 1 {
					class = "series marker" // the only mark of the series
				}
				w(`<circle class="`, class, `" cx="`, x, `" cy="`, y, `" r="3.5" fill="`, col, `" stroke="`, background, `" stroke-width="1"><title>`,
					esc(tip), "</title></circle>\n")
			}
			w("</g>\n")
		}
	}
	if len(legend) > 0 {
		w(`<g class="legend" fill="`, textColor, `">`, "\n")
		for _, e := range legend {
			x0 := 12 + e.x
			y := xAxisBottom + e.row*legendRow + 14
			col := e.s.color()
			w(`<line x1="`, itoa(x0), `" x2="`, itoa(x0+28), `" y1="`, itoa(y-4), `" y2="`, itoa(y-4), `" stroke="`, col, `" stroke-width="2"`)
			if e.s.Dashed {
				w(` stroke-dasharray="7 5"`)
			}
			w("/>")
			if e.s.Markers {
				w(`<circle cx="`, itoa(x0+14), `" cy="`, itoa(y-4), `" r="3.5" fill="`, col, `"/>`)
			}
			w(`<text x="`, itoa(x0+34), `" y="`, itoa(y), `">`, esc(e.name), "</text>\n")
		}
		w("</g>\n")
	}
	w("</svg>")
	return template.HTML(b.String())
}

// tip is the default tooltip of a point: the series, x and y.
func (c chart) tip(s series, p point) string {
	t := c.X.label(p.X) + ", " + c.Y.label(p.Y)
	if s.Name != "" {
		t = s.Name + ": " + t
	}
	return t
}

// coord writes an SVG coordinate with one decimal.
func coord(v float64) string {
	r := math.Round(v*10) / 10
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

func itoa(i int) string { return strconv.Itoa(i) }

func esc(s string) string { return html.EscapeString(s) }

// formatNumber writes v with four significant digits at most, without
// trailing zeros; 10000 and more in k, a million and more in M.
func formatNumber(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trimFloat(v/1e6, 4) + "M"
	case a >= 1e4:
		return trimFloat(v/1e3, 4) + "k"
	}
	return trimFloat(v, 4)
}

// trimFloat writes v with sig significant digits (never in exponent form)
// and no trailing zeros.
func trimFloat(v float64, sig int) string {
	switch {
	case v == 0:
		return "0"
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	}
	decimals := max(sig-1-int(math.Floor(math.Log10(math.Abs(v)))), 0)
	s := strconv.FormatFloat(v, 'f', min(decimals, 9), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// formatMillis writes a latency given in milliseconds: 250 µs, 12 ms, 1.5 s.
func formatMillis(ms float64) string {
	switch a := math.Abs(ms); {
	case a == 0:
		return "0"
	case a >= 1000:
		return trimFloat(ms/1000, 3) + " s"
	case a >= 1:
		return trimFloat(ms, 3) + " ms"
	}
	return trimFloat(ms*1000, 3) + " µs"
}

// formatPercent writes a percentage (already times 100).
func formatPercent(v float64) string { return trimFloat(v, 3) + "%" }
