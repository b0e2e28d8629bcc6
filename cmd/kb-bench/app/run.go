package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/profiles"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/runner/process"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// runFlags are the run command's own flags; the spec flags live in specFlags.
type runFlags struct {
	spec specFlags
	// privateControlPlane is set by resolve when the settings ask for a
	// particular local storage or binaries.
	privateControlPlane bool
	file                string
	profile             string
	out                 string
	output              string
	quiet               bool
	stateDir            string
	count               int
	gate                string
	baseline            string
	report              bool
	shardTimeout        time.Duration
	job                 jobFlags
	// thresholds are the profile's own gate, set by resolve.
	thresholds []string
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
given on the command line overrides the profile.`,
		Example: `  kb-bench run --writers 50 --strategy ssa
  kb-bench run --writers 8 --strategy retry --backoff default-backoff
  kb-bench run --profile hot-key --duration 30s
  kb-bench run --kubeconfig ~/.kube/config --context staging --writers 20
  kb-bench run --writers 3000 --shards 3                  # three shard processes, one exact result
  kb-bench run --kubeconfig KC --writers 3000 --shards 6 --runner job --image REGISTRY/kb-bench:TAG`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.Flags(), s, version, getenv)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.output, "output", "o", "table", "what to print at the end: table or json (the result document)")
	fs.StringVar(&f.gate, "gate", "", "judge the run against this Gate file of thresholds at the end (see 'kb-bench gate'); exit 1 when one fails")
	fs.StringVar(&f.baseline, "baseline", "", "with --gate: the result (or directory of samples) relative thresholds compare with")
	fs.BoolVar(&f.report, "report", false, "also write report.html (charts, see 'kb-bench report') in the result directory")
	f.register(cmd, "run this many samples of the same spec on one control plane, each in a fresh namespace (sample-N/ in the result directory; compare sets with 'kb-bench compare')")
	return cmd
}

// register adds the flags every command that runs benchmarks shares: the
// profile, the result directory, the samples and the spec's own flags.
func (f *runFlags) register(cmd *cobra.Command, countHelp string) {
	fs := cmd.Flags()
	fs.StringVarP(&f.file, "file", "f", "", "profile YAML file to run")
	fs.StringVar(&f.profile, "profile", "", "shipped profile to run (see 'kb-bench profiles list')")
	fs.StringVar(&f.out, "out", "", "directory for the result files (default ./kb-bench-results/<run-id>)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	fs.IntVar(&f.count, "count", 1, countHelp)
	fs.DurationVar(&f.shardTimeout, "shard-timeout", workload.DefaultShardTimeout, "with --shards: how long every shard has to start and join the run")
	f.job.register(fs)
	fs.StringVar(&f.stateDir, "state-dir", "", "where 'kb-bench local up' keeps its state (default $XDG_STATE_HOME/kb-bench/local)")
	_ = fs.MarkHidden("state-dir")
	// After the command's own flags, so that a setting that would shadow
	// one is refused (a bug, which every test of the command shows).
	if err := f.spec.register(fs); err != nil {
		cmd.RunE = func(*cobra.Command, []string) error { return err }
	}
}

// cell is one configuration of a run: the spec, and for a matrix the
// values that make it one (e.g. "strategy=ssa writers=8").
type cell struct {
	label string
	spec  spec.Spec
	// values are the matrix flags' values that make this cell, in the
	// order of label.
	values []axisValue
}

// axisValue is one matrix flag's value in a cell.
type axisValue struct {
	name  string
	value any
}

// resolve turns the profile and the flags the user set into defaulted,
// validated specs: one, or one per combination of the matrix flags given
// lists (--strategy update,ssa --writers 1,8).
func (f *runFlags) resolve(fs *pflag.FlagSet) ([]cell, error) {
	base, source, err := f.base(fs)
	if err != nil {
		return nil, err
	}
	cells := []cell{{spec: base}}
	for _, ax := range f.spec.axes(fs) {
		var next []cell
		for _, c := range cells {
			for _, v := range ax.flag.value.list {
				s := c.spec
				s.Settings = maps.Clone(c.spec.Settings)
				ax.flag.setOn(&s, v)
				label := strings.TrimSpace(c.label + " " + ax.name + "=" + fmt.Sprint(v.Interface()))
				values := append(slices.Clone(c.values), axisValue{ax.name, v.Interface()})
				next = append(next, cell{label: label, spec: s, values: values})
			}
		}
		cells = next
	}
	if err := f.job.check(fs, cells[0].spec); err != nil {
		return nil, err
	}
	for i := range cells {
		if _, _, errs := workload.Resolve(&cells[i].spec); len(errs) > 0 {
			where := source
			if cells[i].label != "" {
				where += " (" + cells[i].label + ")"
			}
			return nil, spec.Input(fmt.Errorf("invalid settings from %s:\n%s", where, spec.Describe(errs)))
		}
		if err := f.spec.zeroOverridden(fs, &cells[i].spec, cells[i].values); err != nil {
			return nil, err
		}
	}
	return cells, nil
}

// base is the profile plus the flags the user set, before defaults.
func (f *runFlags) base(fs *pflag.FlagSet) (base spec.Spec, source string, err error) {
	source = "flags"
	switch {
	case f.file != "" && f.profile != "":
		return base, source, spec.Input(errors.New("-f and --profile both given: choose one profile"))
	case f.file != "":
		p, err := profiles.Load(f.file)
		if err != nil {
			return base, source, err
		}
		base, source, f.thresholds = p.Spec, f.file, p.Thresholds
	case f.profile != "":
		p, err := profiles.Shipped(f.profile)
		if err != nil {
			return base, source, err
		}
		base, source, f.thresholds = p.Spec, "profile "+f.profile, p.Thresholds
	}
	// A profile may choose local storage, but only the command line may
	// point kb-bench at an existing cluster: a kubeconfig or context in
	// the profile must be given on the command line too, or a shared
	// profile could pick another context of the user's kubeconfig.
	t := base.Target
	if (t.Kubeconfig != "" && !fs.Changed("kubeconfig")) || (t.Context != "" && !fs.Changed("context")) ||
		(t.Kind != "" && t.Kind != spec.TargetLocal && !fs.Changed("kubeconfig") && !fs.Changed("context") && !fs.Changed("target")) {
		return base, source, spec.Input(fmt.Errorf("%s names an existing cluster (target %q, kubeconfig %q, context %q): kb-bench sends load only to a cluster named on the command line; pass --kubeconfig PATH and --context NAME, or --target",
			source, t.Kind, t.Kubeconfig, t.Context))
	}
	if err := f.spec.apply(fs, &base); err != nil {
		return base, source, err
	}
	if fs.Changed("kubeconfig") || fs.Changed("context") {
		switch {
		case !fs.Changed("target"):
			base.Target.Kind = spec.TargetKubeconfig
		case base.Target.Kind != spec.TargetKubeconfig:
			return base, source, spec.Input(fmt.Errorf("--kubeconfig and --context name a cluster, but --target is %s: drop --target, or drop --kubeconfig and --context", base.Target.Kind))
		}
	}
	// Asked-for storage or binaries need a control plane that has them, not
	// whatever `kb-bench local up` is running (the defaults would hide this).
	f.privateControlPlane = base.Target.Storage != "" || base.Target.ControlPlaneBin != "" || base.Target.ControllerManager
	return base, source, nil
}

func (f *runFlags) run(ctx context.Context, fs *pflag.FlagSet, s Streams, version string, getenv func(string) string) (err error) {
	if f.output != "table" && f.output != "json" {
		return spec.Input(fmt.Errorf("--output %q is not known: use table or json", f.output))
	}
	if f.count < 1 || f.count > 1000 {
		return spec.Input(fmt.Errorf("--count %d: use 1 to 1000 samples", f.count))
	}
	// The gate and its baseline are read before the run, not after it.
	var gate *results.Gate
	var baseline []*results.Result
	if f.gate != "" {
		data, err := os.ReadFile(f.gate)
		if err != nil {
			return spec.Input(fmt.Errorf("reading the thresholds: %w", err))
		}
		if gate, err = results.ParseGate(f.gate, data); err != nil {
			return spec.Input(err)
		}
	}
	if f.baseline != "" {
		if baseline, err = readSide(f.baseline); err != nil {
			return spec.Input(err)
		}
	}
	cells, err := f.resolve(fs)
	if err != nil {
		return err
	}
	sp := cells[0].spec
	if gate == nil && len(f.thresholds) > 0 {
		gate, _ = results.NewGate(f.thresholds) // checked when the profile loaded
	}
	if gate != nil && len(cells) > 1 {
		return spec.Input(errors.New("a gate judges one configuration: run the matrix without --gate (or a profile with thresholds) and gate each directory with 'kb-bench gate'"))
	}
	if gate == nil && baseline != nil {
		return spec.Input(errors.New("--baseline is for a gate: add --gate FILE (or run a profile with thresholds), or compare results with 'kb-bench compare'"))
	}
	runID := newRunID(time.Now())
	outDir := f.out
	if outDir == "" {
		outDir = filepath.Join("kb-bench-results", runID)
	}
	return f.session(ctx, s, getenv, sp, outDir, func(ctx context.Context, conn *cluster.Connection, info io.Writer) error {
		return f.runCells(ctx, conn, cells, runID, outDir, gate, baseline, s, info, version)
	})
}

// session is what every command that runs benchmarks does around them: it
// checks the result directory can be made, opens the target sp names, calls body, and stops
// what it started. A local control plane that dies during body fails it.
func (f *runFlags) session(ctx context.Context, s Streams, getenv func(string) string, sp spec.Spec, outDir string,
	body func(ctx context.Context, conn *cluster.Connection, info io.Writer) error) (err error) {
	// A result that cannot be saved is found out now, not after the run.
	if err := checkOutDir(outDir); err != nil {
		return err
	}
	info := s.Err
	if f.quiet {
		info = io.Discard
	}
	conn, err := cluster.Open(ctx, sp.Target, cluster.Options{Log: info, StateDir: f.stateDir, Getenv: getenv, Private: f.privateControlPlane})
	if err != nil {
		return err
	}
	defer func() {
		// Stop what Open started even when the run was interrupted.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cerr := conn.Close(closeCtx); cerr != nil {
			fmt.Fprintf(s.Err, "kb-bench: stopping the target: %v\n", cerr)
		}
	}()
	fmt.Fprintf(info, "target: %s %s (server %s)\n", conn.Target.Kind, conn.Target.Server, conn.Target.ServerVersion)
	// A control plane of ours that dies mid-run ends the run at once, as
	// a failure: load against a dead apiserver measures nothing.
	ctx, lost := watchTarget(ctx, conn)
	defer func() {
		if reason := lost(); reason != "" {
			err = fmt.Errorf("%w: the local control plane died (%s); the figures are not to be trusted; the result is in %s", errTargetLost, reason, outDir)
		}
	}()
	return body(ctx, conn, info)
}

// runCells runs every cell --count times, interleaved, and prints and
// judges what they measured.
func (f *runFlags) runCells(ctx context.Context, conn *cluster.Connection, cells []cell, runID, outDir string,
	gate *results.Gate, baseline []*results.Result, s Streams, info io.Writer, version string) error {
	sp := cells[0].spec
	fmt.Fprintf(info, "run %s: %s\n", runID, workload.Describe(sp))
	if len(cells) > 1 {
		fmt.Fprintf(info, "matrix of %d configurations x %s, interleaved round-robin: %s\n", len(cells), results.Plural(f.count, "sample"), labels(cells))
	}

	// One set per configuration; with one configuration and one sample,
	// the result directory is the run's own.
	outs := make([]*output, len(cells))
	dirs := make([]string, len(cells))
	for k, c := range cells {
		dirs[k] = outDir
		if len(cells) > 1 {
			dirs[k] = filepath.Join(outDir, dirName(c.label))
		}
		outs[k] = newOutput(dirs[k], runID, nil)
		if len(cells) > 1 || f.count > 1 {
			outs[k] = newOutput(dirs[k], fmt.Sprintf("%s-c%d", runID, k+1), &results.ResultSet{})
		}
	}
	var failed error
	for i := 1; i <= f.count; i++ {
		for k, c := range cells {
			if outs[k].set != nil {
				fmt.Fprintf(info, "%s\n", strings.TrimSpace(fmt.Sprintf("%s sample %d of %d", c.label, i, f.count)))
			}
			r, report, dir, err := f.sample(ctx, conn, c.spec, outs[k], i, s, info, version)
			if err != nil {
				return err
			}
			switch {
			case f.output == "json":
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			case f.quiet:
			case outs[k].set != nil:
				fmt.Fprintf(s.Out, "%s: %s\n", strings.TrimSpace(fmt.Sprintf("%s sample %d", c.label, i)), results.OneLine(r))
			default:
				if err := results.WriteTable(s.Out, r, report.Rows()); err != nil {
					return err
				}
			}
			if r.Interrupted {
				fmt.Fprintf(info, "result saved in %s\n", outDir)
				return errInterrupted
			}
			if r.TargetLost != "" {
				return fmt.Errorf("%w: %s; the result is in %s", errTargetLost, r.TargetLost, dir)
			}
			if failed == nil {
				failed = checkFailed(r, dir)
			}
		}
	}
	if outs[0].set != nil && f.output != "json" && !f.quiet {
		fmt.Fprintln(s.Out)
		if err := compareDirs(s.Out, cells, dirs); err != nil {
			return err
		}
	}
	if f.report {
		if err := writeReport(filepath.Join(outDir, reportFile), version, []string{outDir}); err != nil {
			return err
		}
		fmt.Fprintf(info, "report: %s\n", filepath.Join(outDir, reportFile))
	}
	fmt.Fprintf(info, "result saved in %s\n", outDir)
	if failed != nil || gate == nil {
		return failed
	}
	candidate, err := readSide(outDir)
	if err != nil {
		return err
	}
	fmt.Fprintln(s.Out)
	return judge(s, gate, baseline, candidate, "text", false)
}

// watchTarget returns a context cancelled when conn's control plane dies,
// and a func that stops watching and says why it died ("" when it did
// not). Call it before the control plane is stopped.
func watchTarget(ctx context.Context, conn *cluster.Connection) (context.Context, func() string) {
	if conn.Lost == nil {
		return ctx, func() string { return "" }
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done, finished := make(chan struct{}), make(chan struct{})
	var reason string
	go func() {
		defer close(finished)
		select {
		case <-conn.Lost:
			reason = conn.LostReason()
			// The engine ends the run as it does for any target that
			// stops answering: TARGET LOST, not interrupted.
			cancel(fmt.Errorf("%w: the local control plane died (%s)", workload.ErrTargetLost, reason))
		case <-done:
		}
	}()
	return ctx, func() string {
		close(done)
		<-finished
		cancel(nil)
		return reason
	}
}

// labels lists the cells' labels.
func labels(cells []cell) string {
	l := make([]string, len(cells))
	for i, c := range cells {
		l[i] = c.label
	}
	return strings.Join(l, "; ")
}

// dirName is a cell's label as a directory name: "strategy-ssa_writers-8".
func dirName(label string) string {
	return strings.NewReplacer("=", "-", " ", "_", "/", "-").Replace(label)
}

// compareDirs prints the cells' sets side by side (one set: its medians).
func compareDirs(w io.Writer, cells []cell, dirs []string) error {
	sides := make([]results.Side, len(cells))
	for k := range cells {
		rs, err := readSide(dirs[k])
		if err != nil {
			return err
		}
		label := cells[k].label
		if label == "" {
			label = filepath.Base(dirs[k])
		}
		sides[k] = results.Side{Label: label, Results: rs}
	}
	c, err := results.Compare(sides)
	if err != nil {
		return err
	}
	return results.WriteComparison(w, c, "text")
}

// output is where the samples of one configuration go: its directory, and
// the set listing them when there are several (or several configurations).
type output struct {
	dir   string
	runID string
	set   *results.ResultSet
}

// newOutput is an output in dir whose samples are run as runID (a set's
// samples as runID-sN, when set is not nil).
func newOutput(dir, runID string, set *results.ResultSet) *output {
	if set != nil {
		set.RunID = runID
	}
	return &output{dir: dir, runID: runID, set: set}
}

// sample runs sample i of sp into o (o's directory itself, or its
// sample-i below it, listed in its set) and returns where it went.
func (f *runFlags) sample(ctx context.Context, conn *cluster.Connection, sp spec.Spec, o *output, i int, s Streams, info io.Writer, version string) (*results.Result, scenario.Report, string, error) {
	id, dir := o.runID, o.dir
	if o.set != nil {
		id, dir = fmt.Sprintf("%s-s%d", o.runID, i), filepath.Join(o.dir, fmt.Sprintf("sample-%d", i))
	}
	r, report, err := f.runOnce(ctx, sp, conn, id, dir, s, info, version)
	if err != nil {
		return nil, nil, "", err
	}
	if o.set != nil {
		o.set.Samples = append(o.set.Samples, filepath.Base(dir))
		if err := results.WriteSet(o.dir, o.set); err != nil {
			return nil, nil, "", err
		}
	}
	return r, report, dir, nil
}

// checkFailed says which check of r failed, other than lost updates
// (which the summary shows as the figure they are); nil when none did.
func checkFailed(r *results.Result, dir string) error {
	for _, ch := range r.Checks {
		if !ch.Passed && ch.Lost == 0 {
			return fmt.Errorf("check failed: %s: %s (the result is in %s)", ch.Name, ch.Detail, dir)
		}
	}
	return nil
}

// runOnce runs one sample and saves it in dir.
func (f *runFlags) runOnce(ctx context.Context, sp spec.Spec, conn *cluster.Connection, runID, dir string, s Streams, info io.Writer, version string) (*results.Result, scenario.Report, error) {
	progress := newProgress(info, s.Err, sp.Warmup.Duration+sp.Duration.Duration, f.quiet)
	var clientLog func() []string
	if s.ClientLog != nil {
		s.ClientLog.Drain() // what came before this run is not its own
		clientLog = s.ClientLog.Drain
	}
	runner, err := f.shardRunner(sp, conn, version)
	if err != nil {
		return nil, nil, err
	}
	out, err := workload.Run(ctx, sp, workload.Options{
		Runner:       runner,
		ShardTimeout: f.shardTimeout,
		ClientLog:    clientLog,
		Ephemeral:    conn.Target.Kind == spec.TargetLocal && !conn.Target.Reused,
		Config:       conn.Config,
		RunID:        runID,
		Version:      version,
		Progress:     progress.update,
		Log:          info,
		// The local control plane runs no namespace controller, unless
		// it runs kube-controller-manager.
		FinalizeNamespace: conn.Target.Kind == spec.TargetLocal && !conn.Target.ControllerManager,
	})
	progress.done()
	if err != nil {
		return nil, nil, err
	}
	out.Result.Target = conn.Target
	if err := results.Write(dir, out.Result); err != nil {
		return nil, nil, fmt.Errorf("saving the result: %w", err)
	}
	return out.Result, out.Report, nil
}

// shardRunner is what starts sp's shards (nil when it has none).
func (f *runFlags) shardRunner(sp spec.Spec, conn *cluster.Connection, version string) (workload.ShardRunner, error) {
	switch sp.Runner {
	case spec.RunnerProcess:
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding kb-bench's own executable to start the shards: %w", err)
		}
		return process.Runner{Executable: exe, Config: conn.Config}, nil
	case spec.RunnerJob:
		return f.job.runner(conn, version)
	}
	return nil, nil
}

// checkOutDir checks, before the run, that the result directory can be
// made and written, and holds no result yet. It makes nothing: the
// directory appears with the first result written, so a run that fails or
// is killed before that leaves no empty directory behind.
func checkOutDir(dir string) error {
	for _, f := range []string{results.ResultFile, results.SetFile, results.SweepFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return spec.Input(fmt.Errorf("%s already holds a result (%s): choose another --out, or remove it first", dir, f))
		}
	}
	// The nearest directory that exists is where the first one is made.
	d := filepath.Clean(dir)
	for {
		fi, err := os.Stat(d)
		if err == nil && !fi.IsDir() {
			return spec.Input(fmt.Errorf("the result directory %s cannot be made: %s is not a directory; choose another with --out", dir, d))
		}
		if err == nil || filepath.Dir(d) == d {
			break
		}
		d = filepath.Dir(d)
	}
	probe, err := os.MkdirTemp(d, ".kb-bench-probe-*")
	if err != nil {
		return spec.Input(fmt.Errorf("the result directory %s cannot be made or written (%w): choose another with --out", dir, err))
	}
	return os.Remove(probe)
}

// newRunID returns a sortable, unique, DNS-label-safe run id.
func newRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &flagError{fmt.Errorf("%s takes no arguments, got %q (see '%s --help')", cmd.CommandPath(), args, cmd.CommandPath())}
	}
	return nil
}

// progress shows a live line on a terminal (about once a second) and plain
// lines every few seconds otherwise; nothing when quiet.
type progress struct {
	w     io.Writer
	live  bool
	total time.Duration
	quiet bool
	last  time.Duration
	shown bool
}

func newProgress(w io.Writer, stderr io.Writer, total time.Duration, quiet bool) *progress {
	live := false
	if f, ok := stderr.(*os.File); ok && w == stderr {
		live = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, live: live, total: total, quiet: quiet}
}

const plainProgressEvery = 5 * time.Second

func (p *progress) update(elapsed time.Duration, pt metrics.SeriesPoint) {
	if p.quiet {
		return
	}
	line := results.FormatProgress(elapsed, p.total, pt)
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

func (p *progress) done() {
	if p.live && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
