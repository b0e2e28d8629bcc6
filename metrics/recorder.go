package metrics

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: latencies are recorded in microseconds from 1µs to one
// hour with 3 significant digits. Larger values are clamped to the maximum;
// Snapshot.Clamped counts the operations that were.
const (
	histMin     = 1
	histMax     = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// NewHistogram returns an empty latency histogram in kb-bench's units (µs).
func NewHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histSigFigs) }

// AttemptKind says which request inside an operation an Attempt was.
type AttemptKind uint8

// Attempt kinds.
const (
	Read  AttemptKind = iota // the GET of a read-modify-write
	Write                    // a PUT, PATCH, apply or create
)

// Op is one finished operation, all attempts and backoff included.
type Op struct {
	// Intended is when the operation was due: its schedule in an open loop,
	// its start in a closed loop. Latency is measured from here.
	Intended time.Time
	// Start is when a writer actually began it (after Intended when late),
	// End when it finished.
	Start, End time.Time
	// Outcome is the final outcome.
	Outcome Outcome
	// Err is kept (first few distinct messages) when Outcome is Other or
	// Invalid.
	Err error
	// Attempts is the number of write attempts made.
	Attempts int
	// Backoff is the time slept between attempts.
	Backoff time.Duration
	// GaveUp is set when a retry strategy ran out of steps.
	GaveUp bool
}

// Attempt is one request inside an operation.
type Attempt struct {
	Kind    AttemptKind
	Latency time.Duration
	Outcome Outcome
}

// Recorder collects a run's measurements. Writers record into a Stripe each;
// stripes are merged losslessly by Snapshot. Memory is bounded by the number
// of stripes, not by the number of writers or the length of the run (apart
// from one row per second in the series, about 1 KB with its interval
// histogram).
type Recorder struct {
	start   time.Time
	stripes []*Stripe

	tickMu   sync.Mutex              // serialises Tick, so series points stay in order
	tickHist *hdrhistogram.Histogram // Tick's scratch histogram (under tickMu)

	mu       sync.Mutex // guards start and the fields below (not the hot path)
	series   []SeriesPoint
	lastTick time.Time

	dropped, late atomic.Int64
}

// Stripe is one writer's (or a group of writers') part of a Recorder. Its
// mutex is only contended by the once-a-second interval tick and by writers
// that share the stripe, never by a global lock.
type Stripe struct {
	mu          sync.Mutex
	measureFrom time.Time

	// t holds the stripe's totals: Op from Intended (corrected in an open
	// loop), OpRaw from Start (open loop only: it is nil in a closed one).
	t Snapshot

	// interval is reset every tick and feeds the per-second series.
	interval       *hdrhistogram.Histogram
	intervalOut    [NumOutcomes]int64
	intervalWrites [NumOutcomes]int64
}

// MaxErrors bounds the distinct "other" error messages kept (per stripe, per
// snapshot and per merged result).
const MaxErrors = 5

// DefaultStripes is a stripe count for a run with the given number of writers:
// one per writer up to four per CPU, and never more than MaxStripes. Writers
// spend nearly all their time waiting on the network, so a few writers
// sharing a stripe's mutex do not contend, while each stripe costs about 1 MB
// of histograms: stripes, not writers, bound the recorder's memory, and
// MaxStripes bounds it on a machine with many CPUs too.
func DefaultStripes(writers int) int {
	return max(min(writers, 4*runtime.GOMAXPROCS(0), MaxStripes), 1)
}

// MaxStripes caps DefaultStripes, so that the recorder stays within about
// 35 MB however many CPUs and writers a run has. Recording takes a stripe's
// mutex for well under a microsecond a few times per operation, so even an
// apiserver's highest write rates keep 32 stripes nearly idle.
const MaxStripes = 32

// NewRecorder returns a Recorder with the given number of stripes, timing the
// series from start. openLoop records raw latency (from Start) beside the
// corrected one (from Intended).
func NewRecorder(start time.Time, stripes int, openLoop bool) *Recorder {
	r := &Recorder{start: start, lastTick: start, tickHist: NewHistogram()}
	for range max(stripes, 1) {
		s := &Stripe{measureFrom: start, interval: NewHistogram(),
			t: Snapshot{Op: NewHistogram(), Write: NewHistogram(), Read: NewHistogram(), Backoff: NewHistogram()}}
		if openLoop {
			s.t.OpRaw = NewHistogram()
		}
		r.stripes = append(r.stripes, s)
	}
	return r
}

// Stripe returns the lock stripe writer i records in.
func (r *Recorder) Stripe(i int) *Stripe { return r.stripes[i%len(r.stripes)] }

// MeasureFrom starts the measured window at t: operations intended before
// t are counted as warm-up only and kept out of every figure, and the
// per-second series counts from t.
func (r *Recorder) MeasureFrom(t time.Time) {
	r.mu.Lock()
	r.start, r.lastTick = t, t
	r.mu.Unlock()
	for _, s := range r.stripes {
		s.mu.Lock()
		s.measureFrom = t
		s.mu.Unlock()
	}
}

// Measured reports whether an operation due at intended falls in the
// measured window (as RecordOp and RecordAttempt decide), for scenarios
// that keep figures of their own.
func (s *Stripe) Measured(intended time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !intended.Before(s.measureFrom)
}

// Dropped counts an open-loop arrival that found no free slot and was not run.
func (r *Recorder) Dropped() { r.dropped.Add(1) }

// Late counts an open-loop arrival that started after its schedule because
// no slot was free; its latency is still measured from the schedule.
func (r *Recorder) Late() { r.late.Add(1) }

func micros(d time.Duration) int64 { return max(d.Microseconds(), histMin) }

// RecordLatency adds d to h, a histogram from NewHistogram, in
// microseconds clamped to its range.
func RecordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(micros(d), histMax)) // cannot fail: the value is within range
}

// RecordOp records a finished operation.
func (s *Stripe) RecordOp(op Op) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op.Intended.Before(s.measureFrom) {
		s.t.WarmupOps++
		return
	}
	if op.Outcome >= NumOutcomes {
		op.Outcome = Other
	}
	s.t.Ops++
	s.t.Outcomes[op.Outcome]++
	s.intervalOut[op.Outcome]++
	n := max(op.Attempts, 0)
	for len(s.t.Attempts) <= n {
		s.t.Attempts = append(s.t.Attempts, 0)
	}
	s.t.Attempts[n]++
	if op.GaveUp {
		s.t.GaveUp++
	}
	lat := op.End.Sub(op.Intended)
	if micros(lat) > histMax {
		// Counted once per operation: its raw latency, backoff and
		// attempts are no longer than this.
		s.t.Clamped++
	}
	RecordLatency(s.t.Op, lat)
	RecordLatency(s.interval, lat)
	if s.t.OpRaw != nil {
		RecordLatency(s.t.OpRaw, op.End.Sub(op.Start))
	}
	if op.Attempts > 1 || op.Backoff > 0 {
		RecordLatency(s.t.Backoff, op.Backoff)
	}
	if (op.Outcome == Other || op.Outcome == Invalid) && op.Err != nil {
		s.t.Errors = appendError(s.t.Errors, op.Err.Error())
	}
}

// appendError appends msg to errs unless errs has it or holds MaxErrors.
func appendError(errs []string, msg string) []string {
	if len(errs) < MaxErrors && !slices.Contains(errs, msg) {
		errs = append(errs, msg)
	}
	return errs
}

// RecordAttempt records one request inside an operation that was due at
// intended; attempts of warm-up operations are left out.
func (s *Stripe) RecordAttempt(intended time.Time, a Attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if intended.Before(s.measureFrom) {
		return
	}
	if a.Outcome >= NumOutcomes {
		a.Outcome = Other
	}
	a.Kind = min(a.Kind, Write)
	s.t.AttemptOutcomes[a.Kind][a.Outcome]++
	if a.Kind == Read {
		RecordLatency(s.t.Read, a.Latency)
	} else {
		s.intervalWrites[a.Outcome]++
		RecordLatency(s.t.Write, a.Latency)
	}
}
