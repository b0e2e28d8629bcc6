package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kb-bench/kb-bench/bench"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/spec"
)

// runFlags are the flags of the commands that run benchmarks, most of
// them bound to the request and the options they make; the settings'
// flags live in specFlags.
type runFlags struct {
	spec specFlags
	req  bench.Request
	opt  bench.Options

	output, gate, baseline, baselineSpec, metricsAddr string
	baselineWith                                      []string
	metricsWait                                       time.Duration
}

func newRunCommand(s Streams, version string, getenv func(string) string) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one contention benchmark and print its summary",
		Long: `Run one contention benchmark: N writers doing read-modify-write on shared
objects with a write strategy, then print throughput, conflicts, retries,
latency percentiles and the lost-update check, and save the result.

Settings come from a profile (-f FILE or --profile NAME) and flags; a flag
given on the command line overrides the profile. 'kb-bench show DIR' prints
a saved run's summary again.`,
		Example: `  kb-bench run --writers 50 --strategy ssa
  kb-bench run --writers 8 --strategy retry --backoff default-backoff
  kb-bench run --profile hot-key --duration 30s
  kb-bench run --kubeconfig ~/.kube/config --context staging --writers 20
  kb-bench run --count 5 --gate gate.yaml --control-plane-bin pr/bin --baseline-with control-plane-bin=main/bin   # A/B, interleaved
  kb-bench run -f pr.yaml --count 5 --gate gate.yaml --baseline-spec main.yaml   # a profile against main's, interleaved
  kb-bench run --writers 3000 --shards 3                  # three shard processes, one exact result
  kb-bench run --kubeconfig KC --writers 3000 --shards 6 --runner job --image REGISTRY/kb-bench:TAG`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.Flags(), s, version, getenv)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.output, "output", "o", "table", "what to print at the end: table or json (the result document)")
	fs.StringVar(&f.gate, "gate", "", "judge the run against this Gate file of thresholds at the end (see 'kb-bench gate'); exit 1 when one fails")
	fs.StringVar(&f.baseline, "baseline", "", "with --gate: stored results (a result or directory of samples) relative thresholds compare with; they cannot tell the machine's drift from a change: prefer --baseline-with or --baseline-spec")
	fs.StringVar(&f.baselineSpec, "baseline-spec", "", "A/B: also run this profile YAML file as the baseline (with the flags given on top), its samples alternating with this run's (the candidate's) on the same target: baseline/ and candidate/ in the result directory, gated one against the other with --gate")
	fs.StringArrayVar(&f.baselineWith, "baseline-with", nil, "A/B: also run a baseline that differs from this run by SETTING=VALUE (repeatable), e.g. control-plane-bin=/main/bin (each sample then on a fresh control plane of its side's binaries) or qps=0, interleaved as --baseline-spec")
	fs.BoolVar(&f.opt.Report, "report", false, "also write report.html (charts, see 'kb-bench report') in the result directory")
	f.register(cmd, fmt.Sprintf("run this many samples of the same spec on one control plane, each in a fresh namespace (sample-N/ in the result directory; compare sets with 'kb-bench compare'); default 1, or %d a side for an A/B run (--baseline-with, --baseline-spec)", bench.DefaultABCount))
	return cmd
}

// register adds the flags every command that runs benchmarks shares: the
// profile, the result directory, the samples and the spec's own flags.
func (f *runFlags) register(cmd *cobra.Command, countHelp string) {
	fs := cmd.Flags()
	fs.StringVarP(&f.req.File, "file", "f", "", "profile YAML file to run")
	fs.StringVar(&f.req.Profile, "profile", "", "shipped profile to run (see 'kb-bench profiles list')")
	fs.StringVar(&f.opt.Out, "out", "", "directory for the result files (default ./kb-bench-results/<run-id>)")
	fs.BoolVarP(&f.opt.Quiet, "quiet", "q", false, "print nothing but errors")
	fs.IntVar(&f.req.Count, "count", 0, countHelp)
	fs.DurationVar(&f.opt.ShardTimeout, "shard-timeout", spec.DefaultShardTimeout, "with --shards: how long every shard has to start and join the run")
	registerJob(fs, &f.opt.Job)
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the run's live figures for Prometheus at http://ADDR/metrics while it runs (e.g. :9464, which is loopback's; name a host, such as 0.0.0.0:9464, to serve other machines); off by default")
	fs.DurationVar(&f.metricsWait, "metrics-final-scrape", 0, "with --metrics-addr: after the run, keep serving until a scraper has read the final figures (result.json's), at most this long")
	fs.StringVar(&f.opt.StateDir, "state-dir", "", "where 'kb-bench local up' keeps its state (default $XDG_STATE_HOME/kb-bench/local)")
	_ = fs.MarkHidden("state-dir")
	// After the command's own flags, so that a setting that would shadow
	// one is refused (a bug, which every test of the command shows).
	if err := f.spec.register(fs); err != nil {
		cmd.RunE = func(*cobra.Command, []string) error { return err }
	}
}

// request is what the flags ask to run.
func (f *runFlags) request(fs *pflag.FlagSet) bench.Request {
	r := f.req
	r.Overrides = f.spec.overrides(fs)
	return r
}

// baselineRequest is the baseline side run's --baseline-spec and
// --baseline-with ask for; nil when they ask for none.
func (f *runFlags) baselineRequest() (*bench.Baseline, error) {
	if f.baselineSpec == "" && len(f.baselineWith) == 0 {
		return nil, nil
	}
	b := &bench.Baseline{File: f.baselineSpec}
	for _, text := range f.baselineWith {
		o, err := bench.ParseOverride(text)
		if err != nil {
			return nil, fmt.Errorf("--baseline-with %w", err)
		}
		b.Overrides = append(b.Overrides, o)
	}
	return b, nil
}

// plan resolves r, which the flags asked for, and checks the job flags
// against it.
func (f *runFlags) plan(ctx context.Context, fs *pflag.FlagSet, r bench.Request) (*bench.Plan, error) {
	p, err := bench.Resolve(ctx, r)
	if err != nil {
		return nil, err
	}
	return p, checkJobFlags(fs, p.Cells[0].Spec)
}

func (f *runFlags) run(ctx context.Context, fs *pflag.FlagSet, s Streams, version string, getenv func(string) string) (err error) {
	o := &f.opt
	switch f.output {
	case "table":
	case "json":
		o.Format = "json"
	default:
		return spec.Input(fmt.Errorf("--output %q is not known: use table or json", f.output))
	}
	// The gate and its baseline are read before the run, not after it.
	if f.gate != "" {
		if o.Gate, err = bench.ReadGate(ctx, f.gate); err != nil {
			return err
		}
	}
	if f.baseline != "" {
		if o.Baseline, err = bench.ReadSide(ctx, f.baseline, s.Err); err != nil {
			return err
		}
	}
	r := f.request(fs)
	if r.Baseline, err = f.baselineRequest(); err != nil {
		return err
	}
	p, err := f.plan(ctx, fs, r)
	if err != nil {
		return err
	}
	return f.start(ctx, s, version, getenv, func() error {
		_, err := bench.Run(ctx, p, *o)
		return err
	})
}

// start completes the options the flags bound (where the run shows and
// tells, its progress, client-go's log), starts the live metrics endpoint
// --metrics-addr asks for before anything else starts (a port in use is
// bad input), and runs body. It ends the endpoint after body, once it has
// waited --metrics-final-scrape for a scrape of the final figures.
func (f *runFlags) start(ctx context.Context, s Streams, version string, getenv func(string) string, body func() error) error {
	o := &f.opt
	o.Stdout, o.Log, o.Version, o.Getenv = s.Out, s.Err, version, getenv
	if o.Quiet {
		o.Log = io.Discard
	} else {
		o.Progress = newProgress(s.Err)
	}
	if s.ClientLog != nil {
		o.ClientLog = s.ClientLog.Drain
	}
	if f.metricsAddr == "" {
		return body()
	}
	srv, err := live.Listen(f.metricsAddr)
	if err != nil {
		return err
	}
	o.Live = srv.Exporter
	fmt.Fprintf(o.Log, "metrics: serving the run's live figures at %s\n", srv.URL)
	if srv.Beyond {
		fmt.Fprintf(o.Log, "metrics: WARNING: listening on %s, beyond loopback: other machines can read the run's figures (name 127.0.0.1:PORT, or :PORT, to keep them on this one)\n", srv.Listening)
	}
	defer func() {
		if f.metricsWait > 0 && !srv.FinalScraped() {
			fmt.Fprintf(o.Log, "metrics: waiting up to %s for a scrape of the final figures\n", f.metricsWait)
		}
		scraped, waited := srv.Close(ctx, f.metricsWait)
		switch {
		case scraped || f.metricsWait <= 0:
		case waited < f.metricsWait && ctx.Err() != nil:
			fmt.Fprintf(o.Log, "metrics: stopped waiting for a scrape of the final figures after %s: interrupted\n", waited.Round(time.Millisecond))
		default:
			fmt.Fprintf(o.Log, "metrics: no scrape of the final figures came within %s\n", f.metricsWait)
		}
	}()
	return body()
}

// progress shows a live line on a terminal (about once a second) and plain
// lines every few seconds otherwise.
type progress struct {
	w     io.Writer
	live  bool
	total time.Duration
	last  time.Duration
	shown bool
}

// newProgress shows progress on w, live when it is a terminal.
func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, live: ok && term.IsTerminal(int(f.Fd()))}
}

const plainProgressEvery = 5 * time.Second

func (p *progress) Start(total time.Duration) {
	p.total, p.last, p.shown = total, 0, false
}

func (p *progress) Update(elapsed time.Duration, pt metrics.SeriesPoint) {
	line := text.FormatProgress(elapsed, p.total, pt)
	if p.live {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	if elapsed-p.last >= plainProgressEvery {
		p.last = elapsed
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) Done() {
	if p.live && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
