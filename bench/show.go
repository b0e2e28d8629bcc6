package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/spec"
)

// Show writes on w what the run that saved path showed on its standard
// output, from the saved documents alone: a result's summary with its
// scenario's own figures; a set's or a matrix run's samples, one line each
// in the order they ran, and the comparison of their medians; a sweep's
// points and tables; a gated run's verdicts. In format "json", a result's
// document, a set's or a matrix run's in the order they ran, or a sweep's.
// What cannot be read is bad input.
func Show(ctx context.Context, w io.Writer, path, format string) error {
	if format != "text" && format != "json" {
		return spec.Input(fmt.Errorf("--format %q is not known: use text or json", format))
	}
	dir := path
	if fi, err := os.Stat(path); err != nil {
		return spec.Input(fmt.Errorf("%w (pass a result, a set of samples, a matrix run or a sweep: its directory or its file)", err))
	} else if !fi.IsDir() {
		dir = filepath.Dir(path)
		if b := filepath.Base(path); b != store.ResultFile && b != store.SetFile && b != store.SweepFile {
			return spec.Input(fmt.Errorf("%s is not a result.json, set.json or sweep.json: pass one, or its directory", path))
		}
	}
	cells, sets := []store.MatrixCell{{Dir: dir}}, true
	var err error
	switch exists := func(f string) bool { _, err := os.Stat(filepath.Join(dir, f)); return err == nil }; {
	case exists(store.SweepFile):
		return showSweep(ctx, w, dir, format)
	case exists(store.ResultFile):
		sets = false
	case exists(store.SetFile):
		set, err := store.ReadSet(ctx, dir)
		if err != nil {
			return spec.Input(err)
		}
		cells[0].Label = set.Label
	default:
		if cells, err = store.ReadMatrix(ctx, dir); err != nil {
			return spec.Input(err)
		} else if len(cells) == 0 {
			return spec.Input(fmt.Errorf("%s holds no result, set of samples, matrix run or sweep kb-bench wrote", path))
		}
	}
	verdicts, err := store.ReadVerdicts(ctx, dir)
	if err != nil {
		return spec.Input(err)
	}
	if err := showCells(ctx, w, format, cells, sets); err != nil || verdicts == nil {
		return err
	}
	return showVerdicts(w, format, verdicts)
}

// showCells shows the cells of a run (a matrix run's, or one result or
// set of samples) as it showed them: their samples in the order they ran
// (see interleave), up to one that did not end well, then their
// comparison.
func showCells(ctx context.Context, w io.Writer, format string, cells []store.MatrixCell, sets bool) error {
	v := &view{w: w, format: format, sets: sets}
	sides := make([]results.Side, len(cells))
	most := 0
	for k, c := range cells {
		side, err := ReadSide(ctx, c.Dir, nil)
		if err != nil {
			return err
		}
		sides[k] = results.Side{Label: cmp.Or(c.Label, filepath.Base(filepath.Clean(c.Dir))), Results: side.Results}
		most = max(most, len(side.Results))
	}
	for _, smp := range ranOrder(sides, most) {
		r := sides[smp.Cell].Results[smp.Index-1]
		if err := v.sample(cells[smp.Cell].Label, smp.Index, r); err != nil {
			return err
		}
		if r.Interrupted || r.TargetLost != "" {
			return nil // the run ended there
		}
	}
	return v.end(sides)
}

// ranOrder is the order in which the sides' samples ran: by their start
// times, or, where a sample has none, round by round in the order of the
// cells (their order within a round was drawn at random; see interleave).
func ranOrder(sides []results.Side, most int) []Sample {
	var out []Sample
	for i := 1; i <= most; i++ {
		for c := range sides {
			if i <= len(sides[c].Results) {
				out = append(out, Sample{Cell: c, Index: i})
			}
		}
	}
	started := func(s Sample) time.Time { return sides[s.Cell].Results[s.Index-1].Started }
	if !slices.ContainsFunc(out, func(s Sample) bool { return started(s).IsZero() }) {
		slices.SortStableFunc(out, func(a, b Sample) int { return started(a).Compare(started(b)) })
	}
	return out
}

// showSweep shows a sweep as it showed itself: each point's samples, one
// line each, point by point across the series, then its tables.
func showSweep(ctx context.Context, w io.Writer, dir, format string) error {
	sw, err := store.ReadSweep(ctx, dir)
	if err != nil {
		return spec.Input(err)
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sw)
	}
	v := &view{w: w, format: format, sets: true}
	for xi := 0; ; xi++ {
		shown, err := showPoint(ctx, v, dir, sw, func(ser results.SweepSeries) *results.SweepPoint {
			if xi < len(ser.Points) {
				return &ser.Points[xi]
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !shown {
			break
		}
	}
	// The points under way when the sweep stopped, as the run showed them.
	if _, err := showPoint(ctx, v, dir, sw, func(ser results.SweepSeries) *results.SweepPoint { return ser.UnderWay }); err != nil {
		return err
	}
	return v.sweep(sw)
}

// showPoint shows the samples of one point of each series (pick picks it,
// nil: none), sample by sample across the series, as the sweep ran them;
// shown is false when there was none to show.
func showPoint(ctx context.Context, v *view, dir string, sw *results.Sweep, pick func(results.SweepSeries) *results.SweepPoint) (shown bool, err error) {
	samples := make([][]*results.Result, len(sw.Series))
	most := 0
	for k, ser := range sw.Series {
		p := pick(ser)
		if p == nil {
			continue
		}
		side, err := ReadSide(ctx, filepath.Join(dir, filepath.FromSlash(p.Dir)), nil)
		if err != nil {
			return false, err
		}
		samples[k] = side.Results
		most = max(most, len(side.Results))
	}
	for i := range most {
		for k, ser := range sw.Series {
			if i >= len(samples[k]) {
				continue
			}
			p := pick(ser)
			if err := v.line(pointLabel(ser.Label, sw.Axis, sw.AxisValue(p.Value), i+1, p.Samples), samples[k][i]); err != nil {
				return false, err
			}
		}
	}
	return most > 0, nil
}
