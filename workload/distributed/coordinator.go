// Package distributed spreads a run's writers over shard processes
// (kb-bench run --shards): the protocol by which a coordinator and its
// shards go through the run's phases together, on Leases of the apiserver
// under test (protocol.go); the coordinator's side of it (Coordinator) and
// a shard's (Shard); and what starts the shards (ShardRunner): local
// processes (package process) or an Indexed Job (package job). The engine
// (package workload) runs both sides as roles of its one phase sequence.
package distributed

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/spec"
)

// ShardRunner starts the shards of a distributed run (Spec.Shards).
type ShardRunner interface {
	// Start starts shards 0..run.Shards-1, each running
	// 'kb-bench shard --namespace NS --run-id ID --index I', and returns
	// at once.
	Start(ctx context.Context, run ShardRun) (ShardGroup, error)
}

// RulesNeeder is a ShardRunner that needs rights of its own in the run's
// namespace on the target (package job: to make the shards' Job and
// rights); a run in an existing namespace checks them with its own.
type RulesNeeder interface {
	Rules() []rbacv1.PolicyRule
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
	// Live asks for each shard to serve its figures to the coordinator
	// as the run goes (live.ShardHandler), for the coordinator's live
	// metrics endpoint; a runner that can reach them returns a
	// ShardGroup that is a LiveShards too.
	Live bool
}

// LiveShards is a ShardGroup whose shards serve their figures to the
// coordinator (ShardRun.Live): one URL per shard.
type LiveShards interface {
	LiveURLs() []string
}

// Handoff is a ShardGroup whose shards also hand their results to the
// coordinator by a way that does not need the apiserver (package
// process: a pipe), so that a run whose target is lost keeps what the
// shards measured up to the loss. Shards that upload only through the
// apiserver (package job) cannot.
type Handoff interface {
	// Handed waits until each shard has handed its result or exited, or
	// ctx ends, and returns what each handed (nil: nothing): a
	// results.Result as JSON.
	Handed(ctx context.Context) [][]byte
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

// lead is how far ahead of its publication an instant (the warm-up's or
// the window's start) lies, so that every shard has seen it in time and
// all start together.
const lead = time.Second

// slack bounds a shard's answer beyond the operations it waits for.
const slack = 30 * time.Second

// silence is how long past an operation's timeout a shard may go without
// progress in the measured window.
const silence = 5 * time.Second

// CoordinatorOptions are what Coordinate needs.
type CoordinatorOptions struct {
	Kube              kubernetes.Interface // the coordinator's client of the target
	Namespace, RunID  string
	Spec              []byte // the run's resolved spec, as JSON, for the shards
	Shards            int
	Version           string
	Length, OpTimeout time.Duration // the warm-up and window (zero window: bounded by operations)
	Runner            ShardRunner
	Rules             []rbacv1.PolicyRule // the shards' permissions (workload's shardRules)
	JoinTimeout       time.Duration       // bounds the wait for every shard to join
	Log               io.Writer
	Warn              func(format string, a ...any) // a warning kept in the result
	Live              bool                          // see ShardRun.Live
}

// Coordinator is the coordinator's side of a distributed run: it moves
// the run through its phases and waits for the shards at each.
type Coordinator struct {
	p         protocol
	n         int
	opTimeout time.Duration
	group     ShardGroup
	log       io.Writer
	warn      func(format string, a ...any)
}

// LiveURLs are where the shards serve their figures (ShardRun.Live); nil
// when the runner cannot reach them.
func (c *Coordinator) LiveURLs() []string {
	if l, ok := c.group.(LiveShards); ok {
		return l.LiveURLs()
	}
	return nil
}

// Coordinate creates the run's coordination Lease, starts the shards with
// o.Runner and waits until every shard has joined. Once the shards are
// started it returns a Coordinator also with an error: Close it.
func Coordinate(ctx context.Context, o CoordinatorOptions) (*Coordinator, error) {
	length := cmp.Or(o.Length, time.Hour) // zero: bounded by operations, a generous bound
	deadline := time.Now().Add(o.JoinTimeout + length + 2*o.OpTimeout + 3*slack)
	p := protocol{kube: o.Kube, namespace: o.Namespace, runID: o.RunID}
	if err := p.createRun(ctx, o.Spec, o.Shards, o.Version, deadline); err != nil {
		return nil, err
	}
	group, err := o.Runner.Start(ctx, ShardRun{RunID: o.RunID, Namespace: o.Namespace, Shards: o.Shards, Rules: o.Rules, Deadline: deadline, Live: o.Live})
	if err != nil {
		return nil, fmt.Errorf("starting the %d shards: %w", o.Shards, err)
	}
	c := &Coordinator{p: p, n: o.Shards, opTimeout: o.OpTimeout, group: group, log: o.Log, warn: o.Warn}
	began := time.Now()
	if _, err := c.await(ctx, Joined, time.Time{}, began.Add(o.JoinTimeout), nil, nil); err != nil {
		if time.Since(began) >= o.JoinTimeout {
			err = fmt.Errorf("%w (--shard-timeout %s)", err, o.JoinTimeout)
			// Where the shards that never came are, as the runner saw
			// them last: no news for a shard that failed and said why.
			if st := group.Status(); st != "" {
				err = fmt.Errorf("%w; the runner says: %s", err, st)
			}
		}
		return c, err
	}
	fmt.Fprintf(o.Log, "%d shards joined in %s\n", o.Shards, time.Since(began).Round(time.Millisecond))
	return c, nil
}

// Warmup has the shards run a warm-up of d, starting together a lead from
// now, and waits until all have finished it with no request in flight.
func (c *Coordinator) Warmup(ctx context.Context, d time.Duration) error {
	start := time.Now().Add(lead)
	if err := c.p.setPhase(ctx, phaseWarmup, annWarmup, start, start.Add(d)); err != nil {
		return err
	}
	_, err := c.await(ctx, QuietStart, start.Add(d), start.Add(d+c.opTimeout+slack), nil, nil)
	return err
}

// Window has the shards run the measured window of d (zero: until their
// operations are done), starting together a lead from now; it returns
// the window's bounds.
func (c *Coordinator) Window(ctx context.Context, d time.Duration) (start, end time.Time, err error) {
	start = time.Now().Add(lead)
	if d > 0 {
		end = start.Add(d)
	}
	if err := c.p.setPhase(ctx, phaseMeasure, annWindow, start, end); err != nil {
		return start, end, err
	}
	fmt.Fprintf(c.log, "measured window from %s: the %d shards start together\n", start.Format("15:04:05.000"), c.n)
	return start, end, nil
}

// AwaitWindow waits until every shard has run the window that ends at end
// and has no request in flight, showing each second every shard has
// published to progress (may be nil). A done ctx (Ctrl-C) ends the window
// now: the shards are told to stop, and stopped says so.
func (c *Coordinator) AwaitWindow(ctx context.Context, end time.Time, progress func(time.Duration, metrics.SeriesPoint)) (stopped bool, err error) {
	var timeout time.Time
	if !end.IsZero() {
		timeout = end.Add(c.opTimeout + slack)
	}
	stop := func() {
		stopped = true
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opTimeout)
		defer cancel()
		if err := c.p.setPhase(sctx, phaseStop, "", time.Time{}, time.Time{}); err != nil {
			c.warn("telling the shards to stop: %v", err)
		}
	}
	shown := time.Duration(0)
	show := func(states map[int]shardState) {
		// A second every shard has published is the run's.
		var points [][]metrics.SeriesPoint
		for i := range c.n {
			st, ok := states[i]
			if !ok || st.progress == nil || st.progress.At.Round(time.Second) != states[0].progress.At.Round(time.Second) {
				return
			}
			points = append(points, []metrics.SeriesPoint{*st.progress})
		}
		at := states[0].progress.At.Round(time.Second)
		if at <= shown || progress == nil {
			return
		}
		if merged, err := analysis.MergeSeries(points); err == nil && len(merged) == 1 {
			shown = at
			progress(at, merged[0])
		}
	}
	_, err = c.await(ctx, QuietEnd, end, timeout, stop, show)
	return stopped, err
}

// Collect has the shards upload their results and downloads them, in
// shard order; what was measured is collected after Ctrl-C too.
func (c *Coordinator) Collect(ctx context.Context) ([]*results.Result, error) {
	ctx = context.WithoutCancel(ctx)
	if err := c.p.setPhase(ctx, phaseCollect, "", time.Time{}, time.Time{}); err != nil {
		return nil, err
	}
	states, err := c.await(ctx, stateUploaded, time.Time{}, time.Now().Add(slack), nil, nil)
	if err != nil {
		return nil, err
	}
	shards := make([]*results.Result, c.n)
	for i := range shards {
		if shards[i], err = c.p.download(ctx, i, states[i].chunks); err != nil {
			return nil, err
		}
	}
	return shards, nil
}

// Salvage returns the results the shards handed over directly (Handoff)
// after the target was lost: each one's figures up to the moment it found
// the target gone. It waits for the shards to notice and end, at most as
// long as an operation may take plus slack; a shard that handed nothing
// is missing from the list, and a note names it. A runner that cannot
// hand results over keeps nothing, and the error says so.
func (c *Coordinator) Salvage(ctx context.Context) (shards []*results.Result, notes []string, err error) {
	h, ok := c.group.(Handoff)
	if !ok {
		return nil, nil, errors.New("the shards' figures are lost with the target: this runner's shards hand their results over only through the apiserver")
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opTimeout+slack)
	defer cancel()
	for i, b := range h.Handed(wctx) {
		var r results.Result
		switch err := json.Unmarshal(b, &r); {
		case b == nil:
			notes = append(notes, fmt.Sprintf("shard %d handed no figures (it ended before its window, or did not end in time): they are left out", i))
		case err != nil:
			notes = append(notes, fmt.Sprintf("shard %d's handed figures do not decode (%v): they are left out", i, err))
		case r.Shard == nil || r.Shard.Index != i:
			notes = append(notes, fmt.Sprintf("shard %d's handed figures do not say they are that shard's: they are left out", i))
		default:
			shards = append(shards, &r)
		}
	}
	if len(shards) == 0 {
		return nil, notes, fmt.Errorf("no shard handed its figures over: %s", strings.Join(notes, "; "))
	}
	return shards, notes, nil
}

// Close ends the shards' part: after a failure (failed) it tells those
// still running to abort, unless the target is lost (they cannot hear it);
// then it stops them and removes what the runner made, at once when the
// target is lost. It returns the runner's error.
func (c *Coordinator) Close(ctx context.Context, failed error) error {
	lost := errors.Is(context.Cause(ctx), spec.ErrTargetLost)
	if failed != nil && !lost {
		// A shard that lost the target says so; the coordinator may still
		// reach it, and the other shards must stop loading it now.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opTimeout)
		_ = c.p.setPhase(actx, phaseAbort, "", time.Time{}, time.Time{})
		cancel()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slack)
	defer cancel()
	if lost {
		cancel() // the shards cannot hear an abort from a lost target: stop them now
	}
	if err := c.group.Stop(sctx); err != nil {
		return fmt.Errorf("stopping the shards: %w", err)
	}
	return nil
}

// await waits until every shard's Lease says want, and returns the
// states. It fails at once when a shard fails (its Lease says failed, or
// the runner reports it), when timeout passes (zero: the run's deadline
// is the only bound) or when ctx is done; with onCancel set, a done ctx
// calls it instead and the wait goes on, bounded by the operation
// timeout. Until notBefore it polls only once a second. Each poll's states
// go to onPoll (may be nil). While it waits for the window's end it also
// fails a shard whose progress stops (frozen, hung, or cut off from the
// apiserver) for longer than an operation may take plus silence.
func (c *Coordinator) await(ctx context.Context, want State, notBefore, timeout time.Time, onCancel func(), onPoll func(map[int]shardState)) (map[int]shardState, error) {
	began := time.Now()
	lastAt := map[int]time.Duration{} // each shard's last published second
	lastSeen := map[int]time.Time{}   // when it changed, by this clock
	var failingSince time.Time
	for {
		states, err := c.p.readShards(context.WithoutCancel(ctx))
		switch {
		case err != nil && failingSince.IsZero():
			failingSince = time.Now()
		case err != nil && time.Since(failingSince) > c.opTimeout:
			return nil, fmt.Errorf("%w: the apiserver stopped answering: %v", spec.ErrTargetLost, err)
		case err == nil:
			failingSince = time.Time{}
			if onPoll != nil {
				onPoll(states)
			}
			if done, err := judgeStates(states, c.n, want); err != nil || done {
				return states, err
			}
			if !timeout.IsZero() && time.Now().After(timeout) {
				return nil, fmt.Errorf("shards %s did not %s in time: %s", notIn(states, c.n, want), stateInfo[want].goal, describeStates(states, c.n))
			}
			if want == QuietEnd {
				for i := range c.n {
					st := states[i]
					if st.progress != nil && (lastSeen[i].IsZero() || st.progress.At != lastAt[i]) {
						lastAt[i], lastSeen[i] = st.progress.At, time.Now()
					}
					since := cmp.Or(lastSeen[i], began)
					if st.state != QuietEnd && st.state != stateUploaded && time.Since(since) > c.opTimeout+silence {
						return nil, fmt.Errorf("shard %d (%s) has reported no progress for %s: it is stopped or hung, or cannot reach the apiserver", i, st.holder, time.Since(since).Round(time.Second))
					}
				}
			}
		}
		poll := 50 * time.Millisecond
		if d := time.Until(notBefore); d > poll {
			poll = min(d, time.Second)
		}
		select {
		case <-time.After(poll):
		case err := <-c.group.Failed():
			return nil, err
		case <-ctx.Done():
			if cause := context.Cause(ctx); errors.Is(cause, spec.ErrTargetLost) {
				return nil, cause // the target is gone: nothing to wait for
			}
			if onCancel == nil {
				return nil, fmt.Errorf("waiting for the shards: %w", context.Cause(ctx))
			}
			onCancel()
			onCancel = nil
			ctx = context.WithoutCancel(ctx)
			timeout = time.Now().Add(c.opTimeout + slack)
		}
	}
}

// stateInfo says, of each state a shard goes through, how far it is (a
// state not here is none of the way) and, for messages, what reaching it
// means and where a shard in it is.
var stateInfo = map[State]struct {
	rank        int
	goal, where string
}{
	stateFailed:   {0, "", "failed"},
	stateJoining:  {0, "", "is getting ready (objects, writers, connections)"},
	Joined:        {1, "join the run", "has joined"},
	QuietStart:    {2, "finish the warm-up", "has finished the warm-up"},
	QuietEnd:      {3, "finish the measured window", "has finished the measured window"},
	stateUploaded: {4, "upload their results", "has uploaded its result"},
}

// judgeStates says whether all n shards reached want, or fails naming
// the first shard that failed.
func judgeStates(states map[int]shardState, n int, want State) (bool, error) {
	for i := range n {
		if st, ok := states[i]; ok && st.state == stateFailed {
			return false, fmt.Errorf("shard %d (%s) failed: %s", i, st.holder, st.reason)
		}
	}
	return notIn(states, n, want) == "", nil
}

// notIn lists the shards that have not reached want.
func notIn(states map[int]shardState, n int, want State) string {
	var late []string
	for i := range n {
		if st, ok := states[i]; !ok || stateInfo[st.state].rank < stateInfo[want].rank {
			late = append(late, fmt.Sprint(i))
		}
	}
	return strings.Join(late, ", ")
}

// describeStates says where every shard is.
func describeStates(states map[int]shardState, n int) string {
	parts := make([]string, n)
	for i := range n {
		parts[i] = fmt.Sprintf("shard %d never joined", i)
		if st, ok := states[i]; ok {
			parts[i] = fmt.Sprintf("shard %d (%s) %s", i, st.holder, stateInfo[st.state].where)
		}
	}
	return strings.Join(parts, "; ")
}

// ShardExited is the error err of a shard that exited with code, marked
// spec.ErrTargetLost when code says so (spec.ExitTargetLost), for the runners.
func ShardExited(code int, err error) error {
	if code == spec.ExitTargetLost {
		return fmt.Errorf("%w: %w", spec.ErrTargetLost, err)
	}
	return err
}
