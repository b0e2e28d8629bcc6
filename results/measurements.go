package results

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kb-bench/kb-bench/metrics"
)

// FromSnapshot turns a recorder's merged state and client-go's own counts
// into the raw, mergeable Measurements of a Result (histograms losslessly
// encoded). The series is not part of them: copy s.Series into Result.Series.
func FromSnapshot(s metrics.Snapshot, c ClientStats) Measurements {
	m := Measurements{
		Ops:           s.Ops,
		WarmupOps:     s.WarmupOps,
		Outcomes:      metrics.OutcomeMap(s.Outcomes[:]),
		ReadOutcomes:  metrics.OutcomeMap(s.AttemptOutcomes[metrics.Read][:]),
		WriteOutcomes: metrics.OutcomeMap(s.AttemptOutcomes[metrics.Write][:]),
		Attempts:      trimZeros(s.Attempts),
		GaveUp:        s.GaveUp,
		Late:          s.Late,
		Dropped:       s.Dropped,
		Clamped:       s.Clamped,
		Errors:        append([]string(nil), s.Errors...),
		Histograms:    map[string]string{},
		Client:        c,
		SeriesStart:   s.Start,
	}
	for name, h := range map[string]*hdrhistogram.Histogram{
		HistOp: s.Op, HistOpRaw: s.OpRaw, HistWrite: s.Write, HistRead: s.Read, HistBackoff: s.Backoff,
	} {
		if h == nil {
			continue
		}
		// Encoding an in-range dense histogram cannot fail; an empty string
		// would decode as an empty histogram, never as wrong figures.
		enc, _ := metrics.EncodeHistogram(h)
		m.Histograms[name] = enc
	}
	return m
}

// Snapshot is the inverse of FromSnapshot (no series; a histogram m does
// not hold is nil). It fails when a histogram does not decode or holds
// values outside kb-bench's range.
func (m Measurements) Snapshot() (metrics.Snapshot, error) {
	s := metrics.Snapshot{Start: m.SeriesStart, Ops: m.Ops, WarmupOps: m.WarmupOps, GaveUp: m.GaveUp, Late: m.Late, Dropped: m.Dropped,
		Clamped: m.Clamped, Attempts: slices.Clone(m.Attempts), Errors: slices.Clone(m.Errors)}
	for o := range metrics.NumOutcomes {
		s.Outcomes[o] = m.Outcomes[o.String()]
		s.AttemptOutcomes[metrics.Read][o] = m.ReadOutcomes[o.String()]
		s.AttemptOutcomes[metrics.Write][o] = m.WriteOutcomes[o.String()]
	}
	for name, to := range map[string]**hdrhistogram.Histogram{HistOp: &s.Op, HistOpRaw: &s.OpRaw, HistWrite: &s.Write, HistRead: &s.Read, HistBackoff: &s.Backoff} {
		h, ok, err := m.Histogram(name)
		if err != nil {
			return s, err
		}
		if !ok {
			continue
		}
		*to = metrics.NewHistogram()
		if dropped := (*to).Merge(h); dropped > 0 {
			return s, fmt.Errorf("histogram %q: %d values fall outside kb-bench's range (1µs to 1h): the result was not written by kb-bench", name, dropped)
		}
	}
	return s, nil
}

// trimZeros is a copy of a (never nil) without its trailing zero buckets,
// so equal distributions compare equal.
func trimZeros(a []int64) []int64 {
	n := len(a)
	for n > 0 && a[n-1] == 0 {
		n--
	}
	return append([]int64{}, a[:n]...)
}

// Histogram decodes the named Hist* histogram; ok is false when the run did
// not record it (op-raw in a closed loop).
func (m Measurements) Histogram(name string) (h *hdrhistogram.Histogram, ok bool, err error) {
	enc, ok := m.Histograms[name]
	if !ok {
		return nil, false, nil
	}
	h, err = metrics.DecodeHistogram(enc)
	if err != nil {
		return nil, true, fmt.Errorf("histogram %q: %w", name, err)
	}
	return h, true, nil
}

// Conflicts returns the write attempts that got a 409, by class.
func (m Measurements) Conflicts() (version, fieldManager int64) {
	return m.WriteOutcomes[metrics.VersionConflict.String()], m.WriteOutcomes[metrics.FieldManagerConflict.String()]
}

// WriteAttempts is the number of write attempts kb-bench made in the
// measured window, whatever their outcome: answered, timed out, or failed
// on the way. It is the denominator of the conflict rate.
func (m Measurements) WriteAttempts() int64 {
	var n int64
	for _, c := range m.WriteOutcomes {
		n += c
	}
	return n
}

// Summarize derives the headline figures from Measurements, the measured
// duration in seconds and the correctness checks.
func Summarize(m Measurements, seconds float64, checks []Check) (Summary, error) {
	if seconds < 0 || math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return Summary{}, fmt.Errorf("measured duration %v s is not valid: it must be a finite number >= 0", seconds)
	}
	s := Summary{
		Seconds:       seconds,
		Ops:           m.Ops,
		Successes:     m.Outcomes[metrics.Success.String()],
		Outcomes:      make(map[string]int64, len(m.Outcomes)),
		WriteAttempts: m.WriteAttempts(),
		Writes:        m.WriteOutcomes[metrics.Success.String()],
		GaveUp:        m.GaveUp,
		Percentiles:   PercentilesNearestRank,
	}
	maps.Copy(s.Outcomes, m.Outcomes)
	version, fieldManager := m.Conflicts()
	s.Conflicts = version + fieldManager
	s.Throughput, s.WriteThroughput = ratio(float64(s.Ops), seconds), ratio(float64(s.Writes), seconds)
	s.SuccessRatio = ratio(float64(s.Successes), float64(s.Ops))
	s.ConflictRate = ratio(float64(s.Conflicts), float64(s.WriteAttempts))
	s.AttemptsP50 = attemptsAt(m.Attempts, 0.50)
	s.AttemptsP99 = attemptsAt(m.Attempts, 0.99)
	s.AttemptsMax = attemptsAt(m.Attempts, 1)

	op, ok, err := m.Histogram(HistOp)
	if err != nil {
		return Summary{}, err
	}
	if ok {
		s.Latency = LatencyOf(op)
	}
	raw, ok, err := m.Histogram(HistOpRaw)
	if err != nil {
		return Summary{}, err
	}
	if ok {
		s.RawLatency = new(LatencyOf(raw))
	}
	s.LostUpdates = LostUpdatesOf(checks)
	return s, nil
}

// ratio is a/b, or 0 when there is nothing to divide by (b is 0).
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// attemptsAt returns the smallest attempt count n such that at least a
// share q of operations made n write attempts or fewer (q=1: the maximum).
func attemptsAt(dist []int64, q float64) int64 {
	var total int64
	for _, c := range dist {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := metrics.Rank(q, total)
	var cum int64
	for n, c := range dist {
		cum += c
		if cum >= rank {
			return int64(n)
		}
	}
	return int64(len(dist) - 1)
}

// LatencyOf reads the standard percentiles (nearest rank) from a
// histogram of microseconds.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	p := metrics.Percentiles(h, 0.5, 0.9, 0.99, 0.999)
	return Latency{P50: us(p[0]), P90: us(p[1]), P99: us(p[2]), P999: us(p[3]), Max: us(h.Max()),
		Mean: time.Duration(h.Mean() * float64(time.Microsecond)).Round(time.Microsecond)}
}
