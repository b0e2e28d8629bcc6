package app

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/internal/atomicfile"
	"github.com/kb-bench/kb-bench/report"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// reportFile is the report run --report and sweep --report write in the
// result directory.
const reportFile = "report.html"

func newReportCommand(s Streams, version string) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report RESULT|SET|SWEEP ...",
		Short: "Write saved results, sets and sweeps as one HTML page of charts",
		Long: `Write one self-contained HTML file (it opens offline: no script, font or
style is fetched) that shows saved results: for each result or set of
samples, the latency percentile spectrum, throughput and conflicts per
second over time, attempts per operation and the checks; for several, a
comparison with the significance of each change and their spectra
overlaid; for a sweep, throughput, conflict rate and p99 against the
swept axis with the fitted USL curve and the SLO line.

Each argument is a result directory (or its result.json), a set of
samples (run --count), a matrix run's directory (one side per
configuration) or a sweep's directory.`,
		Example: `  kb-bench report kb-bench-results/20261123-101500-ab12cd -o report.html
  kb-bench report before/ after/ -o compare.html
  kb-bench report kb-bench-results/my-sweep -o capacity.html`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &flagError{fmt.Errorf("%s needs a result, set or sweep to show (see '%s --help')", c.CommandPath(), c.CommandPath())}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if err := writeReport(out, version, args); err != nil {
				return err
			}
			fmt.Fprintf(s.Err, "report: %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", reportFile, "the HTML file to write")
	return cmd
}

// writeReport renders what paths hold as one HTML page in out, atomically.
func writeReport(out, version string, paths []string) error {
	page := report.Page{Version: version}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(filepath.Clean(p)))
		if _, err := os.Stat(filepath.Join(p, results.SweepFile)); err == nil || filepath.Base(p) == results.SweepFile {
			sw, err := results.ReadSweep(p)
			if err != nil {
				return spec.Input(err)
			}
			page.Sweeps = append(page.Sweeps, sw)
			continue
		}
		runs, err := readRuns(p)
		if err != nil {
			return spec.Input(err)
		}
		page.Runs = append(page.Runs, runs...)
	}
	page.Title = "kb-bench: " + strings.Join(names, ", ")
	var buf bytes.Buffer
	if err := report.Write(&buf, page); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return spec.Input(fmt.Errorf("writing the report: %w (choose another file with -o)", err))
	}
	return nil
}

// readRuns reads one side (a result or a set of samples) or, for a
// matrix run's directory, one side per configuration below it.
func readRuns(path string) ([]report.Run, error) {
	rs, err := readSide(path)
	if err == nil {
		return []report.Run{{Label: filepath.Base(filepath.Clean(path)), Results: rs}}, nil
	}
	entries, derr := os.ReadDir(path)
	if derr != nil {
		return nil, err
	}
	var runs []report.Run
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(path, e.Name())
		if _, serr := os.Stat(filepath.Join(sub, results.SetFile)); serr != nil {
			continue
		}
		rs, serr := readSide(sub)
		if serr != nil {
			return nil, serr
		}
		runs = append(runs, report.Run{Label: e.Name(), Results: rs})
	}
	if len(runs) == 0 {
		return nil, errors.Join(err, errors.New("nor is it a sweep (no sweep.json) or a matrix run (no set.json below it)"))
	}
	return runs, nil
}
