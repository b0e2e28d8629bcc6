package workload

import (
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// liveFigures are the run's figures now, for a scrape of the live
// exposition: the recorder's totals (its stripes merged, as a Tick
// does), the clients' since the window opened and the scenario's own.
// Until the window opens only warm-up operations count. A distributed
// run's coordinator adds up its shards' instead.
func (e *engine) liveFigures() live.Figures {
	var own []results.Figure
	if l, ok := e.sc.Scenario.(scenario.Live); ok {
		own = l.Live()
	}
	if c, ok := e.role.(*coordinator); ok {
		// The load is the shards': their figures, added up.
		f := c.liveFigures()
		f.Scenario = own
		return f
	}
	f := live.Figures{Totals: e.rec.Totals(), Scenario: own}
	p := e.window.Load()
	if p == nil {
		return f
	}
	w := *p
	if w.after == nil {
		w.after, w.ended = new(e.readClients()), time.Now()
	}
	f.Client, _ = since(w.before, w.after)
	f.Window = w.ended.Sub(w.start)
	return f
}
