package workload

import (
	"fmt"
	"slices"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// inject does the run's fault (Options.Fault), if any, its At into the
// window that starts at start, from a timer: the sequence goes on
// meanwhile. done, called once the window's load is over, waits for a
// fault under way, and records one the window ended before.
func (e *engine) inject(start time.Time) (done func()) {
	ft := e.opts.Fault
	if ft == nil {
		return func() {}
	}
	fired := make(chan struct{})
	t := time.AfterFunc(time.Until(start.Add(ft.At)), func() {
		defer close(fired)
		at := time.Now()
		r := results.Fault{What: ft.What, At: at.Sub(start)}
		if err := ft.Do(); err != nil {
			r.Error = err.Error()
		}
		fmt.Fprintf(e.log, "fault: %s at %s into the measured window\n", ft.What, words.Duration(r.At))
		e.fault.Store(&r)
	})
	return func() {
		if t.Stop() {
			e.fault.Store(&results.Fault{What: ft.What, At: ft.At, Error: "the measured window ended before it was due"})
			return
		}
		<-fired
	}
}

// faultReport completes the fault's report r from window w's figures f:
// when its clients found the apiserver gone and failed over, what got no
// answer, and the seconds before and after it.
func (e *engine) faultReport(r results.Fault, w window, f figures) results.Fault {
	if r.Error != "" {
		return r
	}
	if ft := e.opts.Fault; e.servers != nil && ft.Down >= 0 {
		killed := w.start.Add(r.At)
		if d := e.servers.Down(ft.Down); !d.IsZero() {
			r.Down = d.Sub(w.start)
		}
		moves, first := e.servers.Failovers()
		r.Failovers = moves
		n := len(e.opts.Servers)
		for i := range e.clients {
			if i%n != ft.Down {
				continue
			}
			r.Clients++
			if t, ok := first[i]; ok {
				r.Moved++
				r.FailoverTime = max(r.FailoverTime, t.Sub(killed))
			}
		}
	}
	r.Unanswered = unanswered(f.requests)
	var before, after []metrics.SeriesPoint
	for _, p := range f.series {
		if p.At <= r.At {
			before = append(before, p)
		} else {
			after = append(after, p)
		}
	}
	r.Before, r.After = faultSpan(before), faultSpan(after)
	return r
}

// faultSpan sums the per-second points of one side of a fault.
func faultSpan(points []metrics.SeriesPoint) results.FaultSpan {
	var sp results.FaultSpan
	var ops, conflicts int64
	var span time.Duration
	for _, p := range points {
		sp.Seconds++
		ops += p.Ops
		conflicts += p.Writes[metrics.VersionConflict.String()]
		span += p.Span
		sp.MaxP99 = max(sp.MaxP99, p.P99)
	}
	if span > 0 {
		sp.OpsPerSec = float64(ops) / span.Seconds()
		sp.ConflictsPer = float64(conflicts) / span.Seconds()
	}
	return sp
}

// livingWindow is a window's readings of the apiservers that were alive
// at both its edges, and their URLs.
type livingWindow struct {
	window
	names []string
}

// living narrows window w, of a target with several apiservers one of
// which died in it, to those alive at both edges: their counters, and
// the requests (of the clients' requests) that they answered. A dead
// apiserver's counters died with it, so the requests it answered before
// it died cannot be checked against any count of the server's, and a
// warning says exactly what the check then covers. Without a death, it
// returns w and requests as they are.
func (e *engine) living(w window, requests map[metrics.RequestKey]int64) (livingWindow, map[metrics.RequestKey]int64) {
	lw := livingWindow{window: w, names: e.opts.Servers}
	if e.servers == nil || w.after == nil || !slices.Contains(w.after.dead, true) {
		return lw, requests
	}
	before, after := *w.before, *w.after
	before.servers, after.servers, lw.names = nil, nil, nil
	answered := map[metrics.RequestKey]int64{}
	var deadNames []string
	var deadAnswered, all int64
	for i, name := range e.opts.Servers {
		got := results.AddCounts(after.answered[i], before.answered[i], -1)
		if after.dead[i] || (len(w.before.dead) > 0 && w.before.dead[i]) {
			deadNames = append(deadNames, name)
			for _, n := range got {
				deadAnswered += n
			}
			continue
		}
		lw.names = append(lw.names, name)
		before.servers, after.servers = append(before.servers, w.before.servers[i]), append(after.servers, w.after.servers[i])
		answered = results.AddCounts(answered, got, 1)
	}
	before.server, after.server = metrics.Sum(before.servers...), metrics.Sum(after.servers...)
	lw.before, lw.after = &before, &after
	for _, n := range answered {
		all += n
	}
	e.warn("apiserver %v died in the measured window, and its /metrics counters with it: the server cross-check and the cost cover the living apiservers alone (%v): the %d requests they answered, by their counters and the clients'. The %d requests the dead one answered before it died (the clients counted them) and the %d that got no answer cannot be checked against any apiserver's count",
		deadNames, lw.names, all, deadAnswered, unanswered(requests))
	return lw, answered
}

// unanswered counts the requests that got no answer.
func unanswered(requests map[metrics.RequestKey]int64) (n int64) {
	for k, c := range requests {
		if k.Code == results.CodeNoResponse {
			n += c
		}
	}
	return n
}
