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
			time.Sleep(d)
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
	for _, warmup := range []time.Duration{0, 30 * time.Millisecond} {
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
	took := time.Since(start)
	if took > time.Second {
		t.Errorf("closed loop took %v, want about 150ms", took)
	}
	for _, at := range c.intended {
		if !at.Before(p.deadline) {
			t.Fatalf("an operation was started %v after the deadline", at.Sub(p.deadline))
		}
	}
	if n := len(c.intended); n < 5 || n > 50 {
		t.Errorf("ran %d operations of 10ms with 3 writers in 150ms, want about 45", n)
	}
}

func TestClosedLoopThinkTime(t *testing.T) {
	var c calls
	start := time.Now()
	p := plan{start: start, measureFrom: start, deadline: start.Add(200 * time.Millisecond), thinkTime: 40 * time.Millisecond}
	closedLoop(context.Background(), p, 1, c.op(0))
	if n := len(c.intended); n < 2 || n > 6 {
		t.Errorf("ran %d operations in 200ms with 40ms think time, want about 5", n)
	}
}

// Ctrl-C stops new operations but lets the one in flight finish.
func TestClosedLoopCancelFinishesInFlight(t *testing.T) {
	var c calls
	var finished atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	p := plan{start: start, measureFrom: start}
	go func() {
		time.Sleep(30 * time.Millisecond)
		cancel()
	}()
	closedLoop(ctx, p, 2, func(w int, intended time.Time) {
		c.op(0)(w, intended)
		time.Sleep(100 * time.Millisecond)
		finished.Add(1)
	})
	if got := finished.Load(); got != int64(len(c.intended)) {
		t.Errorf("%d operations started but %d finished: in-flight operations were abandoned", len(c.intended), got)
	}
	if len(c.intended) != 2 {
		t.Errorf("ran %d operations, want one per writer before the cancel", len(c.intended))
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
	if started < 2 || started > 7 {
		t.Errorf("one worker with 50ms operations started %d in 300ms, want about 6", started)
	}
	if a.late.Load() < started-1 {
		t.Errorf("late = %d of %d started, want every one after the first", a.late.Load(), started)
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

func TestOpenLoopCancelDropsTheBacklog(t *testing.T) {
	var c calls
	var a counts
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	p := plan{start: start, measureFrom: start}
	cancelled := make(chan time.Duration, 1)
	go func() {
		time.Sleep(105 * time.Millisecond)
		cancelled <- time.Since(start)
		cancel()
	}()
	openLoop(ctx, p, 1, constantPacer{rate: 100}, &a, c.op(200*time.Millisecond))
	// One started at 0; the arrivals due every 10ms from 10ms until the
	// cancel waited and never started.
	if len(c.intended) != 1 {
		t.Errorf("started %d, want 1", len(c.intended))
	}
	at := <-cancelled
	want := int64((at+10*time.Millisecond-1)/(10*time.Millisecond)) - 1
	if got := a.dropped.Load(); got < want || got > want+3 {
		t.Errorf("dropped = %d, want the %d arrivals due before the cancel at %v", got, want, at)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("open loop returned after %v, before the in-flight operation ended", took)
	}
}
