package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

// sweepAxes are the settings a sweep can sweep, in the order one is
// chosen when several are given lists.
var sweepAxes = []string{"writers", "objects", "rate", "clients"}

// defaultSweep is what a sweep sweeps when no axis is given a list.
const defaultSweep = "writers=1,2,4,8,16,32,64"

type sweepFlags struct {
	run    runFlags
	stopAt []string
	slo    time.Duration
}

func newSweepCommand(s Streams, version string, getenv func(string) string) *cobra.Command {
	f := &sweepFlags{}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run a benchmark at increasing writers (or objects, rate, clients) and model its capacity",
		Long: `Sweep one axis of a benchmark, writers by default, on one control plane:
each value is a run (or --count samples) kept below the sweep's directory,
which sweep.json links. A comma-separated list of strategies (or of any
other setting that takes one) makes one series each, interleaved point by
point so that drift in the machine hits every series alike.

For each series the sweep prints a table (throughput, successful writes/s,
conflict rate, attempts p99, p99 latency, gave up, lost updates, server
cross-check), fits the Universal Scalability Law to successful writes/s
against writers (λ: one writer's throughput, σ: contention, κ: coherency,
the predicted peak), and answers the latency objective: the largest value
whose p99 stays within --slo. A series stops early at the first point that
meets a --stop-at condition, so a collapsed object does not run for hours.`,
		Example: `  kb-bench sweep --writers 1,2,4,8,16,32,64,128,256 --strategy update,retry,patch,ssa
  kb-bench sweep --profile hot-key --objects 1,10,100,1000 --writers 64
  kb-bench sweep --rate 100,200,400,800,1600 --writers 64 --report
  kb-bench sweep --writers 1,4,16,64 --count 3 --stop-at 'p99 > 2s' --stop-at 'conflictRate > 99%'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.sweep(cmd.Context(), cmd.Flags(), s, version, getenv)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.stopAt, "stop-at", []string{"p99 > 5s"}, "end a series at the first point where this holds (a gate threshold on the point's median: p99, conflictRate, gaveUp, ...); repeatable; 'none' runs every point")
	fs.DurationVar(&f.slo, "slo", results.DefaultSLO, "the p99 latency objective the sweep answers for (the default is the Kubernetes SLO for mutating API calls)")
	fs.BoolVar(&f.run.report, "report", false, "also write report.html (the curves, the fitted model and every point, see 'kb-bench report') in the sweep directory")
	f.run.register(cmd, "run this many samples of every point (sample-N/ below the point's directory); the point's figures are their medians")
	return cmd
}

// seriesOf is one series of a sweep: its label, its directory and its
// cells in axis order.
type seriesOf struct {
	cells []int
	label string
	dir   string
}

func (f *sweepFlags) sweep(ctx context.Context, fs *pflag.FlagSet, s Streams, version string, getenv func(string) string) error {
	if f.run.count < 1 || f.run.count > 1000 {
		return spec.Input(fmt.Errorf("--count %d: use 1 to 1000 samples", f.run.count))
	}
	if f.slo <= 0 {
		return spec.Input(fmt.Errorf("--slo %s: give the p99 latency objective, e.g. 1s", f.slo))
	}
	stops, err := parseStops(f.stopAt)
	if err != nil {
		return err
	}
	given := slices.ContainsFunc(sweepAxes, fs.Changed)
	if !given {
		name, list, _ := strings.Cut(defaultSweep, "=")
		if err := fs.Set(name, list); err != nil {
			return err
		}
	}
	cells, err := f.run.resolve(fs)
	if err != nil {
		return err
	}
	axis := ""
	for _, v := range cells[0].values {
		if slices.Contains(sweepAxes, v.name) {
			axis = v.name
			break
		}
	}
	if axis == "" {
		return spec.Input(errors.New("a sweep needs a list of values for --writers, --objects, --rate or --clients, e.g. --writers 1,2,4,8,16,32,64"))
	}
	if axis == "rate" && cells[0].spec.Rate <= 0 {
		return spec.Input(errors.New("--rate: sweep offered loads above 0 (0 is the closed loop)"))
	}
	series, xs, err := splitSweep(cells, axis)
	if err != nil {
		return err
	}
	runID := newRunID(time.Now())
	outDir := f.run.out
	if outDir == "" {
		outDir = filepath.Join("kb-bench-results", runID)
	}
	var varying []string
	for _, v := range cells[0].values {
		varying = append(varying, v.name)
	}
	verb := "vary"
	if len(varying) == 1 {
		verb = "varies"
	}
	sw := &results.Sweep{RunID: runID, Axis: axis, SLO: f.slo, StopAt: stopTexts(stops),
		Workload: fmt.Sprintf("%s (the first point; %s %s)", workload.Describe(cells[0].spec), strings.Join(varying, " and "), verb)}
	for _, ser := range series {
		sw.Series = append(sw.Series, results.SweepSeries{Label: ser.label})
	}
	return f.run.session(ctx, s, getenv, cells[0].spec, outDir, func(ctx context.Context, conn *cluster.Connection, info io.Writer) error {
		if !given {
			fmt.Fprintf(info, "sweeping %s (the default: choose the values with --writers, or sweep --objects, --rate or --clients)\n", defaultSweep)
		}
		fmt.Fprintf(info, "sweep %s: %d values of %s x %s x %s, points interleaved across series\n",
			runID, len(xs), axis, results.Plural(len(series), "series"), results.Plural(f.run.count, "sample"))
		var failed error
		for xi, x := range xs {
			running := 0
			outs := make([]*output, len(series))
			for k, ser := range series {
				if sw.Series[k].Stopped != "" {
					continue
				}
				running++
				c := ser.cells[xi]
				dir := filepath.Join(outDir, ser.dir, axis+"-"+dirName(x))
				outs[k] = newOutput(dir, fmt.Sprintf("%s-c%d", runID, c+1), nil)
				if f.run.count > 1 {
					outs[k] = newOutput(dir, fmt.Sprintf("%s-c%d", runID, c+1), &results.ResultSet{})
				}
			}
			if running == 0 {
				break
			}
			samples := make([][]*results.Result, len(series))
			for i := 1; i <= f.run.count; i++ {
				for k, ser := range series {
					if outs[k] == nil {
						continue
					}
					label := strings.TrimSpace(ser.label + " " + axis + "=" + x)
					if f.run.count > 1 {
						label += fmt.Sprintf(" sample %d of %d", i, f.run.count)
					}
					fmt.Fprintf(info, "%s\n", label)
					r, _, dir, err := f.run.sample(ctx, conn, cells[ser.cells[xi]].spec, outs[k], i, s, info, version)
					if err != nil {
						return err
					}
					if !f.run.quiet {
						fmt.Fprintf(s.Out, "%s: %s\n", label, results.OneLine(r))
					}
					if failed == nil {
						failed = checkFailed(r, dir)
					}
					samples[k] = append(samples[k], r)
					if r.Interrupted || r.TargetLost != "" {
						// The point under way is not a point: its figures
						// would bend the curves and the fit.
						sw.Interrupted = true
						if err := results.WriteSweep(outDir, sw); err != nil {
							return err
						}
						fmt.Fprintf(info, "sweep saved in %s\n", outDir)
						if r.TargetLost != "" {
							return fmt.Errorf("%w: %s", errTargetLost, r.TargetLost)
						}
						return errInterrupted
					}
				}
			}
			addPoints(sw, outDir, outs, samples, x, stops)
			if err := results.WriteSweep(outDir, sw); err != nil {
				return err
			}
		}
		if !f.run.quiet {
			fmt.Fprintln(s.Out)
			if err := results.WriteSweepTables(s.Out, sw, "text"); err != nil {
				return err
			}
		}
		if f.run.report {
			if err := writeReport(filepath.Join(outDir, reportFile), version, []string{outDir}); err != nil {
				return err
			}
			fmt.Fprintf(info, "report: %s\n", filepath.Join(outDir, reportFile))
		}
		fmt.Fprintf(info, "sweep saved in %s\n", outDir)
		return failed
	})
}

// addPoints adds the point at axis value x of every series that ran it,
// analyses the sweep again, and stops each series whose point meets a
// stop condition.
func addPoints(sw *results.Sweep, outDir string, outs []*output, samples [][]*results.Result, x string, stops []results.Threshold) {
	value, _ := strconv.ParseFloat(x, 64)
	for k := range sw.Series {
		if outs[k] == nil || len(samples[k]) == 0 {
			continue
		}
		rel, err := filepath.Rel(outDir, outs[k].dir)
		if err != nil {
			rel = outs[k].dir
		}
		sw.Series[k].Points = append(sw.Series[k].Points, results.NewSweepPoint(value, filepath.ToSlash(rel), samples[k]))
		for _, t := range stops {
			if held, why := t.HeldBy(samples[k]); held {
				sw.Series[k].Stopped = fmt.Sprintf("%s at %s %s (%s)", t.Text, x, sw.Axis, why)
				break
			}
		}
	}
	sw.Analyze()
}

// splitSweep groups a matrix's cells into series (the cells that differ
// only in the axis), each in the order of the axis values, which must go
// up.
func splitSweep(cells []cell, axis string) ([]seriesOf, []string, error) {
	var series []seriesOf
	var xs []string
	index := map[string]int{}
	for c, cl := range cells {
		var rest []string
		var x any
		for _, v := range cl.values {
			if v.name == axis {
				x = v.value
				continue
			}
			rest = append(rest, v.name+"="+fmt.Sprint(v.value))
		}
		label := strings.Join(rest, " ")
		k, ok := index[label]
		if !ok {
			k = len(series)
			index[label] = k
			series = append(series, seriesOf{label: label, dir: dirName(label)})
		}
		series[k].cells = append(series[k].cells, c)
		if k == 0 {
			xs = append(xs, fmt.Sprint(x))
		}
	}
	prev := reflect.Value{}
	for _, c := range series[0].cells {
		for _, v := range cells[c].values {
			if v.name != axis {
				continue
			}
			cur := reflect.ValueOf(v.value)
			if prev.IsValid() && !less(prev, cur) {
				return nil, nil, spec.Input(fmt.Errorf("--%s %s: a sweep goes up; give the values in increasing order, each once", axis, strings.Join(xs, ",")))
			}
			prev = cur
		}
	}
	return series, xs, nil
}

func less(a, b reflect.Value) bool {
	if a.CanInt() {
		return a.Int() < b.Int()
	}
	return a.Float() < b.Float()
}

// parseStops reads the --stop-at conditions: absolute gate thresholds.
func parseStops(texts []string) ([]results.Threshold, error) {
	var out []results.Threshold
	for _, t := range texts {
		if strings.TrimSpace(t) == "none" {
			if len(texts) > 1 {
				return nil, spec.Input(errors.New("--stop-at none runs every point: give it alone"))
			}
			return nil, nil
		}
		th, err := results.ParseThreshold(t)
		if err != nil {
			return nil, spec.Input(fmt.Errorf("--stop-at: %w", err))
		}
		if th.Relative {
			return nil, spec.Input(fmt.Errorf("--stop-at %q: a stop condition is absolute (e.g. \"p99 > 5s\"); there is no baseline in a sweep", t))
		}
		out = append(out, th)
	}
	return out, nil
}

func stopTexts(ts []results.Threshold) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Text)
	}
	return out
}
