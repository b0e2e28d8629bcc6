package app

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kb-bench/kb-bench/bench"
	"github.com/kb-bench/kb-bench/results"
)

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.sweep(cmd.Context(), cmd.Flags(), s, version, getenv)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.stopAt, "stop-at", []string{"p99 > 5s"}, "end a series at the first point where this holds (a gate threshold on the point's median: p99, conflictRate, gaveUp, ...); repeatable; 'none' runs every point")
	fs.DurationVar(&f.slo, "slo", results.DefaultSLO, "the p99 latency objective the sweep answers for (the default is the Kubernetes SLO for mutating API calls)")
	fs.BoolVar(&f.run.opt.Report, "report", false, "also write report.html (the curves, the fitted model and every point, see 'kb-bench report') in the sweep directory")
	f.run.register(cmd, "run this many samples of every point (sample-N/ below the point's directory; default 1); the point's figures are their medians")
	return cmd
}

func (f *sweepFlags) sweep(ctx context.Context, fs *pflag.FlagSet, s Streams, version string, getenv func(string) string) error {
	r := f.run.request(fs)
	defaulted := bench.SweepDefault(&r)
	p, err := f.run.plan(ctx, fs, r)
	if err != nil {
		return err
	}
	if defaulted && !f.run.opt.Quiet {
		fmt.Fprintf(s.Err, "sweeping %s (the default: choose the values with --writers, or sweep --objects, --rate or --clients)\n", bench.DefaultSweep)
	}
	return f.run.start(ctx, s, version, getenv, func() error {
		_, err := bench.Sweep(ctx, p, bench.SweepOptions{Options: f.run.opt, StopAt: f.stopAt, SLO: f.slo})
		return err
	})
}
