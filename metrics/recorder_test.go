package metrics

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func op(intended time.Time, lat time.Duration, out Outcome, attempts int) Op {
	return Op{Intended: intended, Start: intended, End: intended.Add(lat), Outcome: out, Attempts: attempts}
}

func TestRecorder(t *testing.T) {
	tests := []struct {
		name  string
		run   func(r *Recorder)
		check func(t *testing.T, s Snapshot)
	}{
		{"warm-up is kept out of every figure", func(r *Recorder) {
			r.MeasureFrom(t0.Add(time.Second))
			sh := r.Stripe(0)
			sh.RecordAttempt(t0, Attempt{Kind: Write, Latency: time.Millisecond, Outcome: VersionConflict})
			sh.RecordOp(op(t0, time.Hour, VersionConflict, 1))
			sh.RecordAttempt(t0.Add(time.Second), Attempt{Kind: Write, Latency: time.Millisecond})
			sh.RecordOp(op(t0.Add(time.Second), 5*time.Millisecond, Success, 1))
		}, func(t *testing.T, s Snapshot) {
			if s.Ops != 1 || s.WarmupOps != 1 || s.Outcomes[VersionConflict] != 0 || s.AttemptOutcomes[Write][VersionConflict] != 0 {
				t.Errorf("ops %d, warm-up %d, conflicts %d/%d; want 1, 1, 0/0", s.Ops, s.WarmupOps, s.Outcomes[VersionConflict], s.AttemptOutcomes[Write][VersionConflict])
			}
			if s.Op.Max() > int64(10*time.Millisecond/time.Microsecond) {
				t.Errorf("warm-up latency leaked into the histogram: max %dµs", s.Op.Max())
			}
		}},
		{"attempts distribution and give-ups", func(r *Recorder) {
			for i, n := range []int{1, 1, 2, 5, 0} {
				o := op(t0, time.Millisecond, Success, n)
				o.GaveUp = n == 5
				r.Stripe(i).RecordOp(o)
			}
		}, func(t *testing.T, s Snapshot) {
			want := []int64{1, 2, 1, 0, 0, 1}
			if fmt.Sprint(s.Attempts) != fmt.Sprint(want) || s.GaveUp != 1 {
				t.Errorf("attempts %v, gave up %d; want %v, 1", s.Attempts, s.GaveUp, want)
			}
		}},
		{"bad input does not panic the hot path", func(r *Recorder) {
			r.Stripe(0).RecordOp(op(t0, time.Millisecond, Outcome(200), -3))
			r.Stripe(0).RecordAttempt(t0, Attempt{Kind: AttemptKind(9), Outcome: Outcome(99)})
		}, func(t *testing.T, s Snapshot) {
			if s.Outcomes[Other] != 1 || s.Attempts[0] != 1 || s.AttemptOutcomes[Write][Other] != 1 {
				t.Errorf("outcomes %v, attempts %v, write attempts %v", s.Outcomes, s.Attempts, s.AttemptOutcomes[Write])
			}
		}},
		{"latency above an hour is clamped and counted", func(r *Recorder) {
			r.Stripe(0).RecordOp(op(t0, 2*time.Hour, Timeout, 1))
		}, func(t *testing.T, s Snapshot) {
			if s.Clamped != 1 || s.Op.TotalCount() != 1 {
				t.Errorf("clamped %d, recorded %d; want 1, 1", s.Clamped, s.Op.TotalCount())
			}
		}},
		{"a few distinct other errors are kept", func(r *Recorder) {
			for i := range 20 {
				o := op(t0, time.Millisecond, Other, 1)
				o.Err = fmt.Errorf("error %d", i%7)
				r.Stripe(i).RecordOp(o)
			}
		}, func(t *testing.T, s Snapshot) {
			if len(s.Errors) != MaxErrors {
				t.Errorf("kept %d errors %q, want %d distinct", len(s.Errors), s.Errors, MaxErrors)
			}
			seen := map[string]bool{}
			for _, e := range s.Errors {
				if seen[e] {
					t.Errorf("error %q kept twice", e)
				}
				seen[e] = true
			}
		}},
		{"series: one point per tick with spans, writes and interval percentiles", func(r *Recorder) {
			sh := r.Stripe(0)
			for i := range 100 {
				at := t0.Add(time.Duration(i) * 5 * time.Millisecond)
				sh.RecordAttempt(at, Attempt{Kind: Write, Latency: time.Millisecond, Outcome: VersionConflict})
				sh.RecordAttempt(at, Attempt{Kind: Write, Latency: time.Millisecond})
				sh.RecordOp(op(at, time.Duration(i+1)*time.Millisecond, Success, 2))
			}
			r.Tick(t0.Add(time.Second))
			r.Tick(t0.Add(2 * time.Second))
		}, func(t *testing.T, s Snapshot) {
			if len(s.Series) != 3 { // two ticks and the closing one
				t.Fatalf("%d series points, want 3: %+v", len(s.Series), s.Series)
			}
			p := s.Series[0]
			if p.Ops != 100 || p.Span != time.Second || p.Writes["conflict"] != 100 || p.Writes["success"] != 100 {
				t.Errorf("first point %+v", p)
			}
			if p.P50 < 49*time.Millisecond || p.P50 > 51*time.Millisecond || p.P99 < 98*time.Millisecond || p.P99 > 100*time.Millisecond {
				t.Errorf("interval p50 %v, p99 %v; want about 50ms and 99ms", p.P50, p.P99)
			}
			h, err := DecodeHistogram(p.Histogram)
			if err != nil || h.TotalCount() != 100 {
				t.Errorf("interval histogram holds %v ops (%v), want 100", h, err)
			}
			if s.Series[1].Ops != 0 || s.Series[1].Histogram != "" || s.Series[2].At != 2500*time.Millisecond {
				t.Errorf("later points %+v", s.Series[1:])
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecorder(t0, 3, false)
			tc.run(r)
			tc.check(t, r.Snapshot(t0.Add(2500*time.Millisecond)))
		})
	}
}

// MeasureFrom starts the measured window: operations due before it are
// warm-up, Stripe.Measured says so to scenarios that keep figures of their
// own, and the per-second series counts from it.
func TestMeasureFrom(t *testing.T) {
	r := NewRecorder(t0, 2, false)
	from := t0.Add(10 * time.Second) // the warm-up ended late: Setup took time
	r.MeasureFrom(from)
	sh := r.Stripe(1)
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{{t0, false}, {from.Add(-time.Nanosecond), false}, {from, true}, {from.Add(time.Hour), true}} {
		if got := sh.Measured(tc.at); got != tc.want {
			t.Errorf("Measured(%v after the start) = %v, want %v", tc.at.Sub(t0), got, tc.want)
		}
	}
	// A warm-up operation that ends inside the window is left out, of the
	// series too.
	sh.RecordAttempt(from.Add(-time.Second), Attempt{Kind: Write, Latency: time.Millisecond, Outcome: VersionConflict})
	sh.RecordOp(op(from.Add(-time.Second), 1500*time.Millisecond, VersionConflict, 1))
	sh.RecordAttempt(from.Add(100*time.Millisecond), Attempt{Kind: Write, Latency: time.Millisecond})
	sh.RecordOp(op(from.Add(100*time.Millisecond), 5*time.Millisecond, Success, 1))
	r.Tick(from.Add(time.Second))
	s := r.Snapshot(from.Add(1500 * time.Millisecond))
	if !s.Start.Equal(from) || s.Ops != 1 || s.WarmupOps != 1 {
		t.Errorf("start %v after t0, ops %d, warm-up %d; want 10s, 1, 1", s.Start.Sub(t0), s.Ops, s.WarmupOps)
	}
	if len(s.Series) != 2 {
		t.Fatalf("%d series points, want 2 (a tick and the closing one): %+v", len(s.Series), s.Series)
	}
	first, last := s.Series[0], s.Series[1]
	if first.At != time.Second || first.Span != time.Second || first.Ops != 1 || first.Writes["success"] != 1 || first.Writes["conflict"] != 0 {
		t.Errorf("first point %+v: want 1s into the window, 1s long, the measured op and its write only", first)
	}
	if last.At != 1500*time.Millisecond || last.Span != 500*time.Millisecond || last.Ops != 0 {
		t.Errorf("closing point %+v: want at 1.5s, 0.5s long, empty", last)
	}
}

// Writers record while the progress display ticks; nothing is lost and the
// race detector stays quiet.
func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder(t0, 4, true)
	const writers, perWriter = 16, 500
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var ticks sync.WaitGroup
	ticks.Add(1)
	go func() {
		defer ticks.Done()
		now := t0
		for {
			select {
			case <-stop:
				return
			default:
				now = now.Add(time.Millisecond)
				r.Tick(now)
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh := r.Stripe(w)
			for i := range perWriter {
				sh.RecordAttempt(t0, Attempt{Kind: Write, Latency: time.Millisecond})
				o := op(t0, time.Duration(i)*time.Microsecond, Success, 1)
				if i%50 == 0 {
					o.Outcome, o.Err = Other, errors.New("boom")
				}
				sh.RecordOp(o)
			}
		}()
	}
	wg.Wait()
	close(stop)
	ticks.Wait()
	s := r.Snapshot(t0.Add(time.Hour))
	var fromSeries int64
	for i, p := range s.Series {
		fromSeries += p.Ops
		if i > 0 && p.At < s.Series[i-1].At {
			t.Fatalf("series out of order at %d: %v after %v", i, p.At, s.Series[i-1].At)
		}
	}
	if s.Ops != writers*perWriter || fromSeries != s.Ops || s.Op.TotalCount() != s.Ops || s.OpRaw.TotalCount() != s.Ops {
		t.Errorf("ops %d, in series %d, in histogram %d/%d; want %d everywhere", s.Ops, fromSeries, s.Op.TotalCount(), s.OpRaw.TotalCount(), writers*perWriter)
	}
}

func TestDefaultStripes(t *testing.T) {
	cpus := runtime.GOMAXPROCS(0)
	for _, tc := range []struct{ writers, want int }{{0, 1}, {1, 1}, {2, min(2, 4*cpus)}, {1000, min(4*cpus, MaxStripes)}} {
		if got := DefaultStripes(tc.writers); got != tc.want {
			t.Errorf("DefaultStripes(%d) = %d, want %d", tc.writers, got, tc.want)
		}
	}
}

// On a machine with many CPUs, 1,000 writers still cost tens of MB, not
// hundreds: the stripe count is capped.
func TestRecorderMemoryOnManyCPUs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(64))
	stripes := DefaultStripes(1000)
	heap := heapOf(func() any { return NewRecorder(t0, stripes, true) })
	t.Logf("1000 writers with 64 CPUs: %d stripes, %.1f MB", stripes, float64(heap)/1e6)
	if heap > 64<<20 {
		t.Errorf("1000 writers on 64 CPUs cost %.1f MB in %d stripes, want under 64 MB", float64(heap)/1e6, stripes)
	}
}

// heapOf returns the live heap that build's result keeps.
func heapOf(build func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// simulateRun records a closed-loop run of the given writers and length
// (about 100 ops per writer-second with varied latency), ticking every
// simulated second, and returns the recorder.
func simulateRun(writers int, seconds int) *Recorder {
	r := NewRecorder(t0, DefaultStripes(writers), false)
	opsPerSecond := max(100*writers, 1)
	for s := range seconds {
		for i := range min(opsPerSecond, 20000) {
			at := t0.Add(time.Duration(s)*time.Second + time.Duration(i)*time.Microsecond)
			sh := r.Stripe(i % writers)
			sh.RecordAttempt(at, Attempt{Kind: Read, Latency: time.Duration(200+i%800) * time.Microsecond})
			sh.RecordAttempt(at, Attempt{Kind: Write, Latency: time.Duration(500+i%3000) * time.Microsecond, Outcome: Outcome(i % 3 % 2)})
			sh.RecordOp(op(at, time.Duration(700+(i*7919)%50000)*time.Microsecond, Success, 1+i%3))
		}
		r.Tick(t0.Add(time.Duration(s+1) * time.Second))
	}
	return r
}

// The recorder's memory is flat in run length (apart from one series point
// of a few hundred bytes a second) and bounded by stripes, not writers.
func TestRecorderMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measures memory; skipped with -short")
	}
	short := heapOf(func() any { return simulateRun(8, 10) })
	long := heapOf(func() any { return simulateRun(8, 60) })
	many := heapOf(func() any { return simulateRun(1000, 10) })
	perSecond := (float64(long) - float64(short)) / 50
	t.Logf("recorder heap: 8 writers 10 s %.1f MB, 60 s %.1f MB (%.0f B per extra second); 1000 writers 10 s %.1f MB (%d stripes)",
		float64(short)/1e6, float64(long)/1e6, perSecond, float64(many)/1e6, DefaultStripes(1000))
	if perSecond > 4096 {
		t.Errorf("recorder grows %.0f B per second of run, want a few hundred (one series point)", perSecond)
	}
	if limit := uint64(DefaultStripes(1000)) * 2 << 20; many > limit {
		t.Errorf("1000 writers cost %.1f MB, want under %.1f MB (2 MB per stripe)", float64(many)/1e6, float64(limit)/1e6)
	}
}

func BenchmarkRecordOp(b *testing.B) {
	r := NewRecorder(t0, 1, false)
	sh := r.Stripe(0)
	o := op(t0, 3*time.Millisecond, Success, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		o.End = o.Intended.Add(time.Duration(500+i%20000) * time.Microsecond)
		sh.RecordOp(o)
	}
}

func BenchmarkRecordAttempt(b *testing.B) {
	r := NewRecorder(t0, 1, false)
	sh := r.Stripe(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sh.RecordAttempt(t0, Attempt{Kind: Write, Latency: time.Duration(500+i%20000) * time.Microsecond})
	}
}

// Parallel writers, each on its own stripe as the engine assigns them (with
// DefaultStripes, writers beyond four per CPU share stripes).
func BenchmarkRecordOpParallel(b *testing.B) {
	r := NewRecorder(t0, DefaultStripes(64), false)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		sh := r.Stripe(int(next.Add(1)))
		o := op(t0, 3*time.Millisecond, Success, 1)
		i := 0
		for pb.Next() {
			i++
			o.End = o.Intended.Add(time.Duration(500+i%20000) * time.Microsecond)
			sh.RecordAttempt(o.Intended, Attempt{Kind: Write, Latency: time.Millisecond})
			sh.RecordOp(o)
		}
	})
}

// Parallel writers all on one stripe: the worst case of shared stripes.
func BenchmarkRecordOpOneShardContended(b *testing.B) {
	r := NewRecorder(t0, 1, false)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		sh := r.Stripe(0)
		o := op(t0, 3*time.Millisecond, Success, 1)
		for pb.Next() {
			sh.RecordOp(o)
		}
	})
}

// Tick runs once a second off the hot path; this is its cost per stripe set.
func BenchmarkTick(b *testing.B) {
	r := simulateRun(64, 1)
	now := t0.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		r.Stripe(0).RecordOp(op(now, time.Millisecond, Success, 1))
		r.Tick(now)
	}
}
