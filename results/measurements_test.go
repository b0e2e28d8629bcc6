package results

import (
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// recordOps records ops taking the given latencies in ms (all succeed after
// the given number of write attempts; conflicts are recorded as attempts).
type plannedOp struct {
	latencyMS int
	attempts  int // write attempts; all but the last are version conflicts
	outcome   metrics.Outcome
}

func record(r *metrics.Recorder, ops []plannedOp) {
	for i, p := range ops {
		intended := t0.Add(time.Duration(i) * time.Millisecond)
		sh := r.Stripe(i)
		for a := 1; a <= p.attempts; a++ {
			out := metrics.VersionConflict
			if a == p.attempts {
				out = p.outcome
			}
			sh.RecordAttempt(intended, metrics.Attempt{Kind: metrics.Read, Latency: time.Millisecond, Outcome: metrics.Success})
			sh.RecordAttempt(intended, metrics.Attempt{Kind: metrics.Write, Latency: 2 * time.Millisecond, Outcome: out})
		}
		sh.RecordOp(metrics.Op{
			Intended: intended, Start: intended, End: intended.Add(time.Duration(p.latencyMS) * time.Millisecond),
			Outcome: p.outcome, Attempts: p.attempts,
		})
	}
}

func TestSummarize(t *testing.T) {
	uniform := func(n int) []plannedOp {
		ops := make([]plannedOp, n)
		for i := range ops {
			ops[i] = plannedOp{latencyMS: i + 1, attempts: 1, outcome: metrics.Success}
		}
		return ops
	}
	tests := []struct {
		name    string
		ops     []plannedOp
		seconds float64
		checks  []Check
		check   func(t *testing.T, s Summary)
	}{
		{
			name: "percentiles of 1..1000 ms", ops: uniform(1000), seconds: 10,
			check: func(t *testing.T, s Summary) {
				within(t, "p50", s.Latency.P50, 500*time.Millisecond)
				within(t, "p90", s.Latency.P90, 900*time.Millisecond)
				within(t, "p99", s.Latency.P99, 990*time.Millisecond)
				within(t, "p99.9", s.Latency.P999, 999*time.Millisecond)
				within(t, "max", s.Latency.Max, 1000*time.Millisecond)
				within(t, "mean", s.Latency.Mean, 500500*time.Microsecond)
				if s.Throughput != 100 || s.WriteThroughput != 100 || s.SuccessRatio != 1 {
					t.Errorf("throughput %v, writes/s %v, success %v; want 100, 100, 1", s.Throughput, s.WriteThroughput, s.SuccessRatio)
				}
				if s.RawLatency != nil {
					t.Errorf("closed loop has raw latency %+v", s.RawLatency)
				}
			},
		},
		{
			name: "conflicts and attempts", seconds: 2,
			ops: []plannedOp{
				{10, 1, metrics.Success}, {10, 1, metrics.Success}, {10, 2, metrics.Success},
				{10, 3, metrics.Success}, {10, 5, metrics.VersionConflict},
			},
			check: func(t *testing.T, s Summary) {
				// 12 write attempts, 4 successes, 8 conflicts (7 retried + 1 final).
				if s.WriteAttempts != 12 || s.Writes != 4 || s.Conflicts != 8 {
					t.Errorf("write attempts %d, writes %d, conflicts %d; want 12, 4, 8", s.WriteAttempts, s.Writes, s.Conflicts)
				}
				if s.ConflictRate != 8.0/12 {
					t.Errorf("conflict rate %v, want %v", s.ConflictRate, 8.0/12)
				}
				if s.AttemptsP50 != 2 || s.AttemptsP99 != 5 || s.AttemptsMax != 5 {
					t.Errorf("attempts p50/p99/max %d/%d/%d, want 2/5/5", s.AttemptsP50, s.AttemptsP99, s.AttemptsMax)
				}
				if s.SuccessRatio != 0.8 || s.WriteThroughput != 2 || s.Throughput != 2.5 {
					t.Errorf("success %v, writes/s %v, ops/s %v; want 0.8, 2, 2.5", s.SuccessRatio, s.WriteThroughput, s.Throughput)
				}
			},
		},
		{
			name: "lost updates add up over checks", ops: uniform(3), seconds: 1,
			checks: []Check{{Name: "counter a", Lost: 3}, {Name: "counter b", Passed: true}, {Name: "counter c", Lost: 4}},
			check: func(t *testing.T, s Summary) {
				if s.LostUpdates == nil || *s.LostUpdates != 7 {
					t.Errorf("lost updates %v, want 7", s.LostUpdates)
				}
			},
		},
		{
			name: "nothing ran", seconds: 0,
			check: func(t *testing.T, s Summary) {
				if s.Throughput != 0 || s.SuccessRatio != 0 || s.AttemptsMax != 0 || s.Latency != (Latency{}) {
					t.Errorf("empty run summary not zero: %+v", s)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := metrics.NewRecorder(t0, 2, false)
			record(r, tc.ops)
			m := FromSnapshot(r.Snapshot(t0.Add(time.Duration(tc.seconds*float64(time.Second)))), ClientStats{})
			s, err := Summarize(m, tc.seconds, tc.checks)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

func TestSummarizeErrors(t *testing.T) {
	good := FromSnapshot(metrics.NewRecorder(t0, 1, false).Snapshot(t0.Add(time.Second)), ClientStats{})
	damaged := good
	damaged.Histograms = map[string]string{HistOp: "not-a-histogram"}
	for _, tc := range []struct {
		name    string
		m       Measurements
		seconds float64
	}{
		{"negative duration", good, -1},
		{"damaged histogram", damaged, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Summarize(tc.m, tc.seconds, nil); err == nil {
				t.Fatal("Summarize accepted it")
			}
		})
	}
}

func TestFromSnapshotOpenLoopKeepsRaw(t *testing.T) {
	r := metrics.NewRecorder(t0, 1, true)
	// Scheduled at t0, started 90 ms late, took 10 ms: corrected 100 ms, raw 10 ms.
	r.Stripe(0).RecordOp(metrics.Op{Intended: t0, Start: t0.Add(90 * time.Millisecond), End: t0.Add(100 * time.Millisecond), Attempts: 1})
	s, err := Summarize(FromSnapshot(r.Snapshot(t0.Add(time.Second)), ClientStats{}), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.RawLatency == nil {
		t.Fatal("open loop lost its raw latency")
	}
	within(t, "corrected p50", s.Latency.P50, 100*time.Millisecond)
	within(t, "raw p50", s.RawLatency.P50, 10*time.Millisecond)
}

// within checks got against want to the histogram's 3 significant digits.
func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	diff := got - want
	if diff < 0 {
		diff = -diff
	}
	if float64(diff) > float64(want)*0.001+float64(time.Microsecond) {
		t.Errorf("%s = %v, want %v (±0.1%%)", what, got, want)
	}
}
