package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/bench"
)

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
		Args: nArgs(func(n int) bool { return n > 0 }, "%[1]s needs a result, set or sweep to show (see '%[1]s --help')"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := bench.Report(c.Context(), args, out, version, s.Err, s.Out); err != nil {
				return err
			}
			if out != "-" {
				fmt.Fprintf(s.Err, "report: %s\n", out)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", bench.ReportFile, "the HTML file to write (- for standard output); a device or a FIFO is written in place, a symbolic link is followed, and the report's own inputs are never written over")
	return cmd
}
