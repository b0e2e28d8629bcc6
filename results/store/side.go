package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kb-bench/kb-bench/results"
)

// ReadSide reads one side of a comparison or a gate from path: a result,
// a set of samples, or a directory of result directories. A sweep or a
// matrix run is refused: its results are different workloads, not samples
// of one (see results.Samples); notes say what was left out.
func ReadSide(ctx context.Context, path string) (side results.Side, notes []string, err error) {
	side.Label = filepath.Base(filepath.Clean(path))
	fi, err := os.Stat(path)
	if err != nil {
		return side, nil, fmt.Errorf("%w (pass a result directory, its result.json, a set of samples, or a directory of result directories)", err)
	}
	dir := path
	if !fi.IsDir() {
		switch filepath.Base(path) {
		case SetFile, SweepFile:
			dir = filepath.Dir(path)
			side.Label = filepath.Base(filepath.Clean(dir))
		default:
			r, err := Read(ctx, path)
			if err != nil {
				return side, nil, err
			}
			side.Results, side.Files = []*results.Result{r}, []string{path}
			return side, nil, nil
		}
	}
	var where []string
	switch {
	case exists(filepath.Join(dir, SweepFile)):
		return side, nil, sweepNotASide(ctx, dir)
	case exists(filepath.Join(dir, ResultFile)) && fi.IsDir():
		side.Results, where, err = readResults(ctx, []string{dir})
	case exists(filepath.Join(dir, SetFile)):
		side.Files = []string{filepath.Join(dir, SetFile)}
		side.Results, where, err = readSet(ctx, dir)
	default:
		if base, cand, ok := ABSides(dir); ok {
			return side, nil, fmt.Errorf("%s is an A/B run (run --baseline-with or --baseline-spec): its baseline and candidate are two sides; pass each, e.g. %s %s, or gate it: kb-bench gate %s",
				dir, base, cand, dir)
		}
		if configs := MatrixConfigurations(dir); len(configs) > 0 {
			return side, nil, fmt.Errorf("%s is a matrix run (a set of samples per configuration below it: %s): its configurations are different workloads; pass each as a side of its own, e.g. %s",
				dir, strings.Join(configs, ", "), filepath.Join(dir, configs[0]))
		}
		side.Results, where, err = readResultDirs(ctx, dir)
	}
	if err != nil {
		return side, nil, err
	}
	for _, w := range where {
		side.Files = append(side.Files, filepath.Join(w, ResultFile))
	}
	side.Results, notes, err = results.Samples(side.Label, side.Results, where)
	return side, notes, err
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readSet reads the samples a set's set.json lists, and where each was.
func readSet(ctx context.Context, dir string) ([]*results.Result, []string, error) {
	set, err := ReadSet(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	var rs []*results.Result
	var where []string
	for _, s := range set.Samples {
		if !filepath.IsLocal(s) {
			return nil, nil, fmt.Errorf("%s lists sample %q, which is not a directory inside the set", filepath.Join(dir, SetFile), s)
		}
		r, err := Read(ctx, filepath.Join(dir, s))
		if err != nil {
			return nil, nil, fmt.Errorf("sample %s of the set %s: %w", s, dir, err)
		}
		rs = append(rs, r)
		where = append(where, filepath.Join(dir, s))
	}
	return rs, where, nil
}

// readResultDirs reads every result directory directly below dir.
func readResultDirs(ctx context.Context, dir string) ([]*results.Result, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var where []string
	for _, e := range entries {
		if sub := filepath.Join(dir, e.Name()); e.IsDir() && exists(filepath.Join(sub, ResultFile)) {
			where = append(where, sub)
		}
	}
	if len(where) == 0 {
		return nil, nil, errors.New(dir + " holds no result: pass a result directory, its result.json, a set of samples, or a directory of result directories")
	}
	return readResults(ctx, where)
}

// readResults reads the result in each directory of where.
func readResults(ctx context.Context, where []string) ([]*results.Result, []string, error) {
	rs := make([]*results.Result, len(where))
	for i, dir := range where {
		r, err := Read(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		rs[i] = r
	}
	return rs, where, nil
}

// MatrixConfigurations are the subdirectories of a matrix run's
// directory that hold a set of samples; none for any other directory.
func MatrixConfigurations(dir string) []string {
	if exists(filepath.Join(dir, SetFile)) || exists(filepath.Join(dir, ResultFile)) || exists(filepath.Join(dir, SweepFile)) {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var configs []string
	for _, e := range entries {
		if e.IsDir() && exists(filepath.Join(dir, e.Name(), SetFile)) {
			configs = append(configs, e.Name())
		}
	}
	return configs
}

// ABSides are the baseline's and the candidate's directories of an A/B
// run's directory; ok is false when dir is not one.
func ABSides(dir string) (base, cand string, ok bool) {
	base, cand = filepath.Join(dir, "baseline"), filepath.Join(dir, "candidate")
	if !exists(filepath.Join(base, SetFile)) || !exists(filepath.Join(cand, SetFile)) {
		return "", "", false
	}
	return base, cand, true
}

// sweepNotASide says why a sweep's directory is not a side, and what to
// pass instead.
func sweepNotASide(ctx context.Context, dir string) error {
	var points []string
	if sw, err := ReadSweep(ctx, dir); err == nil {
		for _, ser := range sw.Series {
			for _, p := range ser.Points {
				points = append(points, filepath.Join(dir, filepath.FromSlash(p.Dir)))
			}
		}
	}
	if len(points) > 3 {
		points = append(points[:3], "...")
	}
	example := ""
	if len(points) > 0 {
		example = " (" + strings.Join(points, ", ") + ")"
	}
	return fmt.Errorf("%s is a sweep: its points ran different workloads (one value of the swept setting each), not samples of one; pass one point's directory%s, or show the sweep with 'kb-bench report %s'", dir, example, dir)
}

// MatrixCell is one configuration of a matrix run: its set of samples.
type MatrixCell struct {
	// Dir is the set's directory; Label the configuration's label
	// ("strategy=ssa writers=8").
	Dir, Label string
	Set        *results.ResultSet
}

// ReadMatrix reads the configurations of a matrix run's directory in the
// order they ran (an older kb-bench's labelled by name); none for any
// other directory.
func ReadMatrix(ctx context.Context, dir string) ([]MatrixCell, error) {
	var cells []MatrixCell
	for _, name := range MatrixConfigurations(dir) {
		set, err := ReadSet(ctx, filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		cells = append(cells, MatrixCell{Dir: filepath.Join(dir, name), Label: cmp.Or(set.Label, name), Set: set})
	}
	slices.SortStableFunc(cells, func(a, b MatrixCell) int { return cmp.Compare(a.Set.Cell, b.Set.Cell) })
	return cells, nil
}
