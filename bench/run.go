package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/distributed"
	"github.com/kb-bench/kb-bench/workload/distributed/process"
)

// The errors a run ends with when it ran but did not finish well, besides
// spec.ErrInterrupted and spec.ErrTargetLost; what it measured is saved. A
// bad request is spec.IsInput; a check that could not be made, or any
// other failure, is a plain error.
var (
	// ErrNotSaved: a sample ran and was shown, but its result could not
	// be saved (a full disk); nothing of it is left half-written.
	ErrNotSaved = errors.New("the result was not saved")
	// ErrGateFailed: a threshold of the gate did not hold.
	ErrGateFailed = errors.New("the gate failed: see the thresholds marked FAIL")
)

// Options are how a plan runs.
type Options struct {
	// Out is the directory the results go to (made with the first one);
	// "" makes kb-bench-results/RUNID.
	Out string
	// Stdout receives what the run shows as it goes and at its end (see
	// Show, which shows the same from the saved results) and the gate's
	// verdicts; nil shows nothing. Format is "text" (the default) or
	// "json" (each result as its JSON document). Quiet shows neither
	// summaries nor tables, only JSON documents and verdicts.
	Stdout io.Writer
	Format string
	Quiet  bool
	// Log receives what the run tells on the way: the target, each
	// sample, notes and warnings. Nil discards it.
	Log io.Writer
	// Progress, when set, is told how each sample goes.
	Progress Progress

	// Version is kb-bench's version, recorded in every result and the
	// default tag of the shard image.
	Version string
	// Getenv reads the environment (os.Getenv when nil); StateDir is
	// where 'kb-bench local up' keeps its state ("" its default).
	Getenv   func(string) string
	StateDir string
	// ClientLog, when set, returns what client-go logged since it was
	// last called (and forgets it): each sample's lines become its
	// warnings.
	ClientLog func() []string
	// ShardTimeout bounds the wait for a distributed run's shards to join
	// (0: spec.DefaultShardTimeout); Job is how --runner job runs
	// them.
	ShardTimeout time.Duration
	Job          JobOptions

	// Gate, when set, judges the run at its end against Baseline (for
	// relative thresholds), saves the verdicts (store.VerdictsFile) and
	// fails it with ErrGateFailed when a threshold does not hold. Report
	// writes report.html in the result directory.
	Gate     *analysis.Gate
	Baseline results.Side
	Report   bool

	// Live, when set, exports each sample's figures while it runs and,
	// once it is saved, its result's (package live: the caller serves
	// it, as 'kb-bench run --metrics-addr' does with live.Listen),
	// labelled with the sample's run id, scenario, strategy and its
	// matrix cell's or sweep point's label.
	Live *live.Exporter
}

// Progress is told how each sample goes: Start with its planned length
// (warm-up and measured window; 0 when operations bound it), Update about
// once a second during its measured window with the time since the
// window began and the second that ended, then Done.
type Progress interface {
	Start(total time.Duration)
	Update(elapsed time.Duration, p metrics.SeriesPoint)
	Done()
}

// Outcome is what a run ran and where it is.
type Outcome struct {
	RunID string
	// Dir is the run's result directory (and its verdicts' when gated).
	Dir string
	// Cells are the results of each cell of the plan, in order.
	Cells []CellResults
}

// CellResults are one cell's saved samples and where they are: its
// result directory, or its set's.
type CellResults struct {
	Dir     string
	Results []*results.Result

	runID string
	// point labels the samples' live figures: the matrix cell's label or
	// the sweep point's.
	point string
	// set lists the samples when the cell's are a set (nil: the one
	// result is Dir's own).
	set *results.ResultSet
}

// run runs the cell's next sample and saves it: its result and where it
// is. A sample that ran but could not be saved comes back with the error
// (ErrNotSaved), to be shown before the run ends. Without conn (sides of
// different control planes) the sample runs on a fresh target of its own.
func (c *CellResults) run(ctx context.Context, cell Cell, o Options, conn *cluster.Connection) (*results.Result, string, error) {
	id, dir := c.runID, c.Dir
	if c.set != nil {
		n := len(c.Results) + 1
		id, dir = fmt.Sprintf("%s-s%d", c.runID, n), store.SampleDir(c.Dir, n)
	}
	var r *results.Result
	sample := func(ctx context.Context, conn *cluster.Connection) (err error) {
		r, err = runSample(ctx, cell, o, conn, id, c.point, dir)
		return err
	}
	var err error
	if conn != nil {
		err = sample(ctx, conn)
	} else {
		err = open(ctx, cell.Spec.Target, true, o, dir, sample)
	}
	switch {
	case r == nil:
		return nil, "", err
	case err != nil: // not saved: the figures are shown, never kept
		return r, dir, err
	}
	c.Results = append(c.Results, r)
	if c.set != nil {
		c.set.Samples = append(c.set.Samples, filepath.Base(dir))
		if err := store.WriteSet(c.Dir, c.set); err != nil {
			return nil, "", err
		}
	}
	return r, dir, nil
}

// Run runs every sample of p on its target, interleaved, and saves each
// result as it ends: in o.Out itself for a plan of one sample, otherwise
// as a set of samples (sample-N/ and set.json) per cell, each cell's in a
// directory named by its label in a matrix. It shows each sample and, at
// the end, the summary (one sample) or the cells' comparison on o.Stdout.
//
// An interrupt (ctx cancelled) ends the sample under way early; its
// figures are saved and Run returns spec.ErrInterrupted. A target that fails
// ends it too, with spec.ErrTargetLost. A check the scenario could not make
// fails the run after every sample ran.
func Run(ctx context.Context, p *Plan, o Options) (*Outcome, error) {
	if err := o.check(p); err != nil {
		return nil, err
	}
	if o.Gate == nil && len(p.Thresholds) > 0 {
		o.Gate, _ = analysis.NewGate(p.Thresholds) // checked when the profile loaded
	}
	for _, n := range p.Notes {
		fmt.Fprintln(o.Log, "note: "+n)
	}
	if err := checkGate(o.Gate, p, o.Baseline.Results, o.Log); err != nil {
		return nil, err
	}
	out := &Outcome{RunID: newRunID(time.Now())}
	out.Dir = cmp.Or(o.Out, filepath.Join("kb-bench-results", out.RunID))
	err := session(ctx, p, o, out.Dir, func(ctx context.Context, conn *cluster.Connection) error {
		return runCells(ctx, p, o, conn, out)
	})
	return out, err
}

// check refuses options that do not fit the plan, before anything runs.
func (o *Options) check(p *Plan) error {
	o.Format = cmp.Or(o.Format, "text")
	if o.Format != "text" && o.Format != "json" {
		return spec.Input(fmt.Errorf("Options.Format %q is not known: use text or json", o.Format))
	}
	o.Log = cmp.Or(o.Log, io.Discard)
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	return o.Job.check()
}

// runCells runs every sample of p, saving each in out's directories, and
// shows and judges what they measured.
func runCells(ctx context.Context, p *Plan, o Options, conn *cluster.Connection, out *Outcome) error {
	fmt.Fprintf(o.Log, "run %s: %s\n", out.RunID, p.Cells[0].Workload)
	switch {
	case p.Sides:
		fmt.Fprintf(o.Log, "A/B: baseline (%s) and candidate (%s), %s each, interleaved, each pair in a random order\n", sideWords(p, 0), sideWords(p, 1), words.Plural(p.Count, "sample"))
	case p.Matrix():
		labels := make([]string, len(p.Cells))
		for i, c := range p.Cells {
			labels[i] = c.Label
		}
		fmt.Fprintf(o.Log, "matrix of %d configurations x %s, interleaved (each round in a random order): %s\n", len(p.Cells), words.Plural(p.Count, "sample"), strings.Join(labels, "; "))
	}
	sets := p.Matrix() || p.Count > 1
	v := newView(o, sets)
	for k, c := range p.Cells {
		cell := CellResults{Dir: out.Dir, runID: out.RunID, point: c.Label}
		if p.Matrix() {
			cell.Dir = filepath.Join(out.Dir, store.DirName(c.Label))
		}
		if sets {
			cell.runID = fmt.Sprintf("%s-c%d", out.RunID, k+1)
			cell.set = &results.ResultSet{RunID: cell.runID, Label: c.Label, Cell: k + 1}
		}
		out.Cells = append(out.Cells, cell)
	}
	var failed error
	for _, smp := range p.Samples() {
		c, cell := p.Cells[smp.Cell], &out.Cells[smp.Cell]
		if sets {
			fmt.Fprintln(o.Log, strings.TrimSpace(fmt.Sprintf("%s sample %d of %d", c.Label, smp.Index, p.Count)))
		}
		r, dir, err := cell.run(ctx, c, o, conn)
		if r == nil {
			return err
		}
		if verr := v.sample(c.Label, smp.Index, r); verr != nil {
			return verr
		}
		if err != nil { // shown above, not saved
			return err
		}
		switch { // a sample that did not measure its whole run ends the run
		case r.Interrupted:
			fmt.Fprintf(o.Log, "result saved in %s\n", out.Dir)
			return spec.ErrInterrupted
		case r.TargetLost != "":
			return fmt.Errorf("%w: %s; the result is in %s", spec.ErrTargetLost, r.TargetLost, dir)
		}
		if failed == nil {
			failed = checkFailed(r, dir)
		}
	}
	sides := make([]results.Side, len(p.Cells))
	for k, c := range p.Cells {
		sides[k] = results.Side{Label: cmp.Or(c.Label, filepath.Base(out.Cells[k].Dir)), Results: out.Cells[k].Results}
	}
	if err := v.end(sides); err != nil {
		return err
	}
	if err := o.saved(ctx, "result", out.Dir); err != nil {
		return err
	}
	if failed != nil || o.Gate == nil {
		return failed
	}
	return gateEnd(o, p.Sides, out)
}

// saved ends a run or sweep (what) saved in dir: it writes its report
// there when o asks for one, and says where it is.
func (o *Options) saved(ctx context.Context, what, dir string) error {
	if o.Report {
		if err := Report(ctx, []string{dir}, filepath.Join(dir, ReportFile), o.Version, o.Log, o.Stdout); err != nil {
			return err
		}
		fmt.Fprintf(o.Log, "report: %s\n", filepath.Join(dir, ReportFile))
	}
	fmt.Fprintf(o.Log, "%s saved in %s\n", what, dir)
	return nil
}

// sideWords says what side k of an A/B plan runs: its workload, and its
// control plane's binaries where the sides' differ.
func sideWords(p *Plan, k int) string {
	c := p.Cells[k]
	w := c.Workload
	if p.FreshTargets() {
		w += fmt.Sprintf("; a fresh local control plane per sample (binaries %s, storage %s)",
			cmp.Or(c.Spec.Target.ControlPlaneBin, "kb-bench's pinned build"), cmp.Or(string(c.Spec.Target.Storage), "disk"))
	}
	return w
}

// checkFailed says which check of r failed, other than lost updates
// (which the summary shows as the figure they are); nil when none did.
func checkFailed(r *results.Result, dir string) error {
	for _, ch := range r.Checks {
		if !ch.Made() {
			return fmt.Errorf("check failed: %s: %s (the result is in %s)", ch.Name, ch.Detail, dir)
		}
	}
	return nil
}

// runSample runs one sample of cell as run runID and saves it in dir; its
// live figures are labelled point. It returns the result as saved (the
// summary shows it, as Show does); when the sample ran but could not be
// saved, it and ErrNotSaved.
func runSample(ctx context.Context, cell Cell, o Options, conn *cluster.Connection, runID, point, dir string) (*results.Result, error) {
	resolved, err := cell.resolve("(" + cmp.Or(cell.Label, "the run") + ")")
	if err != nil {
		return nil, err
	}
	sp := resolved.Spec
	if o.ClientLog != nil {
		o.ClientLog() // what came before this run is not its own
	}
	runner, err := shardRunner(ctx, conn, sp, o)
	if err != nil {
		return nil, err
	}
	var progress func(time.Duration, metrics.SeriesPoint)
	if o.Progress != nil {
		o.Progress.Start(sp.Warmup.Duration + sp.Duration.Duration)
		progress = o.Progress.Update
	}
	fault, err := apiserverFault(conn, sp.Target)
	if err != nil {
		return nil, err
	}
	lr := o.Live.Add(live.Labels{RunID: runID, Scenario: sp.Scenario, Strategy: string(sp.Strategy), Point: point})
	out, err := workload.Run(ctx, resolved, workload.Options{
		Live:         lr,
		Runner:       runner,
		ShardTimeout: o.ShardTimeout,
		ClientLog:    o.ClientLog,
		Ephemeral:    conn.Target.Kind == spec.TargetLocal && !conn.Target.Reused,
		Config:       conn.Config,
		EtcdMetrics:  conn.EtcdMetrics,
		RunID:        runID,
		Version:      o.Version,
		Progress:     progress,
		Log:          o.Log,
		// The local control plane runs no namespace controller, unless
		// it runs kube-controller-manager.
		FinalizeNamespace: conn.Target.Kind == spec.TargetLocal && !conn.Target.ControllerManager,
		Servers:           conn.Servers,
		Fault:             fault,
		Target:            conn.Target,
		EtcdDelay:         conn.EtcdDelay,
	})
	if o.Progress != nil {
		o.Progress.Done()
	}
	if err != nil {
		return nil, err
	}
	saveErr := store.Write(dir, out.Result)
	if saveErr != nil {
		saveErr = fmt.Errorf("%w in %s: %w; the figures shown are this sample's, and nothing of it was left there: free some space or choose another --out, and run it again to keep it", ErrNotSaved, dir, saveErr)
	}
	// From now on the live figures are the saved ones, exactly.
	if err := lr.Finish(out.Result); err != nil {
		return nil, errors.Join(saveErr, err)
	}
	return out.Result, saveErr
}

// apiserverFault is the fault t asks for (spec.Target.KillAPIServer) on
// conn, for the engine to time; nil when it asks for none.
func apiserverFault(conn *cluster.Connection, t spec.Target) (*workload.Fault, error) {
	if t.KillAPIServer == 0 {
		return nil, nil
	}
	i := t.KillAPIServer - 1
	if conn.KillAPIServer == nil || i >= len(conn.Servers) {
		return nil, spec.Input(fmt.Errorf("--kill-apiserver %d needs a local control plane of the run's own with that many apiservers (--apiservers)", t.KillAPIServer))
	}
	return &workload.Fault{
		What: fmt.Sprintf("kill -9 of apiserver %d of %d (%s)", t.KillAPIServer, len(conn.Servers), conn.Servers[i]),
		At:   t.KillAPIServerAt.Duration, Down: i,
		Do: func() error { return conn.KillAPIServer(i) },
	}, nil
}

// shardRunner is what starts sp's shards on conn (nil when it has none).
func shardRunner(ctx context.Context, conn *cluster.Connection, sp spec.Spec, o Options) (distributed.ShardRunner, error) {
	switch sp.Runner {
	case spec.RunnerProcess:
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding kb-bench's own executable to start the shards: %w", err)
		}
		return process.Runner{Executable: exe, Config: conn.Config}, nil
	case spec.RunnerJob:
		return o.Job.runner(ctx, conn, sp.Target.KindCluster, o.Version, o.Log, o.Getenv)
	}
	return nil, nil
}

// session is what every run of a plan does around its samples: it checks
// the result directory can be made and opens (see open) the target the
// plan's first cell names. A plan whose cells need fresh targets
// (FreshTargets) opens none: body gets nil, and each sample opens its own.
func session(ctx context.Context, p *Plan, o Options, outDir string, body func(context.Context, *cluster.Connection) error) (err error) {
	sp := p.Cells[0].Spec
	if sp.Shards > 0 && sp.Runner == spec.RunnerJob && sp.Target.Kind == spec.TargetLocal {
		// Found out now, not after the shards' whole time to join.
		return spec.Input(errors.New("--runner job runs the shards as the pods of a Job, and the local control plane has no node to run a pod (nor, without --controller-manager, a Job controller to make one): " +
			"run the shards as local processes (--runner process, the default), or name a cluster with nodes (--kubeconfig and --context, or --target kind)"))
	}
	// A result that cannot be saved is found out now, not after the run.
	if err := store.CheckOutDir(outDir); err != nil {
		return err
	}
	if p.FreshTargets() {
		// Each sample opens a target of its own: every side's binaries
		// are checked now, not when its first sample comes (after a
		// whole sample of the other side).
		for _, c := range p.Cells {
			if t := c.Spec.Target; t.Kind == spec.TargetLocal {
				if _, err := cluster.FindBinaries(t.ControlPlaneBin, o.Getenv); err != nil {
					return fmt.Errorf("the %s: %w", cmp.Or(c.Label, "run"), err)
				}
			}
		}
		return body(ctx, nil)
	}
	return open(ctx, sp.Target, p.PrivateControlPlane, o, outDir, body)
}

// open opens target t (a control plane of its own when private), calls
// body, and stops what it started. A local control plane that dies during
// body fails it.
func open(ctx context.Context, t spec.Target, private bool, o Options, outDir string, body func(context.Context, *cluster.Connection) error) (err error) {
	conn, err := cluster.Open(ctx, t, cluster.Options{Log: o.Log, StateDir: o.StateDir, Getenv: o.Getenv, Private: private})
	if err != nil {
		return err
	}
	defer func() {
		// Stop what Open started even when the run was interrupted.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cerr := conn.Close(closeCtx); cerr != nil {
			fmt.Fprintf(o.Log, "kb-bench: stopping the target: %v\n", cerr)
		}
	}()
	fmt.Fprintf(o.Log, "target: %s %s (server %s)\n", conn.Target.Kind, conn.Target.Server, conn.Target.ServerVersion)
	// A control plane of ours that dies mid-run ends the run at once, as
	// a failure: load against a dead apiserver measures nothing.
	ctx, lost := watchTarget(ctx, conn)
	defer func() {
		if reason := lost(); reason != "" {
			err = fmt.Errorf("%w: the local control plane died (%s); the result, in %s, holds the figures up to then", spec.ErrTargetLost, reason, outDir)
		}
	}()
	return body(ctx, conn)
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
			cancel(fmt.Errorf("%w: the local control plane died (%s)", spec.ErrTargetLost, reason))
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

// newRunID returns a sortable, unique, DNS-label-safe run id.
func newRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}
