package html

import (
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

func labels(r axisRange) []string {
	var out []string
	for _, t := range r.ticks {
		out = append(out, t.Label)
	}
	return out
}

func TestAxisTicks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		axis   axis
		values []float64
		want   []string
	}{
		{"latency over decades", latencyY(), []float64{1.5, 42, 300}, []string{"1 ms", "10 ms", "100 ms", "1 s"}},
		{"latency within two decades", latencyY(), []float64{2.5, 40}, []string{"1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms", "100 ms"}},
		{"sub-millisecond latency", latencyY(), []float64{0.25, 3}, []string{"100 µs", "200 µs", "500 µs", "1 ms", "2 ms", "5 ms", "10 ms"}},
		{"one latency", latencyY(), []float64{10}, []string{"1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms", "100 ms"}},
		{"seconds to an hour", latencyY(), []float64{0.01, 3.6e6}, []string{"10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s", "100 s", "1000 s", "10000 s"}},
		{"percentiles", spectrumX(), []float64{0, 0.5, 0.999}, []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}},
		{"percentiles of many values", spectrumX(), []float64{0, 1 - 1e-7}, []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%", "99.99999%"}},
		{"throughput from zero", axis{Zero: true}, []float64{252, 347}, []string{"0", "100", "200", "300", "400"}},
		{"small linear", axis{}, []float64{0.12, 0.71}, []string{"0", "0.2", "0.4", "0.6", "0.8"}},
		{"thousands", axis{Zero: true}, []float64{12500, 48000}, []string{"0", "10k", "20k", "30k", "40k", "50k"}},
		{"attempts", axis{Integer: true}, []float64{1, 2, 3}, []string{"1", "2", "3"}},
		{"one value from zero", axis{Zero: true}, []float64{5}, []string{"0", "1", "2", "3", "4", "5"}},
		{"one value", axis{}, []float64{5}, []string{"2", "3", "4", "5", "6", "7", "8"}},
		{"zero alone", axis{}, []float64{0}, []string{"-1", "-0.5", "0", "0.5", "1"}},
		{"percent", axis{Zero: true, Format: formatPercent}, []float64{0, 71}, []string{"0%", "20%", "40%", "60%", "80%"}},
		{"writers", axis{Scale: log2, Ticks: []float64{1, 2, 4, 8, 16}}, []float64{1, 16}, []string{"1", "2", "4", "8", "16"}},
		{"log2 without ticks", axis{Scale: log2}, []float64{3, 100}, []string{"2", "4", "8", "16", "32", "64", "128"}},
		{"values a scale cannot show are left out", latencyY(), []float64{0, -1, math.NaN(), math.Inf(1), 5, 50}, []string{"1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms", "100 ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := tc.axis.layout(tc.values)
			if !ok {
				t.Fatal("layout found nothing to show")
			}
			if got := labels(r); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ticks %q, want %q", got, tc.want)
			}
			if !(r.hi > r.lo) || math.IsNaN(r.lo) || math.IsNaN(r.hi) || math.IsInf(r.lo, 0) || math.IsInf(r.hi, 0) {
				t.Errorf("range [%v, %v]", r.lo, r.hi)
			}
			for _, v := range tc.values {
				if f, ok := r.frac(v); ok && (f < -1e-9 || f > 1+1e-9) {
					t.Errorf("value %v falls outside the axis (at %v)", v, f)
				}
			}
		})
	}
}

func TestAxisWithNothingToShow(t *testing.T) {
	for _, a := range []axis{latencyY(), spectrumX(), {}, {Scale: log2}} {
		if _, ok := a.layout([]float64{math.NaN(), math.Inf(-1)}); ok {
			t.Errorf("scale %d laid out NaN and -Inf", a.Scale)
		}
	}
	if _, ok := latencyY().layout([]float64{0, -3}); ok {
		t.Error("a log axis laid out 0 and -3")
	}
	if _, ok := spectrumX().layout([]float64{1, 1.5}); ok {
		t.Error("a percentile axis laid out 100% and 150%")
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{formatMillis(0.1), "100 µs"},
		{formatMillis(1), "1 ms"},
		{formatMillis(57.599), "57.6 ms"},
		{formatMillis(1000), "1 s"},
		{formatMillis(1038.847), "1.04 s"},
		{formatNumber(283.52941176470586), "283.5"},
		{formatNumber(0.30000000000000004), "0.3"},
		{formatNumber(-0.0), "0"},
		{formatNumber(12500), "12.5k"},
		{formatNumber(2.5e6), "2.5M"},
		{formatNumber(math.NaN()), "–"},
		{formatPercent(71.00000001), "71%"},
		{ninesLabel(0), "0%"},
		{ninesLabel(3), "99.9%"},
		{ninesLabel(5), "99.999%"},
		{coord(-0.04), "0"},
		{coord(12.345), "12.3"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// seriesElement finds an element of class series (as the browser test's
// selector .series does).
var seriesElement = regexp.MustCompile(`class="(series|series [^"]*)"`)

// checkFinite fails when svg holds NaN or an infinity.
func checkFinite(t *testing.T, svg string) {
	t.Helper()
	if loc := notANumber.FindStringIndex(svg); loc != nil {
		t.Errorf("the chart contains %q: %s", svg[loc[0]:loc[1]], svg)
	}
}

func TestEmptyChart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		series []series
	}{
		{"no series", nil},
		{"a series without points", []series{{Name: "ops/s"}}},
		{"points a log axis cannot show", []series{{Name: "p99", Points: []point{{X: 1, Y: 0}, {X: 2, Y: -1}}}}},
		{"NaN and Inf", []series{{Name: "x", Points: []point{{X: math.NaN(), Y: 1}, {X: 1, Y: math.Inf(1)}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(chart{Title: "p99 by writers", X: axis{Label: "writers"}, Y: latencyY(), Series: tc.series,
				Refs: []refLine{{Y: 1000, Label: "SLO 1s"}}}.SVG())
			checkFinite(t, svg)
			if !strings.Contains(svg, ">no data</text>") {
				t.Errorf("an empty chart does not say no data:\n%s", svg)
			}
			if seriesElement.MatchString(svg) || strings.Contains(svg, "<polyline") {
				t.Errorf("an empty chart drew a series:\n%s", svg)
			}
			if !strings.HasPrefix(svg, `<svg class="chart"`) || !strings.Contains(svg, "<title>p99 by writers</title>") {
				t.Errorf("an empty chart is not a chart with a title:\n%s", svg)
			}
			for _, s := range tc.series {
				if !strings.Contains(svg, ">"+s.Name+" (no data)</text>") {
					t.Errorf("the legend does not say %s has no data:\n%s", s.Name, svg)
				}
			}
		})
	}
}

func TestChartDrawsEverySeries(t *testing.T) {
	svg := string(chart{
		Title: "writes <&> by writers",
		X:     axis{Label: "writers", Scale: log2, Ticks: []float64{1, 2, 4, 8}},
		Y:     axis{Label: "writes/s", Zero: true},
		Series: []series{
			{Name: "retry", Color: 0, Markers: true, Points: []point{{X: 1, Y: 300}, {X: 2, Y: 550}, {X: 4, Y: 840}, {X: 8, Y: 950, Tip: `8 writers: "950"`}}},
			{Name: "retry USL fit", Color: 0, Dashed: true, Points: []point{{X: 1, Y: 310}, {X: 8, Y: 960}}},
			{Name: "one point", Color: 2, Points: []point{{X: 2, Y: 100}, {X: 0, Y: 1}}}, // x=0 cannot be shown on log2
			{Name: "nothing", Color: 3},
		},
		Refs: []refLine{{Y: 1000, Label: "limit"}},
	}.SVG())
	checkFinite(t, svg)
	if got := len(seriesElement.FindAllString(svg, -1)); got != 3 {
		t.Errorf("%d series elements, want 3 (two lines and the marker of a one-point series)", got)
	}
	for _, want := range []string{
		`stroke-dasharray="7 5" points=`,                          // the fit is dashed
		"<title>writes &lt;&amp;&gt; by writers</title>",          // escaped title
		"<title>8 writers: &#34;950&#34;</title>",                 // the tip of a point
		"<title>retry: 2, 550</title>",                            // a default tip
		">limit</text>",                                           // the reference line's label
		">nothing (no data)</text>",                               // in the legend all the same
		`fill="` + palette[2] + `" stroke="#ffffff" stroke-width`, // the one point's marker in its colour
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %s:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "no data</text>\n</svg>") || strings.Contains(svg, `class="no-data"`) {
		t.Error("a chart with data says no data")
	}
}

// The spectrum runs from 0% to the largest value's percentile, marks the
// usual percentiles, and never goes down.
func TestSpectrum(t *testing.T) {
	h := metrics.NewHistogram()
	for v := int64(1); v <= 10000; v++ {
		_ = h.RecordValue(v * 100) // 0.1 ms to 1 s
	}
	pts := spectrum(h, "op")
	if len(pts) < 60 {
		t.Fatalf("%d points", len(pts))
	}
	if pts[0].X != 0 {
		t.Errorf("the spectrum starts at %v, want 0%%", pts[0].X)
	}
	last := pts[len(pts)-1]
	if want := 1 - 1.0/10000; math.Abs(last.X-want) > 1e-12 || last.Y != float64(h.Max())/1000 || !strings.HasPrefix(last.Tip, "op max: 1 s") {
		t.Errorf("last point %+v, want the max at %v", last, want)
	}
	var tips []string
	for i, p := range pts {
		if i > 0 && (p.X <= pts[i-1].X || p.Y < pts[i-1].Y) {
			t.Errorf("point %d %+v after %+v", i, p, pts[i-1])
		}
		if p.Tip != "" {
			tips = append(tips, strings.SplitN(p.Tip, ":", 2)[0])
		}
	}
	if want := []string{"op p50", "op p90", "op p99", "op p99.9", "op max"}; !reflect.DeepEqual(tips, want) {
		t.Errorf("marked %q, want %q", tips, want)
	}
	// 300 ops: p99 (rank 297, 3 ops beyond) is the 4th slowest, and its
	// marker says so.
	small := metrics.NewHistogram()
	for v := int64(1); v <= 300; v++ {
		_ = small.RecordValue(v)
	}
	var p99 string
	for _, p := range spectrum(small, "op") {
		if strings.HasPrefix(p.Tip, "op p99:") {
			p99 = p.Tip
		}
	}
	if want := "op p99: 297 µs (p99 of 300 ops = the 4th slowest op)"; p99 != want {
		t.Errorf("p99 marker of 300 ops %q, want %q", p99, want)
	}
	if pts := spectrum(metrics.NewHistogram(), "empty"); pts != nil {
		t.Errorf("an empty histogram gave %v", pts)
	}
	one := metrics.NewHistogram()
	_ = one.RecordValue(1500)
	if pts := spectrum(one, "one"); len(pts) != 1 || pts[0].X != 0 || pts[0].Y != 1.5 {
		t.Errorf("one value gave %+v", pts)
	}
}

// Values at the ends of what a float64 holds are laid out in a bounded
// number of steps: at most maxTicks ticks, or nothing when no axis can
// span them (they once overflowed the step to +Inf and the tick loop never
// advanced, taking all memory).
func TestAxisOfExtremeValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		axis   axis
		values []float64
		ok     bool
	}{
		{"both ends", axis{}, []float64{-1.7e308, 1, 12, 1.7e308}, false},
		{"both ends from zero", axis{Zero: true}, []float64{-math.MaxFloat64, math.MaxFloat64}, false},
		{"huge and close", axis{}, []float64{1.7e308, 1.6999999999999e308}, true},
		{"huge alone", axis{Zero: true, Integer: true}, []float64{1.7e308}, true},
		{"tiny", axis{}, []float64{5e-324, 1e-323}, true},
		{"log of everything", latencyY(), []float64{5e-324, 1.7e308}, true},
		{"log2 of everything", axis{Scale: log2}, []float64{5e-324, 1.7e308}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := tc.axis.layout(tc.values)
			if ok != tc.ok {
				t.Fatalf("laid out %v, want %v", ok, tc.ok)
			}
			if len(r.ticks) > maxTicks {
				t.Errorf("%d ticks", len(r.ticks))
			}
			for _, tk := range r.ticks {
				if math.IsNaN(tk.Value) || math.IsInf(tk.Value, 0) {
					t.Errorf("tick %v", tk.Value)
				}
			}
		})
	}
}

// A sweep whose points measured their cost gets a chart of the apiserver's
// CPU per successful write; one without does not.
func TestSweepCostChart(t *testing.T) {
	sw := resultstest.Sweep()
	if n := len(sweepCharts(sw)); n != 3 {
		t.Fatalf("a sweep without cost has %d charts, want 3", n)
	}
	for i := range sw.Series[0].Points {
		sw.Series[0].Points[i].Cost = &results.PointCost{ApiserverCores: 0.5, ApiserverPerWrite: time.Duration(i+1) * time.Millisecond}
	}
	sw.Series[0].CostModel = &results.CostFit{C: time.Millisecond, Sigma: 0.2, R2: 0.99}
	figs := sweepCharts(sw)
	if svg := string(figs[len(figs)-1].SVG); !strings.Contains(svg, "strategy=update cost fit") {
		t.Errorf("the CPU chart has no dashed fit of strategy=update")
	}
	if len(figs) != 4 || !strings.Contains(string(figs[3].SVG), "apiserver CPU per successful write") || !strings.Contains(string(figs[3].SVG), "strategy=update") {
		t.Errorf("charts %d, want a 4th of the apiserver's CPU per successful write for strategy=update", len(figs))
	}
}
