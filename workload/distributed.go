package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// ShardRunner starts the shards of a distributed run (Spec.Shards): local
// processes (package runner/process) or an Indexed Job (runner/job).
type ShardRunner interface {
	// Start starts shards 0..run.Shards-1, each running
	// 'kb-bench shard --namespace NS --run-id ID --index I', and returns
	// at once.
	Start(ctx context.Context, run ShardRun) (ShardGroup, error)
}

// ShardRun is what a runner needs to start a run's shards.
type ShardRun struct {
	RunID     string
	Namespace string
	Shards    int
	// Rules are the permissions a shard needs in Namespace.
	Rules []rbacv1.PolicyRule
	// Deadline is when every shard must be gone by.
	Deadline time.Time
}

// ShardGroup is a run's started shards.
type ShardGroup interface {
	// Failed receives an error naming a shard and why it failed (it
	// exited early, its pod could not start) as soon as the runner knows.
	Failed() <-chan error
	// Stop ends the shards still running, waits for them and removes
	// what Start made. After a run that ended well they have exited on
	// their own.
	Stop(ctx context.Context) error
	// Status says where each shard is as the runner sees it (pods
	// pending, processes running), for a coordinator that waited in vain.
	Status() string
}

// DefaultShardTimeout bounds how long the coordinator waits for every
// shard to join (start, find the run, connect).
const DefaultShardTimeout = 2 * time.Minute

// shardLead is how far ahead of its publication an instant (the warm-up's
// or the window's start) lies, so that every shard has seen it in time
// and all start together.
const shardLead = time.Second

// shardSlack bounds a shard's answer beyond the operations it waits for.
const shardSlack = 30 * time.Second

// shardRules are the permissions a shard needs: its scenario's, its
// coordination Lease, and uploading its result.
func shardRules(def scenario.Definition, settings scenario.Settings) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	if def.Rules != nil {
		rules = def.Rules(settings)
	}
	return append(rules,
		scenario.Rule("coordination.k8s.io", []string{"leases"}, "get", "create", "update"),
		scenario.Rule("", []string{"configmaps"}, "create"))
}

// coordinatorRules are what the coordinator needs beyond the scenario's:
// the Leases, reading and removing the uploaded results.
func coordinatorRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		scenario.Rule("coordination.k8s.io", []string{"leases"}, "get", "list", "create", "update"),
		scenario.Rule("", []string{"configmaps"}, "get", "delete"),
	}
}

// jobRules are what the coordinator needs to run the shards as a Job
// (runner/job): the Job and the shards' rights, made and removed, and
// their pods watched.
func jobRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		scenario.Rule("", []string{"serviceaccounts"}, "create", "delete"),
		scenario.Rule("", []string{"serviceaccounts/token"}, "create"), // --runner-kubeconfig: the shards' token
		scenario.Rule("rbac.authorization.k8s.io", []string{"roles", "rolebindings"}, "create", "delete"),
		scenario.Rule("batch", []string{"jobs"}, "create", "delete"),
		scenario.Rule("", []string{"pods"}, "list", "deletecollection"),
	}
}

// coordinate runs a distributed run: the scenario's Setup, the shards
// through every phase (protocol.go), the /metrics scrapes at the window's
// edges, and the exact merge of the shards' results, checked once by the
// scenario's Finish over every shard's writes.
func (r *run) coordinate(ctx context.Context, sc scenario.Scenario) (scenario.Report, error) {
	s := r.spec
	sharded, ok := sc.(scenario.Sharded)
	switch {
	case !ok:
		return nil, spec.Input(fmt.Errorf("scenario %s does not run in shards: drop --shards", r.def.Name))
	case r.opts.Runner == nil:
		return nil, errors.New("a distributed run needs Options.Runner to start its shards (a bug in kb-bench: please report it)")
	}
	r.env.Recorder = metrics.NewRecorder(notYet, metrics.DefaultShards(sharded.Workers()), s.Rate > 0)
	if err := sc.Setup(ctx); err != nil {
		return nil, err
	}
	p := protocol{kube: r.admin, namespace: r.env.Namespace, runID: r.opts.RunID}
	specJSON, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	joinTimeout := r.opts.ShardTimeout
	if joinTimeout <= 0 {
		joinTimeout = DefaultShardTimeout
	}
	length := s.Warmup.Duration + s.Duration.Duration
	if s.Duration.Duration == 0 {
		length += time.Hour // bounded by operations: a generous bound
	}
	deadline := time.Now().Add(joinTimeout + length + 2*s.OpTimeout.Duration + 3*shardSlack)
	if err := p.createRun(ctx, specJSON, s.Shards, r.opts.Version, deadline); err != nil {
		return nil, err
	}
	group, err := r.opts.Runner.Start(ctx, ShardRun{
		RunID: r.opts.RunID, Namespace: r.env.Namespace, Shards: s.Shards,
		Rules: shardRules(r.def, r.settings), Deadline: deadline,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the %d shards: %w", s.Shards, err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shardSlack)
		defer cancel()
		if errors.Is(context.Cause(ctx), ErrTargetLost) {
			cancel() // the shards cannot hear an abort from a lost target: stop them now
		}
		if err := group.Stop(sctx); err != nil {
			r.warn("stopping the shards: %v", err)
		}
	}()
	abort := func(err error) (scenario.Report, error) {
		if errors.Is(context.Cause(ctx), ErrTargetLost) {
			return nil, err // nobody would read it: the shards are stopped instead
		}
		// A shard that lost the target says so; the coordinator may still
		// reach it, and the other shards must stop loading it now.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.OpTimeout.Duration)
		defer cancel()
		_ = p.setPhase(actx, phaseAbort, "", time.Time{}, time.Time{})
		return nil, err
	}
	w := waiter{r: r, p: p, failed: group.Failed()}

	began := time.Now()
	if _, err := w.await(ctx, stateJoined, time.Time{}, began.Add(joinTimeout), nil); err != nil {
		if time.Since(began) >= joinTimeout {
			err = fmt.Errorf("%w (--shard-timeout %s)", err, joinTimeout)
		}
		if st := group.Status(); st != "" {
			err = fmt.Errorf("%w; the runner says: %s", err, st)
		}
		return abort(err)
	}
	fmt.Fprintf(r.log, "%d shards joined in %s\n", s.Shards, time.Since(began).Round(time.Millisecond))
	warmStart := time.Now().Add(shardLead)
	warmEnd := warmStart.Add(s.Warmup.Duration)
	if err := p.setPhase(ctx, phaseWarmup, annWarmup, warmStart, warmEnd); err != nil {
		return abort(err)
	}
	if _, err := w.await(ctx, stateQuietStart, warmEnd, warmEnd.Add(s.OpTimeout.Duration+shardSlack), nil); err != nil {
		return abort(err)
	}
	var before, after reading
	before.server, before.err = r.scrape(ctx)
	start := time.Now().Add(shardLead)
	var end time.Time
	var timeout time.Time
	if s.Duration.Duration > 0 {
		end = start.Add(s.Duration.Duration)
		timeout = end.Add(s.OpTimeout.Duration + shardSlack)
	}
	if err := p.setPhase(ctx, phaseMeasure, annWindow, start, end); err != nil {
		return abort(err)
	}
	fmt.Fprintf(r.log, "measured window from %s: the %d shards start together\n", start.Format("15:04:05.000"), s.Shards)
	stopped := false
	stop := func() {
		// Ctrl-C: end the window now, and keep what it measured.
		stopped = true
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.OpTimeout.Duration)
		defer cancel()
		if err := p.setPhase(sctx, phaseStop, "", time.Time{}, time.Time{}); err != nil {
			r.warn("telling the shards to stop: %v", err)
		}
	}
	progress := func(states map[int]shardState) {}
	if r.opts.Progress != nil {
		shown := time.Duration(0)
		progress = func(states map[int]shardState) {
			// A second every shard has published is the run's.
			var points [][]metrics.SeriesPoint
			for i := range s.Shards {
				st, ok := states[i]
				if !ok || st.progress == nil || st.progress.At.Round(time.Second) != states[0].progress.At.Round(time.Second) {
					return
				}
				points = append(points, []metrics.SeriesPoint{*st.progress})
			}
			at := states[0].progress.At.Round(time.Second)
			if at <= shown {
				return
			}
			if merged, err := results.MergeSeries(points); err == nil && len(merged) == 1 {
				shown = at
				r.opts.Progress(at, merged[0])
			}
		}
	}
	if _, err := w.awaitWatching(ctx, stateQuietEnd, end, timeout, stop, progress); err != nil {
		return abort(err)
	}
	after.server, after.err = r.scrape(ctx)
	cctx := context.WithoutCancel(ctx) // what was measured is collected after Ctrl-C too
	if err := p.setPhase(cctx, phaseCollect, "", time.Time{}, time.Time{}); err != nil {
		return abort(err)
	}
	states, err := w.await(cctx, stateUploaded, time.Time{}, time.Now().Add(shardSlack), nil)
	if err != nil {
		return abort(err)
	}
	shards := make([]*results.Result, s.Shards)
	for i := range shards {
		if shards[i], err = p.download(cctx, i, states[i].chunks); err != nil {
			return abort(err)
		}
	}
	if err := r.mergeShards(shards, sharded); err != nil {
		return nil, err
	}
	r.result.Interrupted = r.result.Interrupted || stopped
	res := r.result
	switch {
	case before.err != nil || after.err != nil:
		err := errors.Join(before.err, after.err)
		r.warn("no server cross-check: %v", err)
		res.Server = results.UnavailableServerCheck(err.Error())
	default:
		requests := map[metrics.RequestKey]int64{}
		for _, sh := range shards {
			for _, c := range sh.Shard.Requests {
				requests[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: c.Verb, Group: c.Group, Resource: c.Resource, Subresource: c.Subresource}, Code: c.Code}] += c.Count
			}
		}
		res.Server = results.NewServerCheck(before.server, after.server, requests, r.def.ServerResources, res.Measurements)
	}
	return r.conclude(cctx, sc)
}

// mergeShards merges the shards' results into the run's, exactly, and adds
// their tallies to the coordinator's scenario.
func (r *run) mergeShards(shards []*results.Result, sc scenario.Sharded) error {
	for _, sh := range shards {
		for k, w := range sh.Warnings {
			sh.Warnings[k] = fmt.Sprintf("shard %d: %s", sh.Shard.Index, w)
		}
		if err := sc.AddTally(sh.Shard.Tally); err != nil {
			return fmt.Errorf("shard %d: %w", sh.Shard.Index, err)
		}
	}
	merged, err := results.Merge(shards...)
	if err != nil {
		return fmt.Errorf("merging the shards' results: %w", err)
	}
	res := r.result
	res.Started, res.Ended = merged.Started, merged.Ended
	res.Measurements, res.Series = merged.Measurements, merged.Series
	res.Interrupted = merged.Interrupted
	res.Warnings = append(res.Warnings, merged.Warnings...)
	var late []time.Duration
	for _, sh := range shards {
		info := *sh.Shard
		info.Requests, info.Tally = nil, nil
		res.Shards = append(res.Shards, info)
		late = append(late, info.StartLate)
	}
	if skew := slices.Max(late) - slices.Min(late); skew > 100*time.Millisecond {
		r.warn("the shards started %s apart (each shard's start, by its own clock): the window's edges are that much blurred", skew.Round(time.Millisecond))
	}
	return nil
}

// waiter waits for the shards' states.
type waiter struct {
	r      *run
	p      protocol
	failed <-chan error
}

// await waits until every shard's Lease says want, and returns the
// states. It fails at once when a shard fails (its Lease says failed, or
// the runner reports it), when timeout passes (zero: the run's
// deadline is the only bound) or when ctx is done; with onCancel set, a
// done ctx calls it instead and the wait goes on, bounded by the
// operation timeout. Until notBefore it polls only once a second.
func (w waiter) await(ctx context.Context, want string, notBefore, timeout time.Time, onCancel func()) (map[int]shardState, error) {
	return w.awaitWatching(ctx, want, notBefore, timeout, onCancel, nil)
}

// awaitWatching is await that also shows each poll's states to onPoll.
// While it waits for the window's end it also fails a shard whose
// progress stops (frozen, hung, or cut off from the apiserver) for
// longer than an operation may take plus shardSilence.
func (w waiter) awaitWatching(ctx context.Context, want string, notBefore, timeout time.Time, onCancel func(), onPoll func(map[int]shardState)) (map[int]shardState, error) {
	n := w.r.spec.Shards
	silence := w.r.spec.OpTimeout.Duration + shardSilence
	began := time.Now()
	lastAt := map[int]time.Duration{} // each shard's last published second
	lastSeen := map[int]time.Time{}   // when it changed, by this clock
	var failingSince time.Time
	for {
		states, err := w.p.readShards(context.WithoutCancel(ctx))
		switch {
		case err != nil && failingSince.IsZero():
			failingSince = time.Now()
		case err != nil && time.Since(failingSince) > w.r.spec.OpTimeout.Duration:
			return nil, fmt.Errorf("%w: %v", ErrTargetLost, err)
		case err == nil:
			failingSince = time.Time{}
			if onPoll != nil {
				onPoll(states)
			}
			if done, err := judgeStates(states, n, want); err != nil || done {
				return states, err
			}
			if !timeout.IsZero() && time.Now().After(timeout) {
				return nil, fmt.Errorf("shards %s did not %s in time: %s", notIn(states, n, want), stateGoals[want], describeStates(states, n))
			}
			if want == stateQuietEnd {
				for i := range n {
					st := states[i]
					if st.progress != nil && (lastSeen[i].IsZero() || st.progress.At != lastAt[i]) {
						lastAt[i], lastSeen[i] = st.progress.At, time.Now()
					}
					since := lastSeen[i]
					if since.IsZero() {
						since = began
					}
					if st.state != stateQuietEnd && st.state != stateUploaded && time.Since(since) > silence {
						return nil, fmt.Errorf("shard %d (%s) has reported no progress for %s: it is stopped or hung, or cannot reach the apiserver", i, st.holder, time.Since(since).Round(time.Second))
					}
				}
			}
		}
		poll := 50 * time.Millisecond
		if d := time.Until(notBefore); d > poll {
			poll = min(d, time.Second)
		}
		t := time.NewTimer(poll)
		select {
		case <-t.C:
		case err := <-w.failed:
			t.Stop()
			return nil, err
		case <-ctx.Done():
			t.Stop()
			if cause := context.Cause(ctx); errors.Is(cause, ErrTargetLost) {
				return nil, cause // the target is gone: nothing to wait for
			}
			if onCancel == nil {
				return nil, fmt.Errorf("waiting for the shards: %w", context.Cause(ctx))
			}
			onCancel()
			onCancel = nil
			ctx = context.WithoutCancel(ctx)
			timeout = time.Now().Add(w.r.spec.OpTimeout.Duration + shardSlack)
		}
	}
}

// shardSilence is how long past an operation's timeout a shard may go
// without progress in the measured window.
const shardSilence = 5 * time.Second

// stateGoals say what reaching each state means, for messages.
var stateGoals = map[string]string{
	stateJoined:     "join the run",
	stateQuietStart: "finish the warm-up",
	stateQuietEnd:   "finish the measured window",
	stateUploaded:   "upload their results",
}

// stateWords say where a shard in each state is, for messages.
var stateWords = map[string]string{
	stateJoining:    "is getting ready (objects, writers, connections)",
	stateJoined:     "has joined",
	stateQuietStart: "has finished the warm-up",
	stateQuietEnd:   "has finished the measured window",
	stateUploaded:   "has uploaded its result",
	stateFailed:     "failed",
}

// stateOrder ranks the states a shard goes through.
var stateOrder = []string{stateJoined, stateQuietStart, stateQuietEnd, stateUploaded}

// judgeStates says whether all n shards reached want, or fails naming
// the first shard that failed.
func judgeStates(states map[int]shardState, n int, want string) (bool, error) {
	rank := slices.Index(stateOrder, want)
	done := true
	for i := range n {
		st, ok := states[i]
		if ok && st.state == stateFailed {
			return false, fmt.Errorf("shard %d (%s) failed: %s", i, st.holder, st.reason)
		}
		if !ok || slices.Index(stateOrder, st.state) < rank {
			done = false
		}
	}
	return done, nil
}

// notIn lists the shards that have not reached want.
func notIn(states map[int]shardState, n int, want string) string {
	rank := slices.Index(stateOrder, want)
	var late []string
	for i := range n {
		if st, ok := states[i]; !ok || slices.Index(stateOrder, st.state) < rank {
			late = append(late, fmt.Sprint(i))
		}
	}
	return strings.Join(late, ", ")
}

// describeStates says where every shard is.
func describeStates(states map[int]shardState, n int) string {
	parts := make([]string, n)
	for i := range n {
		st, ok := states[i]
		switch {
		case !ok:
			parts[i] = fmt.Sprintf("shard %d never joined", i)
		default:
			parts[i] = fmt.Sprintf("shard %d (%s) %s", i, st.holder, stateWords[st.state])
		}
	}
	return strings.Join(parts, "; ")
}

// ShardOptions are what RunShard needs.
type ShardOptions struct {
	// Config is the target apiserver's (the one the coordinator runs on).
	Config *rest.Config
	// Namespace and RunID find the run's coordination Lease.
	Namespace string
	RunID     string
	// Index is the shard's number, from 0.
	Index int
	// Name is the process or pod running the shard, for messages.
	Name string
	// Version is kb-bench's; a coordinator of another version is warned about.
	Version string
	// Log receives notes and warnings (may be nil).
	Log io.Writer
	// ClientLog, when set, returns what client-go logged (see Options).
	ClientLog func() []string
}

// errAborted is a shard's error when the coordinator ended the run.
var errAborted = errors.New("the coordinator aborted the run (another shard failed, or it was interrupted before the measured window)")

// RunShard runs shard o.Index of the distributed run o.RunID: it reads the
// spec from the run's coordination Lease, runs its share of the writers
// through each phase the coordinator publishes, and uploads its result
// for the coordinator to merge. A failure is reported to the coordinator
// (the shard's Lease says failed, and why) and returned.
func RunShard(ctx context.Context, o ShardOptions) error {
	// No client-side limit: the protocol's polls must not queue behind
	// client-go's default 5 QPS.
	adminCfg := scenario.ClientConfig(o.Config, spec.Client{QPS: -1}, o.Version)
	adminCfg.Timeout = spec.DefaultOpTimeout
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		return fmt.Errorf("building the shard's client: %w", err)
	}
	p := protocol{kube: admin, namespace: o.Namespace, runID: o.RunID}
	rctx, cancel := context.WithTimeout(ctx, spec.DefaultOpTimeout)
	st, err := p.readRun(rctx)
	cancel()
	if err != nil {
		return err
	}
	if o.Index < 0 || o.Index >= st.shards {
		return spec.Input(fmt.Errorf("--index %d: run %s has shards 0 to %d", o.Index, o.RunID, st.shards-1))
	}
	if err := p.join(ctx, o.Index, o.Name); err != nil {
		return err
	}
	err = runShard(ctx, o, p, st)
	if err != nil && !errors.Is(err, errAborted) && !errors.Is(err, ErrTargetLost) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spec.DefaultOpTimeout)
		defer cancel()
		_ = p.setState(fctx, o.Index, stateFailed, map[string]string{annReason: err.Error()})
	}
	return err
}

func runShard(ctx context.Context, o ShardOptions, p protocol, st runState) error {
	var s spec.Spec
	if err := json.Unmarshal(st.spec, &s); err != nil {
		return fmt.Errorf("the run's spec: %w", err)
	}
	def, settings, errs := resolve(Scenarios(), &s)
	if len(errs) > 0 {
		return fmt.Errorf("the run's spec: %s", spec.Describe(errs))
	}
	lo, hi := share(s.Clients, st.shards, o.Index)
	r, sc, err := newRun(s, def, settings, Options{Config: o.Config, RunID: o.RunID, Version: o.Version, Log: o.Log, ClientLog: o.ClientLog}, max(1, hi-lo))
	if err != nil {
		return err
	}
	r.result.Namespace, r.env.Namespace = o.Namespace, o.Namespace
	if st.version != o.Version {
		r.warn("this shard runs kb-bench %s, the coordinator %s", o.Version, st.version)
	}
	sharded, ok := sc.(scenario.Sharded)
	if !ok {
		return fmt.Errorf("scenario %s does not run in shards", def.Name)
	}
	total := sharded.Workers()
	lo, hi = share(total, st.shards, o.Index)
	rec := metrics.NewRecorder(notYet, metrics.DefaultShards(hi-lo), s.Rate > 0)
	r.env.Recorder = rec
	if err := sharded.Join(ctx, lo, hi); err != nil {
		return err
	}
	r.connect(ctx)
	if s.Client.ContentType == spec.ContentCBOR {
		r.probeCBOR(ctx)
	}
	// A target that stops answering ends the shard, as it ends a run.
	runCtx, cancelRun := context.WithCancelCause(ctx)
	stopWatching := sync.OnceValue(r.health.watch(cancelRun))
	defer func() { stopWatching(); cancelRun(nil) }()
	if err := p.setState(ctx, o.Index, stateJoined, nil); err != nil {
		return err
	}
	rate := s.Rate * float64(hi-lo) / float64(total) // this shard's share of an open loop's
	loop := func(ctx context.Context, pl plan) { drive(ctx, pl, hi-lo, rate, rec, sharded.Do) }

	st, err = awaitPhase(runCtx, p, st.deadline, phaseWarmup)
	if err != nil {
		return err
	}
	warmStart, warmEnd := st.warmup[0], st.warmup[1]
	if warmEnd.After(warmStart) {
		sleepUntil(runCtx, warmStart, nil)
		loop(runCtx, plan{start: warmStart, measureFrom: warmEnd, deadline: warmEnd, thinkTime: s.ThinkTime.Duration})
	}
	before := r.quiesce()
	if err := p.setState(ctx, o.Index, stateQuietStart, nil); err != nil {
		return err
	}
	st, err = awaitPhase(runCtx, p, st.deadline, phaseMeasure, phaseStop)
	if err != nil {
		return err
	}
	start, end := st.window[0], st.window[1]
	var late time.Duration
	if st.phase == phaseMeasure {
		sleepUntil(runCtx, start, nil)
		late = time.Since(start)
	}
	rec.MeasureFrom(start)
	r.gate.release()
	var latest atomic.Pointer[metrics.SeriesPoint]
	stopTicks := tick(rec, start, func(_ time.Duration, pt metrics.SeriesPoint) { latest.Store(&pt) })
	// The coordinator may end the window early (Ctrl-C) or abort the run;
	// it shows the shards' last seconds as the run's progress.
	loopCtx, stopLoop := context.WithCancel(runCtx)
	aborted := make(chan bool, 1)
	go func() {
		defer close(aborted)
		var published *metrics.SeriesPoint
		for loopCtx.Err() == nil {
			sleepUntil(loopCtx, time.Now().Add(500*time.Millisecond), nil)
			if st, err := p.readRun(loopCtx); err == nil && (st.phase == phaseStop || st.phase == phaseAbort) {
				aborted <- st.phase == phaseAbort
				stopLoop()
				return
			}
			if pt := latest.Load(); pt != published && loopCtx.Err() == nil {
				published = pt
				_ = p.publishProgress(loopCtx, o.Index, *pt) // progress only: a miss is no failure
			}
		}
	}()
	if st.phase == phaseMeasure {
		lo, hi := share(int(s.Operations), st.shards, o.Index)
		ops := int64(hi - lo)
		if s.Operations > 0 && ops == 0 {
			ops = -1 // no operation is this shard's
		}
		if ops >= 0 {
			loop(loopCtx, plan{start: start, measureFrom: start, deadline: end, operations: ops, thinkTime: s.ThinkTime.Duration})
		}
	}
	ended := time.Now()
	if ended.Before(start) {
		ended = start // stopped before the window began: an empty window
	}
	stopLoop()
	stopTicks()
	if <-aborted {
		return errAborted
	}
	after := r.quiesce()
	if lost := stopWatching(); lost != "" {
		return fmt.Errorf("%w: %s", ErrTargetLost, lost)
	}
	if err := p.setState(ctx, o.Index, stateQuietEnd, nil); err != nil {
		return err
	}
	r.result.Interrupted = runCtx.Err() != nil || st.phase == phaseStop
	cctx := context.WithoutCancel(ctx)
	if _, err := awaitPhase(cctx, p, st.deadline, phaseCollect); err != nil {
		return err
	}
	window := r.measure(rec, start, ended, &before, &after)
	tally, err := sharded.Tally()
	if err != nil {
		return err
	}
	r.warnClientLog()
	res := r.result
	res.Shard = &results.ShardInfo{
		Index: o.Index, Name: o.Name, From: lo, To: hi, Ops: res.Measurements.Ops,
		StartLate: late, Requests: clientRequests(window.requests), Tally: tally,
	}
	if res.Summary, err = results.Summarize(res.Measurements, ended.Sub(start).Seconds(), nil); err != nil {
		return err
	}
	chunks, err := p.upload(cctx, o.Index, res)
	if err != nil {
		return err
	}
	return p.setState(cctx, o.Index, stateUploaded, map[string]string{annChunks: fmt.Sprint(chunks)})
}

// awaitPhase waits until the coordinator's Lease is in one of phases
// (polling it), and fails when the run is aborted or its deadline passes.
func awaitPhase(ctx context.Context, p protocol, deadline time.Time, phases ...string) (runState, error) {
	for {
		st, err := p.readRun(ctx)
		switch {
		case err == nil && st.phase == phaseAbort:
			return st, errAborted
		case err == nil && slices.Contains(phases, st.phase):
			return st, nil
		case ctx.Err() != nil:
			return st, fmt.Errorf("interrupted while waiting for the coordinator: %w", context.Cause(ctx))
		case time.Now().After(deadline):
			return st, fmt.Errorf("the coordinator did not move the run to %s by its deadline %s: it is gone", strings.Join(phases, " or "), deadline.Format(time.RFC3339))
		}
		sleepUntil(ctx, time.Now().Add(50*time.Millisecond), nil)
	}
}

// clientRequests lists a window's requests for the coordinator, in a
// stable order.
func clientRequests(m map[metrics.RequestKey]int64) []results.ClientRequests {
	out := make([]results.ClientRequests, 0, len(m))
	for k, n := range m {
		out = append(out, results.ClientRequests{Verb: k.Verb, Group: k.Group, Resource: k.Resource, Subresource: k.Subresource, Code: k.Code, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return fmt.Sprint(a.Resource, a.Subresource, a.Verb, a.Code) < fmt.Sprint(b.Resource, b.Subresource, b.Verb, b.Code)
	})
	return out
}
