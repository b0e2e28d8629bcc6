package counter

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Every 409 by its cause. kb-bench makes every write to its objects, so it
// knows, per object, each successful write's resourceVersion and when its
// response arrived (acks). A version conflict's read returned version r:
// if a write newer than r had been acknowledged before the read began,
// the read was stale (a quorum read, which sees every acknowledged write,
// could not have returned r); otherwise r was fresh and another write
// overtook it between the read and the write. The two add up to the 409s,
// and with --read get stale reads are zero.

// ackRing is how many of an object's latest acks it keeps: enough to
// count how far behind a stale read was, and for the watchers to find a
// write they see.
const ackRing = 256

// ack is one successful write: its resourceVersion, when its response
// arrived (UnixNano; 0 when no watcher needs it) and whether it was in the
// measured window.
type ack struct {
	rv       int64
	at       int64
	measured bool
}

// acks is one object's successful writes.
type acks struct {
	// latest is the newest resourceVersion acknowledged (written under
	// mu, read without it).
	latest atomic.Int64
	mu     sync.Mutex
	ring   []ack // the latest ackRing acks, ring[n%ackRing] next (nil: none kept, see keepAcks)
	n      int   // acks ever
	// early counts, per resourceVersion not yet acknowledged, the
	// watchers of each kind that saw it (watch.go).
	early map[int64][len(watcherKinds)]int32
}

// parseRV reads a resourceVersion as the number the apiserver makes it
// (etcd's revision); one that is not a number reads as 0.
func parseRV(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// newAcks returns the acks of m objects, keeping their latest acks when
// keep says a read may be stale (for versionsBehind) or watchers time them.
func newAcks(m int, keep bool) []acks {
	a := make([]acks, m)
	for i := range a {
		if keep {
			a[i].ring = make([]ack, ackRing)
		}
	}
	return a
}

// add records a successful write that made resourceVersion rv, and
// returns how many watchers of each kind saw it before.
func (a *acks) add(rv int64, at time.Time, measured bool) (early [len(watcherKinds)]int32) {
	var nanos int64
	if !at.IsZero() {
		nanos = at.UnixNano()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if rv > a.latest.Load() {
		a.latest.Store(rv)
	}
	if a.ring != nil {
		a.ring[a.n%ackRing] = ack{rv, nanos, measured}
		a.n++
	}
	if a.early != nil {
		if e, ok := a.early[rv]; ok {
			delete(a.early, rv)
			return e
		}
	}
	return early
}

// behind counts the kept acks newer than r and no newer than latest.
func (a *acks) behind(r, latest int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for _, x := range a.ring[:min(a.n, len(a.ring))] {
		if x.rv > r && x.rv <= latest {
			n++
		}
	}
	return n
}

// oldest is the oldest resourceVersion the ring holds (under mu).
func (a *acks) oldest() int64 {
	oldest := a.latest.Load()
	for _, x := range a.ring[:min(a.n, len(a.ring))] {
		oldest = min(oldest, x.rv)
	}
	return oldest
}

// causes counts the measured 409s by cause.
type causes struct {
	mu               sync.Mutex
	stale, overtaken int64
	behind           *hdrhistogram.Histogram // versions behind, per stale read
}

func newCauses() *causes { return &causes{behind: metrics.NewHistogram()} }

// conflict classifies a version conflict whose read returned read when
// latest was the object's newest acknowledged resourceVersion as the read
// began.
func (c *causes) conflict(a *acks, latest int64, read string) {
	r := parseRV(read)
	var behind int64
	if latest > r {
		behind = max(a.behind(r, latest), 1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if behind == 0 {
		c.overtaken++
		return
	}
	c.stale++
	_ = c.behind.RecordValue(behind) // within range: at most ackRing
}

// figures are the 409s by cause, the stale share and how far behind.
func (c *causes) figures() []results.Figure {
	c.mu.Lock()
	defer c.mu.Unlock()
	cause := func(name string, n int64, help string) results.Figure {
		return results.Figure{Name: "conflicts", Labels: map[string]string{"cause": name}, Value: float64(n), Unit: results.UnitCount,
			Sum: true, Better: results.BetterLower, Help: help}
	}
	out := []results.Figure{
		cause("staleRead", c.stale, "409s whose read was already stale: a newer write had been acknowledged before the read began."),
		cause("overtaken", c.overtaken, "409s whose read was fresh, then overtaken by another write before this one landed."),
	}
	if all := c.stale + c.overtaken; all > 0 {
		out = append(out, results.Figure{Name: "staleReadShare", Value: float64(c.stale) / float64(all), Unit: results.UnitPercent,
			Better: results.BetterLower, Help: "Share of the 409s whose read was already stale."})
	}
	if c.stale > 0 {
		qs := []float64{0.5, 0.99, 1}
		for i, v := range metrics.Percentiles(c.behind, qs...) {
			out = append(out, results.Figure{Name: "versionsBehind", Labels: map[string]string{"quantile": strconv.FormatFloat(qs[i], 'g', -1, 64)},
				Value: float64(v), Unit: results.UnitCount, Better: results.BetterLower,
				Help: "How many acknowledged writes a stale read was behind (of the last 256 per object; quantile 1: the most)."})
		}
	}
	return out
}

var _ scenario.Live = (*counter)(nil)

// Live is the 409s by cause so far, for the live metrics.
func (c *counter) Live() []results.Figure { return c.causes.figures() }
