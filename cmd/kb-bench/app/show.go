package app

import (
	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/bench"
)

// newShowCommand prints a saved run again, from its files alone.
func newShowCommand(s Streams) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show RESULT|SET|MATRIX|SWEEP",
		Short: "Print a saved run's summary again, exactly as the run printed it",
		Long: `Print what a run printed at its end, from the files it saved alone: a
result's summary with its scenario's own figures (a leader election's
failovers, a quota's admissions), a set's or a matrix run's samples and
their comparison, a sweep's points and tables, a gated run's verdicts
(run --gate; 'kb-bench gate' saves none). The saved result is the
source of truth: show prints what the live run printed, so a run can be
read again, compared or gated long after its cluster is gone.

The argument is a result directory (or its result.json), a set of
samples, a matrix run's directory or a sweep's directory. --format json
prints the result documents (a sweep's document) and the verdicts' instead.`,
		Example: `  kb-bench show kb-bench-results/20261123-101500-ab12cd
  kb-bench show kb-bench-results/my-sweep
  kb-bench show kb-bench-results/20261123-101500-ab12cd --format json | jq .summary`,
		Args: nArgs(one, "%[1]s takes one result, set, matrix run or sweep (see '%[1]s --help')"),
		RunE: func(c *cobra.Command, args []string) error {
			return bench.Show(c.Context(), s.Out, args[0], format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text or json (the result documents)")
	return cmd
}
