package workload

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

// driver makes this process's load: a Driven scenario's operations with
// workers workers, in an open loop at rate operations per second in all
// (arrivals that find no free worker counted in the recorder), or a closed
// loop when rate is 0; or a Continuous scenario's own goroutines, started
// at the first phase that runs them.
type driver struct {
	e        *engine
	workers  int
	rate     float64
	started  bool
	finished chan struct{} // a Continuous scenario's operations are done
}

// run makes the load of p (a phase) until its deadline or operations, or
// until ctx is done.
func (d *driver) run(ctx context.Context, p plan) {
	switch dr := d.e.sc.Driven; {
	case dr != nil && d.rate > 0:
		openLoop(ctx, p, d.workers, constantPacer{rate: d.rate}, d.e.rec, dr.Do)
	case dr != nil:
		closedLoop(ctx, p, d.workers, dr.Do)
	default:
		if !d.started {
			d.started = true
			d.e.sc.Continuous.Start(ctx, sync.OnceFunc(func() { close(d.finished) }))
		}
		sleepUntil(ctx, p.deadline, d.finished)
	}
}

// stop stops a Continuous scenario's goroutines.
func (d *driver) stop() {
	if d.started {
		d.e.sc.Continuous.Stop()
	}
}

// window runs the measured window of p, its per-second series ticking to
// progress, and returns when it ended.
func (d *driver) window(ctx context.Context, p plan, progress func(time.Duration, metrics.SeriesPoint)) time.Time {
	stopTicks := tick(d.e.rec, p.start, progress)
	d.run(ctx, p)
	d.stop()
	ended := time.Now()
	stopTicks()
	return ended
}

// plan bounds a run of the writers.
type plan struct {
	start       time.Time     // when the writers start
	measureFrom time.Time     // end of the warm-up: operations due from here are measured
	deadline    time.Time     // no operation is due from here; zero: no time bound
	operations  int64         // measured operations to run; 0: no bound
	thinkTime   time.Duration // closed loop: pause between a writer's operations
}

// opFunc runs one operation for worker w that was due at intended, and
// records it.
type opFunc func(w int, intended time.Time)

// arrivals counts open-loop arrivals that did not start on time;
// *metrics.Recorder is one.
type arrivals interface {
	Late()
	Dropped()
}

// stopSignal returns a channel closed when ctx is done or deadline (if not
// zero) passes, and a release func that ends the watch.
func stopSignal(ctx context.Context, deadline time.Time) (stop <-chan struct{}, release func()) {
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		sleepUntil(ctx, deadline, done)
		close(ch)
	}()
	return ch, func() { close(done) }
}

// closedLoop runs n writers, each starting its next operation when its last
// one ends (after p.thinkTime), until ctx is done, p.deadline passes or the
// measured operations are used up. An operation in flight when it stops
// runs to its end (or its own timeout): closedLoop returns after the last.
func closedLoop(ctx context.Context, p plan, n int, do opFunc) {
	stop, release := stopSignal(ctx, p.deadline)
	defer release()
	var claimed atomic.Int64 // measured operations started
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var pause *time.Timer
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done(): // at once, not when stop catches up
					return
				default:
				}
				now := time.Now()
				if !p.deadline.IsZero() && !now.Before(p.deadline) {
					return
				}
				if p.operations > 0 && !now.Before(p.measureFrom) && claimed.Add(1) > p.operations {
					return
				}
				do(i, now)
				if p.thinkTime <= 0 {
					continue
				}
				if pause == nil {
					pause = time.NewTimer(p.thinkTime)
				} else {
					pause.Reset(p.thinkTime)
				}
				select {
				case <-pause.C:
				case <-stop:
					pause.Stop()
					return
				}
			}
		})
	}
	wg.Wait()
}

// openLoop hands the arrivals pace schedules to n workers until ctx is
// done, p.deadline passes or the measured operations are used up, and
// returns when the workers are idle.
//
// The hand-over channel is unbuffered, so a send succeeds only when a worker
// is idle, and the schedule never waits on responses: each arrival carries
// the time it was due, and the worker measures its latency from there
// (coordinated omission is not hidden). When no worker is free at an
// arrival's due time the dispatcher counts it Late and waits for a worker;
// the arrivals that fall due meanwhile are late as well, and go out as fast
// as workers free up, each still measured from its own schedule. Arrivals
// that were due but never reached a worker when the run stopped are counted
// Dropped. Only measured (post-warm-up) arrivals are counted.
func openLoop(ctx context.Context, p plan, n int, pace constantPacer, rec arrivals, do opFunc) {
	stop, release := stopSignal(ctx, p.deadline)
	defer release()
	ticks := make(chan time.Time)
	var busy atomic.Int64 // workers running an arrival, or about to
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for due := range ticks {
				switch {
				case ctx.Err() == nil:
					do(i, due)
				case !due.Before(p.measureFrom):
					rec.Dropped() // handed over as Ctrl-C came: never started
				}
				busy.Add(-1)
			}
		})
	}
	defer func() {
		close(ticks)
		wg.Wait()
	}()

	budget := uint64(math.MaxUint64)
	if p.operations > 0 {
		budget = uint64(p.operations)
	}
	warmup := p.measureFrom.Sub(p.start)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var hits, measured uint64
	var caughtUp time.Time // arrivals due before this waited for a worker
	for {
		elapsed := time.Since(p.start)
		wait, end := pace.pace(elapsed, hits)
		if end {
			return
		}
		due := p.start.Add(elapsed + wait)
		if !p.deadline.IsZero() && !due.Before(p.deadline) {
			return
		}
		isMeasured := !due.Before(p.measureFrom)
		if isMeasured && measured >= budget {
			return
		}
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-stop:
				timer.Stop()
				return // nothing was due yet
			}
		}
		// A slot is reserved before the hand-over and freed by the
		// worker when its operation ends, so more than n reserved means
		// every worker is taken, even one that has not yet picked up its
		// arrival. A worker that has finished but not yet come back for
		// the next one counts as free: the send waits a moment for it,
		// and that is not lateness.
		// dropAll counts this arrival and every one that fell due since,
		// up to the stop: they never started.
		dropAll := func() {
			at := time.Now()
			if !p.deadline.IsZero() && p.deadline.Before(at) {
				at = p.deadline
			}
			for range dueIn(pace, hits, warmup, at.Sub(p.start), budget-measured) {
				rec.Dropped()
			}
		}
		if ctx.Err() != nil { // at once, not when stop catches up
			dropAll()
			return
		}
		full := busy.Add(1) > int64(n)
		late := full || due.Before(caughtUp)
		if !full {
			ticks <- due // a worker is free, or a moment from coming back for it
		} else {
			select {
			case ticks <- due:
				caughtUp = time.Now()
			case <-stop:
				dropAll()
				return
			}
		}
		if isMeasured {
			measured++
			if late {
				rec.Late()
			}
		}
		hits++
	}
}

// dueIn counts the arrivals from number hits on that are due in [from, to)
// (times since the start), at most limit of them.
func dueIn(p constantPacer, hits uint64, from, to time.Duration, limit uint64) uint64 {
	var n uint64
	for h := hits; n < limit; h++ {
		wait, stop := p.pace(to, h)
		if stop || wait >= 0 {
			break
		}
		if to+wait >= from {
			n++
		}
	}
	return n
}
