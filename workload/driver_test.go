package workload

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// calls records the operations a loop ran.
type calls struct {
	mu       sync.Mutex
	intended []time.Time
	workers  map[int]int
}

func (c *calls) op(d time.Duration) opFunc {
	return func(w int, intended time.Time) {
		c.mu.Lock()
		c.intended = append(c.intended, intended)
		if c.workers == nil {
			c.workers = map[int]int{}
		}
		c.workers[w]++
		c.mu.Unlock()
		if d > 0 {
			time.Sleep(d) // the operation's own duration, not a wait for an event
		}
	}
}

func (c *calls) count(from time.Time) (n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.intended {
		if !t.Before(from) {
			n++
		}
	}
	return n
}

type counts struct{ late, dropped atomic.Int64 }

func (c *counts) Late()    { c.late.Add(1) }
func (c *counts) Dropped() { c.dropped.Add(1) }

func TestClosedLoopRunsExactlyTheOperations(t *testing.T) {
	// The writers start at once, so they run warm-up operations unless the
	// machine runs none of them for the whole warm-up: it is long beside
	// a scheduler's delay even on a loaded machine.
	for _, warmup := range []time.Duration{0, 200 * time.Millisecond} {
		t.Run("warmup "+warmup.String(), func(t *testing.T) {
			var c calls
			start := time.Now()
			p := plan{start: start, measureFrom: start.Add(warmup), operations: 50}
			closedLoop(context.Background(), p, 4, c.op(500*time.Microsecond))
			if got := c.count(p.measureFrom); got != 50 {
				t.Errorf("ran %d measured operations, want exactly 50", got)
			}
			if warmup > 0 && c.count(start) == c.count(p.measureFrom) {
				t.Errorf("no warm-up operations ran before the measured ones")
			}
			if len(c.workers) != 4 {
				t.Errorf("%d writers ran operations, want 4", len(c.workers))
			}
		})
	}
}

func TestClosedLoopStopsAtDeadline(t *testing.T) {
	var c calls
	start := time.Now()
	p := plan{start: start, measureFrom: start, deadline: start.Add(150 * time.Millisecond)}
	closedLoop(context.Background(), p, 3, c.op(10*time.Millisecond))
	if len(c.intended) == 0 {
		t.Fatal("no operation ran before the deadline")
	}
	for _, at := range c.intended {
		if !at.Before(p.deadline) {
			t.Fatalf("an operation was started %v after the deadline", at.Sub(p.deadline))
		}
	}
}

// A writer pauses thinkTime between its operations: every gap between
// one operation's end and the next one's start is at least that long.
func TestClosedLoopThinkTime(t *testing.T) {
	const think = 20 * time.Millisecond
	var ends, starts []time.Time
	start := time.Now()
	p := plan{start: start, measureFrom: start, operations: 4, thinkTime: think}
	closedLoop(context.Background(), p, 1, func(_ int, intended time.Time) {
		starts = append(starts, intended)
		ends = append(ends, time.Now())
	})
	if len(starts) != 4 {
		t.Fatalf("ran %d operations, want 4", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(ends[i-1]); gap < think {
			t.Errorf("operation %d started %v after the previous one ended, want at least the think time %v", i, gap, think)
		}
	}
}

// Ctrl-C stops new operations but lets the one in flight finish.
func TestClosedLoopCancelFinishesInFlight(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started, finished atomic.Int64
	start := time.Now()
	p := plan{start: start, measureFrom: start}
	closedLoop(ctx, p, 2, func(int, time.Time) {
		if started.Add(1) == 2 {
			cancel() // both writers are in flight: Ctrl-C now
		}
		<-ctx.Done() // still in flight when the cancel comes
		finished.Add(1)
	})
	if started.Load() != 2 || finished.Load() != 2 {
		t.Errorf("%d operations started and %d finished, want both writers' one each, none abandoned", started.Load(), finished.Load())
	}
}

func TestOpenLoopKeepsTheSchedule(t *testing.T) {
	var c calls
	var a counts
	start := time.Now()
	p := plan{start: start, measureFrom: start, deadline: start.Add(500 * time.Millisecond)}
	openLoop(context.Background(), p, 4, constantPacer{rate: 20}, &a, c.op(0))
	// Due at 0, 50ms, ..., 450ms: 10 arrivals, each carrying its schedule.
	if len(c.intended) != 10 {
		t.Fatalf("ran %d operations at 20/s over 500ms, want 10", len(c.intended))
	}
	seen := map[time.Duration]bool{}
	for _, at := range c.intended {
		off := at.Sub(start)
		if off%(50*time.Millisecond) != 0 {
			t.Fatalf("an operation was due at %v, off the 50ms schedule", off)
		}
		seen[off] = true
	}
	if len(seen) != 10 {
		t.Errorf("%d distinct due times, want 10", len(seen))
	}
	if a.late.Load() != 0 || a.dropped.Load() != 0 {
		t.Errorf("late=%d dropped=%d with idle workers, want 0", a.late.Load(), a.dropped.Load())
	}
}

// With every worker busy, arrivals wait (late) and those still waiting at the
// end are dropped: none vanish.
func TestOpenLoopCountsLateAndDropped(t *testing.T) {
	var c calls
	var a counts
	start := time.Now()
	p := plan{start: start, measureFrom: start, deadline: start.Add(300 * time.Millisecond)}
	openLoop(context.Background(), p, 1, constantPacer{rate: 100}, &a, c.op(50*time.Millisecond))
	started := int64(len(c.intended))
	const due = 30 // at 0, 10ms, ..., 290ms
	if started+a.dropped.Load() != due {
		t.Errorf("started %d + dropped %d = %d, want all %d due arrivals accounted for", started, a.dropped.Load(), started+a.dropped.Load(), due)
	}
	if started < 1 || started >= due {
		t.Errorf("one worker with 50ms operations started %d of %d arrivals due every 10ms, want some but not all", started, due)
	}
	// The worker is busy at most due times, so arrivals are counted late;
	// not necessarily every one after the first: on a loaded machine the
	// dispatcher itself can wake after the worker is free again, and an
	// arrival that finds a free worker is not late (its latency still
	// counts from its schedule, asserted below).
	if late := a.late.Load(); late < 1 || late > started {
		t.Errorf("late = %d of %d started, want at least one and at most all", late, started)
	}
	for i, at := range c.intended {
		if want := start.Add(time.Duration(i) * 10 * time.Millisecond); !at.Equal(want) {
			t.Errorf("operation %d due at %v, want its schedule %v (latency is measured from the schedule)", i, at.Sub(start), want.Sub(start))
		}
	}
}

func TestOpenLoopOperationsBound(t *testing.T) {
	var c calls
	var a counts
	start := time.Now()
	p := plan{start: start, measureFrom: start.Add(20 * time.Millisecond), operations: 25}
	openLoop(context.Background(), p, 2, constantPacer{rate: 1000}, &a, c.op(0))
	if got := c.count(p.measureFrom); got != 25 {
		t.Errorf("ran %d measured operations, want exactly 25", got)
	}
	if got := c.count(start) - c.count(p.measureFrom); got != 20 {
		t.Errorf("ran %d warm-up operations in 20ms at 1000/s, want 20", got)
	}
}

// Ctrl-C while every worker is busy: the arrivals that fell due meanwhile
// are dropped, none vanish, and the operation in flight finishes.
func TestOpenLoopCancelDropsTheBacklog(t *testing.T) {
	var a counts
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	p := plan{start: start, measureFrom: start}
	var started, finished atomic.Int64
	openLoop(ctx, p, 1, constantPacer{rate: 100}, &a, func(int, time.Time) {
		started.Add(1)
		// Busy until ten more arrivals (every 10ms) have fallen due,
		// then Ctrl-C, and still in flight when it comes. The sleep
		// shapes the scenario; what is asserted is bounded by the times
		// measured, so a slow machine changes nothing.
		for time.Since(start) < 105*time.Millisecond {
			time.Sleep(time.Millisecond)
		}
		cancel()
		finished.Add(1)
	})
	returned := time.Since(start)
	if started.Load() != 1 || finished.Load() != 1 {
		t.Errorf("%d operations started, %d finished; want the one in flight, finished", started.Load(), finished.Load())
	}
	// Due at 10ms, 20ms, ... up to the cancel (at 105ms or later), and no
	// more than were due when openLoop returned.
	if got, most := a.dropped.Load(), int64(returned/(10*time.Millisecond)); got < 10 || got > most {
		t.Errorf("dropped = %d, want the arrivals due from 10ms until the cancel: at least 10, at most %d", got, most)
	}
}
