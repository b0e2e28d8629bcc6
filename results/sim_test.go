package results

import (
	"errors"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// simOp is one operation of a simulated run: what a writer would hand the
// recorder. The tests feed these through the real Recorder, so every figure
// they check was computed by the code a run uses.
type simOp struct {
	writer                int
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
func simulate(seed uint64, writers int, seconds int, openLoop bool) []simOp {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	end := t0.Add(time.Duration(seconds) * time.Second)
	var ops []simOp
	for w := range writers {
		at := t0.Add(time.Duration(rng.IntN(2000)) * time.Microsecond)
		for at.Before(end) {
			op := simOp{writer: w, intended: at, start: at}
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
// ticking the series at every whole second after from (where the measured
// window, and so the series, starts, as the engine ticks), and snapshots at
// stop.
func feed(r *metrics.Recorder, ops []simOp, keep func(simOp) bool, from, stop time.Time) metrics.Snapshot {
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
		sh := r.Shard(op.writer)
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

// simSpec is the spec the simulated runs claim to have run: the counter
// scenario, its own settings as plain data (JSON values, as the engine
// stores them) and the shared ones defaulted.
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

// simWhat is how the counter scenario describes the simulated runs.
const simWhat = "6 writers on 1 object, shared fields"

// simResult builds the Result of a simulated run, warm-up (first second)
// included, recording only the ops keep accepts.
func simResult(t *testing.T, openLoop bool, keep func(simOp) bool, checks []Check) *Result {
	t.Helper()
	sp := simSpec(openLoop)
	rec := metrics.NewRecorder(t0, 3, openLoop)
	measureFrom := t0.Add(sp.Warmup.Duration)
	rec.MeasureFrom(measureFrom)
	stop := measureFrom.Add(sp.Duration.Duration)
	ops := simulate(42, sp.Writers, 5, openLoop)
	if openLoop {
		// Two arrivals found no free slot (one for writer 0, one for
		// writer 1); writer 1's next one started late.
		if keep(simOp{writer: 0}) {
			rec.Dropped()
		}
		if keep(simOp{writer: 1}) {
			rec.Dropped()
			rec.Late()
		}
	}
	snap := feed(rec, ops, keep, measureFrom, stop)
	ended := stop.Add(250 * time.Millisecond)
	r := &Result{
		APIVersion: APIVersion, Kind: KindResult,
		RunID: "20260301-120000-abc123", Version: "v0.1.0-test",
		Started: measureFrom, Ended: ended,
		Target: spec.TargetInfo{Kind: spec.TargetLocal, Server: "https://127.0.0.1:42017", ServerVersion: "v1.37.1",
			Storage: spec.StorageDisk, EtcdVersion: "v3.6.16"},
		Spec:         sp,
		Namespace:    "kb-bench-20260301-120000-abc123",
		Measurements: FromSnapshot(snap, ClientStats{Retries: 3, RateLimiterWait: 120 * time.Millisecond, RateLimited: 4}),
		Series:       snap.Series,
		Checks:       checks,
	}
	var err error
	if r.Summary, err = Summarize(r.Measurements, ended.Sub(measureFrom).Seconds(), checks); err != nil {
		t.Fatal(err)
	}
	return r
}

func all(simOp) bool { return true }
