// Package reads is what the scenarios whose writers read before they
// write share: where a writer reads (spec.Read), the informers it reads
// from, and every 409 by its cause.
package reads

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// Every 409 by its cause. kb-bench makes every write to its objects, so it
// knows, per object, each successful write's resourceVersion and when its
// response arrived (acks). A version conflict's read returned version r:
// if a write newer than r had been acknowledged before the read began,
// the read was stale (a quorum read, which sees every acknowledged write,
// could not have returned r); otherwise r was fresh and another write
// overtook it between the read and the write. The two add up to the 409s,
// and with --read get stale reads are zero.

// Ring is how many of an object's latest acks it keeps: enough to
// count how far behind a stale read was, and for the watchers to find a
// write they see.
const Ring = 256

// WatcherKinds is how many kinds of watcher a scenario may time (Acks.Add).
const WatcherKinds = 2

// Ack is one successful write: its resourceVersion, when its response
// arrived (UnixNano; 0 when no watcher needs it) and whether it was in the
// measured window.
type Ack struct {
	RV       int64
	At       int64
	Measured bool
}

// Acks is one object's successful writes.
type Acks struct {
	// latest is the newest resourceVersion acknowledged (written under
	// mu, read without it).
	latest atomic.Int64
	mu     sync.Mutex
	ring   []Ack // the latest Ring acks, ring[n%Ring] next (nil: none kept, see NewAcks)
	n      int   // acks ever
	// early counts, per resourceVersion not yet acknowledged, the
	// watchers of each kind that saw it (Saw).
	early map[int64][WatcherKinds]int32
}

// ParseRV reads a resourceVersion as the number the apiserver makes it
// (etcd's revision); one that is not a number reads as 0.
func ParseRV(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// NewAcks returns the acks of m objects, keeping their latest acks when
// keep says a read may be stale (for versionsBehind) or watchers time them.
func NewAcks(m int, keep bool) []Acks {
	a := make([]Acks, m)
	for i := range a {
		if keep {
			a[i].ring = make([]Ack, Ring)
		}
	}
	return a
}

// Latest is the newest resourceVersion acknowledged: what a read that
// begins now ought to see.
func (a *Acks) Latest() int64 { return a.latest.Load() }

// Add records a successful write that made resourceVersion rv, and
// returns how many watchers of each kind saw it before (Saw).
func (a *Acks) Add(rv int64, at time.Time, measured bool) (early [WatcherKinds]int32) {
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
		a.ring[a.n%Ring] = Ack{rv, nanos, measured}
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
func (a *Acks) behind(r, latest int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for _, x := range a.ring[:min(a.n, len(a.ring))] {
		if x.RV > r && x.RV <= latest {
			n++
		}
	}
	return n
}

// oldest is the oldest resourceVersion the ring holds (under mu).
func (a *Acks) oldest() int64 {
	oldest := a.latest.Load()
	for _, x := range a.ring[:min(a.n, len(a.ring))] {
		oldest = min(oldest, x.RV)
	}
	return oldest
}

// Saw finds the ack of resourceVersion rv, which a watcher of kind k saw.
// Not found, it is pending when it was seen before its ack (acks arrive
// out of order, so it may be older than the latest), unless the ring has
// moved past it: Add then counts the sighting as early.
func (a *Acks) Saw(rv int64, k int) (x Ack, found, pending bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for j := a.n - 1; j >= max(a.n-len(a.ring), 0) && !found; j-- {
		x = a.ring[j%Ring]
		found = x.RV == rv
	}
	if pending = !found && (a.n < len(a.ring) || rv > a.oldest()); pending {
		if a.early == nil {
			a.early = map[int64][WatcherKinds]int32{}
		}
		e := a.early[rv]
		e[k]++
		a.early[rv] = e
	}
	return x, found, pending
}

// Causes counts the measured 409s by cause.
type Causes struct {
	mu               sync.Mutex
	stale, overtaken int64
	behind           *hdrhistogram.Histogram // versions behind, per stale read
}

// NewCauses returns no 409s yet.
func NewCauses() *Causes { return &Causes{behind: metrics.NewHistogram()} }

// Conflict classifies a version conflict whose read returned read when
// latest was the object's newest acknowledged resourceVersion as the read
// began.
func (c *Causes) Conflict(a *Acks, latest int64, read string) {
	r := ParseRV(read)
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
	_ = c.behind.RecordValue(behind) // within range: at most Ring
}

// Figures are the 409s by cause, the stale share and how far behind.
func (c *Causes) Figures() []results.Figure {
	c.mu.Lock()
	defer c.mu.Unlock()
	// One help for both causes, and a name no other scenario uses (quota's
	// conflicts are its creates): a live metric's series share their help.
	cause := func(name string, n int64) results.Figure {
		return results.Figure{Name: "conflictsByCause", Labels: map[string]string{"cause": name}, Value: float64(n), Unit: results.UnitCount,
			Sum: true, Better: results.BetterLower,
			Help: "409s by cause: staleRead, the read was already stale (a newer write had been acknowledged before it began); overtaken, the read was fresh and another write landed before this one."}
	}
	out := []results.Figure{cause("staleRead", c.stale), cause("overtaken", c.overtaken)}
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

// Counts are the 409s stale at read and overtaken so far.
func (c *Causes) Counts() (stale, overtaken int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stale, c.overtaken
}

// AddCounts adds another process's Counts (a shard's).
func (c *Causes) AddCounts(stale, overtaken int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale += stale
	c.overtaken += overtaken
}
