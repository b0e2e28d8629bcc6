package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/bench"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/spec"
)

// newCompareCommand compares saved results, side by side.
func newCompareCommand(s Streams) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "compare A B [C ...]",
		Short: "Compare saved results side by side, with the significance of each change",
		Long: `Compare the key figures of saved results, each side against the first:
throughput, conflicts, attempts, latency percentiles, lost updates and the
server cross-check.

Each argument is one side: a result (its directory or result.json), a set
of samples (run --count), or a directory of result directories, whose
results are that side's samples. A side's samples must be repeats of one
workload; a run seen twice counts once. An A/B run's directory (run
--baseline-with or --baseline-spec) is its two sides, baseline and
candidate; it may be the only argument. A sweep or a matrix run is not a
side: pass one of its point or configuration directories. A sample that
did not measure what it was asked to (interrupted, target lost, a check
not made) is left out of its side's medians and named.
With several samples a side shows the median and its range, and each change
is tested with the Mann-Whitney U test: "~" where it is not significant
(p > 0.05) or where too few samples could never show it (run 5 samples a
side or more).`,
		Example: `  kb-bench compare kb-bench-results/run-a kb-bench-results/run-b
  kb-bench compare ab/                                # an A/B run: its baseline and candidate
  kb-bench compare before/ after/ --format markdown >> "$GITHUB_STEP_SUMMARY"`,
		Args: nArgs(func(n int) bool { return n >= 1 }, "%[1]s needs two results or more to compare, or an A/B run's directory (see '%[1]s --help')"),
		RunE: func(cc *cobra.Command, args []string) error {
			if !slices.Contains(text.CompareFormats, format) {
				return spec.Input(fmt.Errorf("--format %q is not known: use %s", format, strings.Join(text.CompareFormats, ", ")))
			}
			c, err := bench.Compare(cc.Context(), args, s.Err)
			if err != nil {
				return err
			}
			return text.WriteComparison(s.Out, c, format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text, markdown (for a CI job summary or a pull request), csv or json")
	return cmd
}
