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

// newGateCommand judges a result against thresholds and a baseline.
func newGateCommand(s Streams) *cobra.Command {
	var r bench.GateRequest
	var format string
	cmd := &cobra.Command{
		Use:   "gate AB-RUN | CANDIDATE --baseline BASE [--thresholds FILE]",
		Short: "Pass or fail a result against thresholds and a baseline, for CI",
		Long: `Judge a result (or a set or directory of samples) against thresholds:
absolute ones ("p99 < 50ms", "lostUpdates == 0", "serverMatch == true",
"writeThroughput > 100/s", "conflictRate < 50%") and ones relative to a
baseline ("p99 <= baseline +10%"). A relative threshold that guards
against a regression (a bound at the baseline or with a margin beyond it)
and does not hold on the medians fails when the difference is significant
(Mann-Whitney U over the samples, p <= 0.05) and larger than the noise of
the samples (what the medians of identical runs of that many samples
differ by, from their interquartile ranges; the verdict says it); with
too few samples for any difference to be significant (3 or fewer a side),
the medians alone decide and the verdict says it was not tested. One that
asks for a change ("throughput >= baseline +20%", "p99 < baseline")
passes only when the medians meet it and the difference is significant:
an A/A pair fails it. Run 5 samples a side or more (run --count 5).
A sample that was interrupted, lost its target, could not make a check
or measured nothing is left out of the medians on either side and named;
on the candidate's side it fails the gate. A figure not measured (lost
updates when the objects could not be read back) fails its threshold.

The way to gate is an A/B run: baseline and candidate in one job, their
samples alternating (run --baseline-with or --baseline-spec), so the
machine's drift hits both alike; gate its directory alone. A baseline of
stored results (--baseline) ran at another time: the gate says it cannot
tell drift from change (identical specs run one after the other on a busy
2-core machine failed 14% of gates).

Thresholds come from a file:

  apiVersion: kb-bench.io/v1alpha1
  kind: Gate
  thresholds:
  - p99 <= baseline +10%
  - lostUpdates == 0

A value is checked against its metric's unit and range: a latency (or
apiserverCPUPerWrite and etcdCPUPerWrite, CPU time per successful write) above 0,
a rate 0% to 100% (written with %), a throughput or a count 0 or more,
serverMatch with == or != only. Any other metric is one of the scenario's
own figures, named as 'kb-bench compare' lists them (rejected,
failoverTime{quantile="0.5"}), judged in the unit the samples give it.

Without one: the server cross-check must match and, with a baseline, lost
updates must not rise, throughput not fall by 10% nor p99 rise by 10%.
Every threshold is printed with its figures and why. Exit status (the same
in every format): 0 all hold, 1 one fails, 2 bad input.`,
		Example: `  kb-bench run --count 5 --control-plane-bin pr/bin --baseline-with control-plane-bin=main/bin --out ab/
  kb-bench gate ab/ --thresholds gate.yaml --format markdown
  kb-bench gate --baseline stored-main/ candidate/   # against stored results`,
		Args: nArgs(one, "%[1]s takes one A/B run's directory, or one candidate result with --baseline (see '%[1]s --help')"),
		RunE: func(c *cobra.Command, args []string) error {
			// The verdict's exit status never depends on how it is written.
			if !slices.Contains(text.GateFormats, format) {
				return spec.Input(fmt.Errorf("--format %q is not known: use %s", format, strings.Join(text.GateFormats, ", ")))
			}
			r.Candidate, r.Notes = args[0], s.Err
			verdicts, err := bench.Gate(c.Context(), r)
			if verdicts != nil {
				if werr := text.WriteVerdicts(s.Out, verdicts, format); werr != nil {
					return fmt.Errorf("writing the verdicts: %w", werr)
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&r.Baseline, "baseline", "", "the result (or directory of samples) to compare with")
	cmd.Flags().StringVar(&r.Thresholds, "thresholds", "", "a Gate YAML file of thresholds (default: see above)")
	cmd.Flags().StringVar(&format, "format", "text", "text, markdown, json or junit (JUnit XML, which CI systems read)")
	cmd.Flags().BoolVar(&r.Force, "force", false, "judge against a baseline that ran a different workload")
	return cmd
}
