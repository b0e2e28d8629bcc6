package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/spec"
)

// SweepAxes are the settings a sweep can sweep.
var SweepAxes = []string{"writers", "objects", "rate", "clients", "watchers"}

// DefaultSweep is what a sweep sweeps when no axis is given a list.
var DefaultSweep = Set("writers", 1, 2, 4, 8, 16, 32, 64)

// SweepDefault adds DefaultSweep to r when it gives no sweep axis, and
// reports whether it did.
func SweepDefault(r *Request) bool {
	if slices.ContainsFunc(r.Overrides, func(o Override) bool { return slices.Contains(SweepAxes, o.Name) }) {
		return false
	}
	r.Overrides = append(r.Overrides, DefaultSweep)
	return true
}

// SweepOptions are how a sweep runs: as a run (Options: Gate and Baseline
// do not apply), with its stop conditions and latency objective.
type SweepOptions struct {
	Options
	// StopAt end a series at the first point that meets one: absolute
	// gate thresholds ("p99 > 5s") on the point's medians. None: every
	// point runs.
	StopAt []string
	// SLO is the p99 latency objective the sweep answers for, above 0
	// (results.DefaultSLO is the Kubernetes SLO for mutating calls).
	SLO time.Duration
}

// series is one series of a sweep: the cells that differ only in the
// axis, in axis order, and its label.
type series struct {
	cells []int
	label string
}

// Sweep runs p as a sweep: the cells that differ only in the first sweep
// axis p varies (SweepAxes) make a series each, and every series runs its
// points in increasing order, interleaved point by point, each point
// Count samples, so that drift in the machine hits every series alike. A
// series stops at the first point that meets a stop condition. The
// sweep's document (sweep.json, with each series' USL fit and SLO
// answer) links the points' results; it is saved after every point, and
// shown on o.Stdout as the points end and at the end.
func Sweep(ctx context.Context, p *Plan, o SweepOptions) (*results.Sweep, error) {
	if err := o.check(p); err != nil {
		return nil, err
	}
	if p.Sides {
		return nil, spec.Input(errors.New("a sweep runs one configuration per point: an A/B baseline (--baseline-with, --baseline-spec) is for run"))
	}
	if o.SLO <= 0 {
		return nil, spec.Input(fmt.Errorf("--slo %s: give the p99 latency objective, e.g. 1s", o.SLO))
	}
	stops, err := parseStops(o.StopAt)
	if err != nil {
		return nil, err
	}
	var axis string
	var varying []string
	for _, v := range p.Cells[0].Values {
		if axis == "" && slices.Contains(SweepAxes, v.Name) {
			axis = v.Name
		}
		varying = append(varying, v.Name)
	}
	if axis == "" {
		return nil, spec.Input(errors.New("a sweep needs a list of values for --writers, --objects, --rate or --clients, e.g. --writers 1,2,4,8,16,32,64"))
	}
	if axis == "rate" && p.Cells[0].Spec.Rate <= 0 {
		return nil, spec.Input(errors.New("--rate: sweep offered loads above 0 (0 is the closed loop)"))
	}
	all, xs, err := splitSweep(p.Cells, axis)
	if err != nil {
		return nil, err
	}
	verb := "vary"
	if len(varying) == 1 {
		verb = "varies"
	}
	sw := &results.Sweep{RunID: newRunID(time.Now()), Axis: axis, SLO: o.SLO,
		Workload: fmt.Sprintf("%s (the first point; %s %s)", p.Cells[0].Workload, strings.Join(varying, " and "), verb)}
	for _, t := range stops {
		sw.StopAt = append(sw.StopAt, t.Text)
	}
	for _, ser := range all {
		sw.Series = append(sw.Series, results.SweepSeries{Label: ser.label})
	}
	outDir := cmp.Or(o.Out, filepath.Join("kb-bench-results", sw.RunID))
	err = session(ctx, p, o.Options, outDir, func(ctx context.Context, conn *cluster.Connection) error {
		return runSweep(ctx, p, o, conn, sw, all, xs, stops, outDir)
	})
	return sw, err
}

// runSweep runs the points of sw's series, saving sw after each point.
func runSweep(ctx context.Context, p *Plan, o SweepOptions, conn *cluster.Connection, sw *results.Sweep, all []series, xs []string, stops []analysis.Threshold, outDir string) error {
	fmt.Fprintf(o.Log, "sweep %s: %d values of %s x %s x %s, points interleaved across series\n",
		sw.RunID, len(xs), sw.Axis, words.Plural(len(all), "series"), words.Plural(p.Count, "sample"))
	v := newView(o.Options, true)
	var failed error
	for xi, x := range xs {
		points := make([]*CellResults, len(all))
		for k, ser := range all {
			if sw.Series[k].Stopped == "" {
				id := fmt.Sprintf("%s-c%d", sw.RunID, ser.cells[xi]+1)
				points[k] = &CellResults{Dir: store.PointDir(outDir, ser.label, sw.Axis, x), runID: id, point: pointLabel(ser.label, sw.Axis, x, 1, 1)}
				if p.Count > 1 {
					points[k].set = &results.ResultSet{RunID: id}
				}
			}
		}
		if !slices.ContainsFunc(points, func(c *CellResults) bool { return c != nil }) {
			break
		}
		for i := 1; i <= p.Count; i++ {
			for k, ser := range all {
				if points[k] == nil {
					continue
				}
				label := pointLabel(ser.label, sw.Axis, x, i, p.Count)
				fmt.Fprintf(o.Log, "%s\n", label)
				r, dir, err := points[k].run(ctx, p.Cells[ser.cells[xi]], o.Options, conn)
				if r == nil {
					return err
				}
				if verr := v.line(label, r); verr != nil {
					return verr
				}
				if err != nil { // shown above, not saved
					return err
				}
				if failed == nil {
					failed = checkFailed(r, dir)
				}
				if r.Interrupted || r.TargetLost != "" {
					// The point under way is not a point: its figures
					// would bend the curves and the fit. It is listed
					// apart.
					sw.Interrupted, sw.TargetLost = true, r.TargetLost
					underWay(sw, outDir, points, x)
					if err := store.WriteSweep(outDir, sw); err != nil {
						return err
					}
					if err := v.sweep(sw); err != nil {
						return err
					}
					fmt.Fprintf(o.Log, "sweep saved in %s\n", outDir)
					if r.TargetLost != "" {
						return fmt.Errorf("%w: %s", spec.ErrTargetLost, r.TargetLost)
					}
					return spec.ErrInterrupted
				}
			}
		}
		addPoints(sw, outDir, points, x, stops)
		if err := store.WriteSweep(outDir, sw); err != nil {
			return err
		}
	}
	if err := v.sweep(sw); err != nil {
		return err
	}
	if err := o.saved(ctx, "sweep", outDir); err != nil {
		return err
	}
	return failed
}

// pointLabel names sample i of count of a sweep's point: its series, the
// axis value and, with several samples, the sample.
func pointLabel(series, axis, x string, i, count int) string {
	label := strings.TrimSpace(series + " " + axis + "=" + x)
	if count > 1 {
		label += fmt.Sprintf(" sample %d of %d", i, count)
	}
	return label
}

// addPoints adds the point at axis value x of every series that ran it,
// analyses the sweep again, and stops each series whose point meets a
// stop condition.
func addPoints(sw *results.Sweep, outDir string, points []*CellResults, x string, stops []analysis.Threshold) {
	value, _ := strconv.ParseFloat(x, 64)
	for k := range sw.Series {
		if points[k] == nil || len(points[k].Results) == 0 {
			continue
		}
		sw.Series[k].Points = append(sw.Series[k].Points, analysis.NewSweepPoint(value, pointDir(outDir, points[k].Dir), points[k].Results))
		for _, t := range stops {
			if held, why := t.HeldBy(points[k].Results); held {
				sw.Series[k].Stopped = fmt.Sprintf("%s at %s %s (%s)", t.Text, x, sw.Axis, why)
				break
			}
		}
	}
	analysis.Analyze(sw)
}

// underWay lists the points at axis value x that were running when the
// sweep stopped, each with the samples of it that ran, apart from the
// series' points.
func underWay(sw *results.Sweep, outDir string, points []*CellResults, x string) {
	value, _ := strconv.ParseFloat(x, 64)
	for k := range sw.Series {
		if points[k] == nil || len(points[k].Results) == 0 {
			continue
		}
		sw.Series[k].UnderWay = new(analysis.NewSweepPoint(value, pointDir(outDir, points[k].Dir), points[k].Results))
	}
}

// pointDir is a point's directory relative to the sweep's, as sweep.json
// names it.
func pointDir(outDir, dir string) string {
	rel, err := filepath.Rel(outDir, dir)
	if err != nil {
		rel = dir
	}
	return filepath.ToSlash(rel)
}

// splitSweep groups cells into series (the cells that differ only in the
// axis), each in the order of the axis values, which must go up; the
// values are written as the sweep's document shows them
// (results.Sweep.AxisValue): "8", "2.5", "1000000".
func splitSweep(cells []Cell, axis string) ([]series, []string, error) {
	var all []series
	var xs []string
	prev, down := math.Inf(-1), false
	index := map[string]int{}
	for c, cl := range cells {
		var rest []string
		var x float64
		for _, v := range cl.Values {
			if v.Name == axis {
				x = reflect.ValueOf(v.Value).Convert(reflect.TypeFor[float64]()).Float()
				continue
			}
			rest = append(rest, v.Name+"="+fmt.Sprint(v.Value))
		}
		label := strings.Join(rest, " ")
		k, ok := index[label]
		if !ok {
			k = len(all)
			index[label] = k
			all = append(all, series{label: label})
		}
		all[k].cells = append(all[k].cells, c)
		if k == 0 {
			down, prev = down || x <= prev, x
			xs = append(xs, strconv.FormatFloat(x, 'f', -1, 64))
		}
	}
	if down {
		return nil, nil, spec.Input(fmt.Errorf("--%s %s: a sweep goes up; give the values in increasing order, each once", axis, strings.Join(xs, ",")))
	}
	return all, xs, nil
}

// parseStops reads the stop conditions: absolute gate thresholds, or
// "none" alone.
func parseStops(texts []string) ([]analysis.Threshold, error) {
	var out []analysis.Threshold
	for _, t := range texts {
		if strings.TrimSpace(t) == "none" {
			if len(texts) > 1 {
				return nil, spec.Input(errors.New("--stop-at none runs every point: give it alone"))
			}
			return nil, nil
		}
		th, err := analysis.ParseThreshold(t)
		if err != nil {
			return nil, spec.Input(fmt.Errorf("--stop-at: %w", err))
		}
		if th.Unit == "" { // a scenario's figure: a typo would never stop
			return nil, spec.Input(fmt.Errorf("--stop-at %q: metric %q is not known: a sweep stops on %s", t, th.Metric, strings.Join(analysis.MetricNames(), ", ")))
		}
		if th.Relative {
			return nil, spec.Input(fmt.Errorf("--stop-at %q: a stop condition is absolute (e.g. \"p99 > 5s\"); there is no baseline in a sweep", t))
		}
		out = append(out, th)
	}
	return out, nil
}
