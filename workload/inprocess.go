package workload

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/distributed"
)

// inProcess is a run whose load this process makes, and whose figures are
// its own: a run alone, or one shard of a distributed run (sh), which
// runs its share of the writers when the coordinator says and hands its
// figures to it.
type inProcess struct {
	e      *engine
	driver *driver
	sh     *distributed.Shard // nil: a run alone
	name   string             // the shard's process or pod
	lo, hi int                // the shard's writers
	late   time.Duration      // how late the shard started its window
	// stopped: the coordinator stopped the run before the window.
	stopped bool
}

func (r *inProcess) ready(ctx context.Context) error {
	e, s := r.e, r.e.Spec
	workers, rate := 1, s.Rate
	if e.sc.Driven != nil {
		workers = e.sc.Driven.Workers()
	}
	if r.sh != nil {
		r.lo, r.hi = r.sh.Share(workers)
		workers, rate = r.hi-r.lo, s.Rate*float64(r.hi-r.lo)/float64(workers) // its share of an open loop's rate
	}
	e.record(workers)
	r.driver = &driver{e: e, workers: workers, rate: rate, finished: make(chan struct{})}
	if r.sh == nil {
		if err := e.sc.Setup(ctx); err != nil {
			return err
		}
	} else if err := e.sc.Sharded.Join(ctx, r.lo, r.hi); err != nil {
		return err
	}
	e.connect(ctx)
	if r.sh != nil {
		return r.sh.Say(ctx, distributed.Joined)
	}
	return nil
}

// warmup runs the warm-up from now, or when the coordinator says. A
// Continuous scenario with none starts after the first edge, so that its
// first requests do not wait for the scrape.
func (r *inProcess) warmup(ctx context.Context) (err error) {
	start := time.Now()
	end := start.Add(r.e.Spec.Warmup.Duration)
	if r.sh != nil {
		if start, end, err = r.sh.Warmup(ctx); err != nil {
			return err
		}
		sleepUntil(ctx, start, nil)
	}
	if end.After(start) {
		r.driver.run(ctx, plan{start: start, measureFrom: end, deadline: end, thinkTime: r.e.Spec.ThinkTime.Duration})
	}
	if ctx.Err() != nil {
		r.driver.stop()
		if r.sh != nil {
			return fmt.Errorf("interrupted in the warm-up: %w", context.Cause(ctx))
		}
	}
	return nil
}

// open starts the window now; a shard says it is quiet after the warm-up
// and waits for the window the coordinator publishes once it has scraped.
func (r *inProcess) open(ctx context.Context) (start, end time.Time, err error) {
	if r.sh == nil {
		start = time.Now()
		if d := r.e.Spec.Duration.Duration; d > 0 {
			end = start.Add(d)
		}
		return start, end, nil
	}
	if err := r.sh.Say(ctx, distributed.QuietStart); err != nil {
		return start, end, err
	}
	start, end, r.stopped, err = r.sh.Window(ctx)
	if err == nil && !r.stopped {
		sleepUntil(ctx, start, nil)
		r.late = time.Since(start)
	}
	return start, end, err
}

// load runs the window's operations. A shard runs its share of them and
// follows the coordinator, who may end the window early (Ctrl-C) or abort
// the run, and who shows the shards' last seconds as the run's progress.
func (r *inProcess) load(ctx context.Context, start, end time.Time) (time.Time, bool, error) {
	s := r.e.Spec
	p := plan{start: start, measureFrom: start, deadline: end, operations: s.Operations, thinkTime: s.ThinkTime.Duration}
	if r.sh == nil {
		return r.driver.window(ctx, p, r.e.opts.Progress), false, nil
	}
	var latest atomic.Pointer[metrics.SeriesPoint]
	window, follow := r.sh.Follow(ctx, latest.Load)
	lo, hi := r.sh.Share(int(s.Operations))
	p.operations = int64(hi - lo)
	ended := time.Now()
	// With operations to share out, a shard may have none of its own.
	if !r.stopped && (p.operations > 0 || s.Operations == 0) {
		ended = r.driver.window(window, p, func(_ time.Duration, pt metrics.SeriesPoint) { latest.Store(&pt) })
	}
	if ended.Before(start) {
		ended = start // stopped before the window began: an empty window
	}
	if follow() {
		return ended, false, distributed.ErrAborted
	}
	return ended, r.stopped, nil
}

// figures are this process's own. A shard's, once it has said it is
// quiet, include its part for the coordinator; a shard that lost the
// target cannot say so, and keeps its part up to the loss for the
// coordinator to salvage (distributed.Handoff).
func (r *inProcess) figures(ctx context.Context, w window) (figures, error) {
	if r.sh == nil {
		return r.e.measure(w), nil
	}
	if !errors.Is(context.Cause(ctx), spec.ErrTargetLost) {
		if err := r.sh.Say(ctx, distributed.QuietEnd); err != nil {
			return figures{}, err
		}
	}
	f := r.e.measure(w)
	tally, err := r.e.sc.Sharded.Tally()
	f.shard = &results.ShardInfo{
		Index: r.sh.Index, Name: r.name, From: r.lo, To: r.hi, Ops: f.measurements.Ops,
		StartLate: r.late, Requests: clientRequests(f.requests), Tally: tally,
	}
	return f, err
}

func (r *inProcess) close(context.Context, error) error { return nil }
