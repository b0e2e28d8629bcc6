package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kb-bench/kb-bench/internal/atomicfile"
	"github.com/kb-bench/kb-bench/results/render/html"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/spec"
)

// ReportFile is the report a run or sweep with Report writes in its
// result directory.
const ReportFile = "report.html"

// Report writes what paths hold (results, sets, matrix runs, sweeps) as
// one HTML page of charts in out: atomically as atomicfile writes any
// file, never over one of the files it read, and to stdout when out is
// "-". notes receives what a side leaves out. Paths that cannot be read
// and an out that cannot be written are bad input.
func Report(ctx context.Context, paths []string, out, version string, notes, stdout io.Writer) error {
	page := html.Page{Version: version}
	var inputs []string
	for _, p := range paths {
		file := p
		if filepath.Base(p) != store.SweepFile {
			file = filepath.Join(p, store.SweepFile)
		}
		if _, err := os.Stat(file); err == nil || file == p {
			sw, err := store.ReadSweep(ctx, p)
			if err != nil {
				return spec.Input(err)
			}
			page.Sweeps, inputs = append(page.Sweeps, sw), append(inputs, file)
			continue
		}
		runs, files, err := readRuns(ctx, notes, p)
		if err != nil {
			return spec.Input(err)
		}
		page.Runs = append(page.Runs, runs...)
		inputs = append(inputs, files...)
	}
	page.Title = reportTitle(page)
	var buf bytes.Buffer
	if err := html.Write(&buf, page); err != nil {
		return err
	}
	if out == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	if err := atomicfile.WriteFile(out, buf.Bytes(), 0o644, inputs...); err != nil {
		return spec.Input(fmt.Errorf("writing the report: %w (choose another file with -o)", err))
	}
	return nil
}

// reportTitle says what a page shows: one run's workload, the runs
// compared, the axis of each sweep.
func reportTitle(p html.Page) string {
	var parts []string
	switch {
	case len(p.Runs) == 1:
		parts = append(parts, p.Runs[0].Results[0].Workload)
	case len(p.Runs) > 1:
		labels := make([]string, len(p.Runs))
		for i, r := range p.Runs {
			labels[i] = r.Label
		}
		parts = append(parts, strings.Join(labels, " vs "))
	}
	for _, sw := range p.Sweeps {
		var series []string
		for _, s := range sw.Series {
			if s.Label != "" {
				series = append(series, s.Label)
			}
		}
		what := "capacity by " + sw.Axis
		if len(series) > 0 {
			what += " (" + strings.Join(series, ", ") + ")"
		}
		parts = append(parts, what)
	}
	return "kb-bench: " + strings.Join(parts, "; ")
}

// readRuns reads one side (a result or a set of samples) or, for a
// matrix run's directory, one side per configuration below it; and the
// files it read them from.
func readRuns(ctx context.Context, notes io.Writer, path string) ([]html.Run, []string, error) {
	cells, err := store.ReadMatrix(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	if len(cells) == 0 {
		cells = []store.MatrixCell{{Dir: path, Label: filepath.Base(filepath.Clean(path))}}
	}
	var runs []html.Run
	var files []string
	for _, c := range cells {
		side, err := ReadSide(ctx, c.Dir, notes)
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, html.Run{Label: c.Label, Results: side.Results})
		files = append(files, side.Files...)
	}
	return runs, files, nil
}
