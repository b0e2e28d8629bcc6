package workload

import (
	"sync"
	"time"

	"github.com/kb-bench/kb-bench/metrics/live"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// liveWindow is the measured window as the live figures see it: its
// start and the first edge's reading once it opened, its end and the
// second edge's once it closed. The clients' figures are counted between
// the edges, as the Result's are, so they stop growing with the window
// (the checks and the clean-up after it send requests too).
type liveWindow struct {
	mu sync.Mutex
	w  window
}

func (l *liveWindow) set(w window) {
	l.mu.Lock()
	l.w = w
	l.mu.Unlock()
}

// liveFigures are the run's figures now, for a scrape of the live
// exposition: the recorder's totals (its stripes merged, as a Tick
// does), the clients' since the window opened and the scenario's own.
// Until the window opens only warm-up operations count. A distributed
// run's coordinator adds up its shards' instead.
func (e *engine) liveFigures() live.Figures {
	var gauges []live.Gauge
	if l, ok := e.sc.Scenario.(scenario.Live); ok {
		gauges = l.Live()
	}
	if c, ok := e.role.(*coordinator); ok {
		// The load is the shards': their figures, added up.
		f := c.liveFigures()
		f.Gauges = gauges
		return f
	}
	f := live.Figures{Totals: e.rec.Totals(), Gauges: gauges}
	e.window.mu.Lock()
	w := e.window.w
	e.window.mu.Unlock()
	if w.before == nil {
		return f
	}
	if w.after == nil {
		now := e.readClients()
		w.after, w.ended = &now, time.Now()
	}
	f.Client, _ = since(w.before, w.after)
	f.Window = w.ended.Sub(w.start)
	return f
}
