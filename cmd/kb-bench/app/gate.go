package app

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// errGateFailed ends a gate whose thresholds did not all hold (exit 1).
var errGateFailed = errors.New("the gate failed: see the thresholds marked FAIL")

// newGateCommand judges a result against thresholds and a baseline.
func newGateCommand(s Streams) *cobra.Command {
	var baseline, thresholds, format string
	var force bool
	cmd := &cobra.Command{
		Use:   "gate CANDIDATE [--baseline BASE] [--thresholds FILE]",
		Short: "Pass or fail a result against thresholds and a baseline, for CI",
		Long: `Judge a result (or a directory of samples) against thresholds: absolute
ones ("p99 < 50ms", "lostUpdates == 0", "serverMatch == true",
"writeThroughput > 100/s", "conflictRate < 50%") and ones relative to a
baseline ("p99 <= baseline +10%"), which fail only when the difference is
also significant (Mann-Whitney U over the samples, p <= 0.05).

Thresholds come from a file:

  apiVersion: kb-bench.io/v1alpha1
  kind: Gate
  thresholds:
  - p99 <= baseline +10%
  - lostUpdates == 0

Without one: the server cross-check must match and, with a baseline, lost
updates must not rise, throughput not fall by 10% nor p99 rise by 10%.
Every threshold is printed with its figures and why. Exit status: 0 all
hold, 1 one fails, 2 bad input.`,
		Example: `  kb-bench gate --baseline main/ candidate/ --thresholds gate.yaml --format markdown`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &flagError{fmt.Errorf("%s takes one candidate result (see '%s --help')", c.CommandPath(), c.CommandPath())}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			g := results.DefaultGate(baseline != "")
			if thresholds != "" {
				data, err := os.ReadFile(thresholds)
				if err != nil {
					return spec.Input(fmt.Errorf("reading the thresholds: %w", err))
				}
				if g, err = results.ParseGate(thresholds, data); err != nil {
					return spec.Input(err)
				}
			}
			candidate, err := readSide(args[0])
			if err != nil {
				return spec.Input(err)
			}
			var base []*results.Result
			if baseline != "" {
				if base, err = readSide(baseline); err != nil {
					return spec.Input(err)
				}
			}
			return judge(s, g, base, candidate, format, force)
		},
	}
	cmd.Flags().StringVar(&baseline, "baseline", "", "the result (or directory of samples) to compare with")
	cmd.Flags().StringVar(&thresholds, "thresholds", "", "a Gate YAML file of thresholds (default: see above)")
	cmd.Flags().StringVar(&format, "format", "text", "text, markdown, json or junit (JUnit XML, which CI systems read)")
	cmd.Flags().BoolVar(&force, "force", false, "judge against a baseline that ran a different workload")
	return cmd
}

// judge prints the verdicts of g and returns errGateFailed when one fails.
// A baseline that ran another workload is bad input unless force.
func judge(s Streams, g *results.Gate, base, candidate []*results.Result, format string, force bool) error {
	if len(base) > 0 && !force {
		if b, c := base[0].Workload, candidate[0].Workload; b != c {
			return spec.Input(fmt.Errorf("the baseline ran %q but the candidate %q: a gate compares like with like; pass --force to judge them anyway", b, c))
		}
	}
	verdicts, err := results.Judge(g, base, candidate)
	if err != nil {
		return spec.Input(err)
	}
	if err := results.WriteVerdicts(s.Out, verdicts, format); err != nil {
		return spec.Input(err)
	}
	if !results.Passed(verdicts) {
		return errGateFailed
	}
	return nil
}
