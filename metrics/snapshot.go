package metrics

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// SeriesPoint is one interval (about a second) of the per-second series.
type SeriesPoint struct {
	// At is the end of the interval, relative to the recorder's start.
	At time.Duration `json:"at"`
	// Span is the interval's length (it starts at At-Span).
	Span time.Duration `json:"span"`
	// Ops finished in the interval, by outcome.
	Outcomes map[string]int64 `json:"outcomes"`
	// Ops is the total of Outcomes.
	Ops int64 `json:"ops"`
	// Writes counts the interval's write attempts by outcome: unlike
	// Outcomes it shows every 409, also those a retry strategy absorbed.
	Writes map[string]int64 `json:"writes"`
	// P50 and P99 of operation latency in the interval, nearest rank (see
	// Percentiles; 0 when no ops).
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	// Histogram is the interval's operation latency (µs) in the lossless
	// encoding results uses (base64 of HdrHistogram's compressed V2 form;
	// empty when no ops finished). A few hundred bytes a second: it lets
	// shards' series merge exactly and feeds the interval histogram log.
	Histogram string `json:"histogram,omitempty"`
}

// SetHistogram sets Histogram, P50 and P99 from the interval's histogram
// of microseconds; an empty one leaves them unset.
func (p *SeriesPoint) SetHistogram(h *hdrhistogram.Histogram) (err error) {
	if h.TotalCount() > 0 {
		pct := Percentiles(h, 0.5, 0.99)
		p.P50, p.P99 = time.Duration(pct[0])*time.Microsecond, time.Duration(pct[1])*time.Microsecond
		p.Histogram, err = EncodeHistogram(h)
	}
	return err
}

// Conflicts are the interval's write attempts answered 409 (a version or
// a field-manager conflict).
func (p SeriesPoint) Conflicts() int64 {
	return p.Writes[VersionConflict.String()] + p.Writes[FieldManagerConflict.String()]
}

// Snapshot is the merged state of a Recorder: plain data for results.
type Snapshot struct {
	// Start is the recorder's start: SeriesPoint.At counts from here.
	Start time.Time
	// Ops is the number of measured operations (warm-up excluded).
	Ops int64
	// WarmupOps were run during the warm-up and are in no other figure.
	WarmupOps int64
	// Outcomes counts measured operations by final outcome.
	Outcomes [NumOutcomes]int64
	// AttemptOutcomes counts requests by kind (Read, Write) and outcome.
	AttemptOutcomes [2][NumOutcomes]int64
	// Attempts[n] is the number of operations that made n write attempts.
	Attempts []int64
	// GaveUp counts operations whose retry strategy ran out of steps.
	GaveUp int64
	// Late and Dropped count open-loop arrivals that found no free slot.
	Late, Dropped int64
	// Clamped counts operations that took longer than the histogram's
	// range (one hour) and were recorded as one hour.
	Clamped int64
	// Errors holds the first few distinct messages of "other" and
	// "invalid" outcomes.
	Errors []string
	// Histograms of latency in microseconds. OpRaw is nil in a closed loop.
	Op, OpRaw, Write, Read, Backoff *hdrhistogram.Histogram
	// Series is the per-second series.
	Series []SeriesPoint
}

// Tick closes the current interval at now, appends it to the series and
// returns it. Call it about once a second (the progress display does); it
// costs one histogram merge per stripe, off the writers' hot path.
func (r *Recorder) Tick(now time.Time) SeriesPoint {
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	r.mu.Lock()
	last, start := r.lastTick, r.start
	r.mu.Unlock()
	merged := r.tickHist
	merged.Reset()
	var out, writes [NumOutcomes]int64
	for _, s := range r.stripes {
		s.mu.Lock()
		merged.Merge(s.interval)
		s.interval.Reset()
		for i := range out {
			out[i] += s.intervalOut[i]
			writes[i] += s.intervalWrites[i]
		}
		s.intervalOut = [NumOutcomes]int64{}
		s.intervalWrites = [NumOutcomes]int64{}
		s.mu.Unlock()
	}
	at := now.Sub(start).Round(time.Millisecond)
	p := SeriesPoint{At: at, Span: at - last.Sub(start).Round(time.Millisecond), Outcomes: OutcomeMap(out[:]), Writes: OutcomeMap(writes[:])}
	for _, n := range out {
		p.Ops += n
	}
	_ = p.SetHistogram(merged) // in range: cannot fail
	r.mu.Lock()
	r.series = append(r.series, p)
	r.lastTick = now
	r.mu.Unlock()
	return p
}

// Snapshot merges every stripe. It closes the last partial interval of the
// series at now. Call it after the writers have stopped.
func (r *Recorder) Snapshot(now time.Time) Snapshot {
	r.mu.Lock()
	needTick := now.After(r.lastTick)
	r.mu.Unlock()
	if needTick {
		r.Tick(now)
	}
	snap := r.Totals()
	r.mu.Lock()
	snap.Series = append([]SeriesPoint(nil), r.series...)
	r.mu.Unlock()
	return snap
}

// Totals merges every stripe's totals so far, leaving the series alone
// (its Series is nil): what the live exposition reads at each scrape,
// while the writers run. It costs one merge of each stripe's histograms
// under the stripe's lock, as a Tick does; writers pay nothing for it
// between scrapes.
func (r *Recorder) Totals() Snapshot {
	r.mu.Lock()
	snap := Snapshot{Start: r.start}
	r.mu.Unlock()
	for _, s := range r.stripes {
		s.mu.Lock()
		snap.Add(s.t)
		s.mu.Unlock()
	}
	snap.Late, snap.Dropped = r.late.Load(), r.dropped.Load()
	return snap
}

// Add adds u's counts, its errors (up to MaxErrors distinct ones) and
// its histograms (those it has) to s's; s keeps its Start and Series.
func (s *Snapshot) Add(u Snapshot) {
	s.Ops += u.Ops
	s.WarmupOps += u.WarmupOps
	s.GaveUp += u.GaveUp
	s.Late += u.Late
	s.Dropped += u.Dropped
	s.Clamped += u.Clamped
	for o := range NumOutcomes {
		s.Outcomes[o] += u.Outcomes[o]
		s.AttemptOutcomes[Read][o] += u.AttemptOutcomes[Read][o]
		s.AttemptOutcomes[Write][o] += u.AttemptOutcomes[Write][o]
	}
	for n, c := range u.Attempts {
		for len(s.Attempts) <= n {
			s.Attempts = append(s.Attempts, 0)
		}
		s.Attempts[n] += c
	}
	for _, e := range u.Errors {
		s.Errors = appendError(s.Errors, e)
	}
	for _, h := range []struct{ to, from **hdrhistogram.Histogram }{
		{&s.Op, &u.Op}, {&s.OpRaw, &u.OpRaw}, {&s.Write, &u.Write}, {&s.Read, &u.Read}, {&s.Backoff, &u.Backoff},
	} {
		if *h.from == nil {
			continue
		}
		if *h.to == nil {
			*h.to = NewHistogram()
		}
		(*h.to).Merge(*h.from)
	}
}

// EncodeHistogram returns h in kb-bench's lossless text encoding: base64 of
// HdrHistogram's compressed V2 form, readable by every HdrHistogram port.
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encoding a latency histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHistogram is the inverse of EncodeHistogram; "" is an empty
// histogram in kb-bench's range.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return NewHistogram(), nil
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decoding a latency histogram (the result file may be damaged): %w", err)
	}
	return h, nil
}
