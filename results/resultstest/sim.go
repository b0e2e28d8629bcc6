package resultstest

// The simulated run: deterministic figures fed through the real recorder.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// Op is one operation of a simulated run: what a writer would hand the
// recorder. The tests feed these through the real Recorder, so every figure
// they check was computed by the code a run uses.
type Op struct {
	Writer                int
	intended, start, end  time.Time
	writes                []metrics.Outcome // outcome of each write attempt
	reads                 int
	outcome               metrics.Outcome
	backoff               time.Duration
	gaveUp                bool
	err                   error
	readLatency, writeLat time.Duration
}

// simulate generates a deterministic run of writers doing read-modify-write
// with retries against a contended object for the given seconds.
func simulate(seed uint64, writers int, seconds int, openLoop bool) []Op {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	end := Start().Add(time.Duration(seconds) * time.Second)
	var ops []Op
	for w := range writers {
		at := Start().Add(time.Duration(rng.IntN(2000)) * time.Microsecond)
		for at.Before(end) {
			op := Op{Writer: w, intended: at, start: at}
			if openLoop && rng.IntN(10) == 0 {
				op.start = at.Add(time.Duration(rng.IntN(50_000)) * time.Microsecond)
			}
			op.readLatency = time.Duration(300+rng.IntN(700)) * time.Microsecond
			op.writeLat = time.Duration(800+rng.IntN(4000)) * time.Microsecond
			lat := time.Duration(0)
			for attempt := 1; ; attempt++ {
				op.reads++
				lat += op.readLatency + op.writeLat
				r := rng.IntN(100)
				switch {
				case r < 30 && attempt < 5:
					op.writes = append(op.writes, metrics.VersionConflict)
					b := time.Duration(10+rng.IntN(3)) * time.Millisecond
					op.backoff += b
					lat += b
					continue
				case r < 30:
					op.writes = append(op.writes, metrics.VersionConflict)
					op.outcome, op.gaveUp = metrics.VersionConflict, true
				case r < 32:
					op.writes = append(op.writes, metrics.FieldManagerConflict)
					op.outcome = metrics.FieldManagerConflict
				case r < 33:
					op.writes = append(op.writes, metrics.Timeout)
					op.outcome = metrics.Timeout
					lat += time.Second
				case r < 34:
					op.writes = append(op.writes, metrics.Other)
					op.outcome = metrics.Other
					op.err = errors.New([]string{"connection reset by peer", "unexpected EOF"}[rng.IntN(2)])
				default:
					op.writes = append(op.writes, metrics.Success)
					op.outcome = metrics.Success
				}
				break
			}
			op.end = op.start.Add(lat)
			ops = append(ops, op)
			at = op.end
			if openLoop {
				at = op.intended.Add(8 * time.Millisecond)
			}
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].end.Before(ops[j].end) })
	return ops
}

// feed records ops (those keep accepts) into r in the order they end,
// ticking every whole second after from as the engine does, and snapshots
// at stop.
func feed(r *metrics.Recorder, ops []Op, keep func(Op) bool, from, stop time.Time) metrics.Snapshot {
	next := from.Add(time.Second)
	for _, op := range ops {
		for !op.end.Before(next) && !next.After(stop) {
			r.Tick(next)
			next = next.Add(time.Second)
		}
		if op.end.After(stop) {
			break
		}
		if !keep(op) {
			continue
		}
		sh := r.Stripe(op.Writer)
		for i, out := range op.writes {
			if i < op.reads {
				sh.RecordAttempt(op.intended, metrics.Attempt{Kind: metrics.Read, Latency: op.readLatency, Outcome: metrics.Success})
			}
			sh.RecordAttempt(op.intended, metrics.Attempt{Kind: metrics.Write, Latency: op.writeLat, Outcome: out})
		}
		sh.RecordOp(metrics.Op{
			Intended: op.intended, Start: op.start, End: op.end, Outcome: op.outcome, Err: op.err,
			Attempts: len(op.writes), Backoff: op.backoff, GaveUp: op.gaveUp,
		})
	}
	for !next.After(stop) {
		r.Tick(next)
		next = next.Add(time.Second)
	}
	return r.Snapshot(stop.Add(250 * time.Millisecond))
}

// counterTraits are the counter scenario's: it has write strategies and
// the engine's driver runs it.
var counterTraits = spec.Traits{Strategies: true, Driven: true}

// simSpec is the spec the simulated runs claim to have run, its settings
// as plain JSON values, as the engine stores them.
func simSpec(openLoop bool) spec.Spec {
	s := spec.Spec{
		Scenario: "counter", Writers: 6, Strategy: spec.StrategyRetry, Warmup: spec.D(time.Second), Duration: spec.D(4 * time.Second),
		Settings: map[string]any{"objects": float64(1), "distribution": "uniform", "fields": "shared"},
	}
	if openLoop {
		s.Strategy, s.Rate = spec.StrategySSA, 750
	}
	s.Defaults(counterTraits)
	return s
}

// What is how the counter scenario describes the simulated runs.
const What = "6 writers on 1 object, shared fields"

// Simulated builds the Result of a simulated run of the counter scenario
// (a closed loop of retries, or an open loop of apply), recording only the
// ops keep accepts. Every figure is computed by the code a run uses.
func Simulated(t testing.TB, openLoop bool, keep func(Op) bool, checks []results.Check) *results.Result {
	t.Helper()
	sp := simSpec(openLoop)
	rec := metrics.NewRecorder(Start(), 3, openLoop)
	measureFrom := Start().Add(sp.Warmup.Duration)
	rec.MeasureFrom(measureFrom)
	stop := measureFrom.Add(sp.Duration.Duration)
	ops := simulate(42, sp.Writers, 5, openLoop)
	if openLoop {
		// Two arrivals found no free slot (one for writer 0, one for
		// writer 1); writer 1's next one started late.
		if keep(Op{Writer: 0}) {
			rec.Dropped()
		}
		if keep(Op{Writer: 1}) {
			rec.Dropped()
			rec.Late()
		}
	}
	snap := feed(rec, ops, keep, measureFrom, stop)
	ended := stop.Add(250 * time.Millisecond)
	r := &results.Result{
		APIVersion: results.APIVersion, Kind: results.KindResult,
		RunID: "20260301-120000-abc123", Version: "v0.1.0-test",
		Started: measureFrom, Ended: ended,
		Target: spec.TargetInfo{Kind: spec.TargetLocal, Server: "https://127.0.0.1:42017", ServerVersion: "v1.37.1",
			Storage: spec.StorageDisk, EtcdVersion: "v3.6.16"},
		Spec:         sp,
		Namespace:    "kb-bench-20260301-120000-abc123",
		Measurements: results.FromSnapshot(snap, results.ClientStats{Retries: 3, RateLimiterWait: 120 * time.Millisecond, RateLimited: 4}),
		Series:       snap.Series,
		Checks:       checks,
	}
	var err error
	if r.Summary, err = results.Summarize(r.Measurements, ended.Sub(measureFrom).Seconds(), checks); err != nil {
		t.Fatal(err)
	}
	return r
}

// All keeps every op.
func All(Op) bool { return true }

// Start is the instant the simulated runs start (their warm-up).
func Start() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

// Sample is a minimal complete result of the counter workload of the
// given throughput and p99 (in ms), 100000 operations, its server
// cross-check matched and its one check passed; the rest zero.
func Sample(throughput float64, p99ms int64) *results.Result {
	r := &results.Result{Workload: "counter: 8 writers on 1 object"}
	r.Summary.Ops = 100_000
	r.Summary.Throughput = throughput
	r.Summary.Latency.P99 = time.Duration(p99ms) * time.Millisecond
	r.Server = &results.ServerCheck{Available: true, Match: true}
	r.Checks = []results.Check{{Name: "counter kb-bench-0", Passed: true}}
	r.Summary.LostUpdates = results.LostUpdatesOf(r.Checks)
	return r
}

// Sweep is a writers sweep of two series: update, whose throughput
// follows a USL curve and whose p99 passes the SLO at 128 writers, and
// retry, whose retries give up from 64 writers and which a stop condition
// ended there. It is not analysed yet (see analysis.Analyze).
func Sweep() *results.Sweep {
	model := results.USL{Lambda: 180, Sigma: 0.05, Kappa: 0.002}
	sw := &results.Sweep{RunID: "sweep-1", Workload: "counter: 1 ConfigMap, closed loop, 10s", Axis: "writers", SLO: time.Second, StopAt: []string{"p99 > 5s"}}
	var update, retry results.SweepSeries
	update.Label, retry.Label = "strategy=update", "strategy=retry"
	for i, n := range []float64{1, 2, 4, 8, 16, 32, 64, 128} {
		p99 := time.Duration(n) * 10 * time.Millisecond
		update.Points = append(update.Points, results.SweepPoint{Value: n, Dir: fmt.Sprintf("strategy-update/writers-%g", n),
			Samples: 1, Throughput: 1.2 * model.At(n) * (1 + float64(i%2)*0.01), WriteThroughput: model.At(n) * (1 + float64(i%2)*0.01),
			ConflictRate: 1 - 1/n, AttemptsP99: 1, P99: p99, LostUpdates: new(int64(0)), ServerMatch: true})
		if n <= 64 {
			pt := results.SweepPoint{Value: n, Dir: "x", Samples: 1, Throughput: 100, WriteThroughput: 100 / n, ConflictRate: 0.5, AttemptsP99: int64(n), P99: p99 / 2, LostUpdates: new(int64(0)), ServerMatch: true}
			if n == 64 {
				pt.GaveUp, pt.GaveUpRatio = 40, 0.25
			}
			retry.Points = append(retry.Points, pt)
		}
	}
	retry.Stopped = "gaveUp > 0 at 64 writers (gaveUp 40)"
	sw.Series = []results.SweepSeries{update, retry}
	return sw
}

// Latencies is a simulated run's result whose operations took exactly
// latencies: the same envelope (spec, target) as Simulated's.
func Latencies(t testing.TB, latencies []time.Duration) *results.Result {
	t.Helper()
	r := Simulated(t, false, func(Op) bool { return false }, nil)
	rec := metrics.NewRecorder(r.Started, 1, false)
	at := r.Started
	for _, lat := range latencies {
		rec.Stripe(0).RecordOp(metrics.Op{Intended: at, Start: at, End: at.Add(lat), Outcome: metrics.Success, Attempts: 1})
	}
	snap := rec.Snapshot(r.Ended)
	r.Measurements = results.FromSnapshot(snap, results.ClientStats{})
	r.Series = snap.Series
	r.Workload = results.Describe(r.Spec, What, true)
	var err error
	if r.Summary, err = results.Summarize(r.Measurements, r.Ended.Sub(r.Started).Seconds(), nil); err != nil {
		t.Fatal(err)
	}
	return r
}

// SmallSample is a run of 590 ops: 588 of 1 to 10ms, then 12.1ms and
// 41.0ms. Its p99.9 is the slowest op, which the rounded rank missed.
func SmallSample(t testing.TB) *results.Result {
	var lat []time.Duration
	for i := range 588 {
		lat = append(lat, time.Duration(1000+i*15)*time.Microsecond)
	}
	return Latencies(t, append(lat, 12100*time.Microsecond, 41000*time.Microsecond))
}
