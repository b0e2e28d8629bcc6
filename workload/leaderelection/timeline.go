package leaderelection

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

// leadership is one candidate's own belief that it led: from its
// OnStartedLeading callback until the context client-go gave that callback
// ended. A zero end means it still lasts.
type leadership struct {
	id         string
	start, end time.Time
}

// stop is a leader the scenario stopped, and when.
type stop struct {
	id string
	at time.Time
}

// byStart orders leaderships by their start.
func byStart(a, b leadership) int { return a.start.Compare(b.start) }

// sweep calls each for every stretch of time from one edge of a
// leadership to the next and from the last to end, with how many
// leaderships were open through it and which identities (an id may lead
// twice in a row). The first stretch starts at the zero time. Leaderships
// still open, or past end, are taken to end at end. At the same instant
// ends go first, so that leaderships that merely touch do not overlap.
func sweep(ls []leadership, end time.Time, each func(from, to time.Time, n int, open map[string]int)) {
	type edge struct {
		at    time.Time
		id    string
		delta int
	}
	var edges []edge
	for _, l := range ls {
		e := l.end
		if e.IsZero() || e.After(end) {
			e = end
		}
		if e.After(l.start) {
			edges = append(edges, edge{l.start, l.id, 1}, edge{e, l.id, -1})
		}
	}
	slices.SortStableFunc(edges, func(a, b edge) int { return cmp.Or(a.at.Compare(b.at), a.delta-b.delta) })
	open, n, last := map[string]int{}, 0, time.Time{}
	for _, e := range edges {
		each(last, e.at, n, open)
		last, n = e.at, n+e.delta
		if open[e.id] += e.delta; open[e.id] == 0 {
			delete(open, e.id)
		}
	}
	each(last, end, n, open)
}

// overlaps returns every span during which two or more leaderships were open
// at once, with offsets from base. Leaderships still open are taken to end at
// end. Two leaderships that merely touch (one ends the instant the other
// starts) do not overlap.
func overlaps(ls []leadership, base, end time.Time) []Overlap {
	var out []Overlap
	var start time.Time
	var leaders map[string]bool // of the span under way
	sweep(ls, end, func(from, _ time.Time, n int, open map[string]int) {
		switch {
		case n >= 2 && leaders == nil:
			start, leaders = from, map[string]bool{}
			fallthrough
		case n >= 2:
			for id := range open {
				leaders[id] = true
			}
		case leaders != nil:
			out = append(out, Overlap{At: start.Sub(base), Duration: from.Sub(start), Leaders: slices.Sorted(maps.Keys(leaders))})
			leaders = nil
		}
	})
	return out
}

// failovers pairs each stop with the first leadership that started at or
// after it, anywhere: the failover time is the gap between the two. A stop
// with no later leadership is unresolved.
func failovers(stops []stop, ls []leadership, base time.Time) []Failover {
	starts := slices.Clone(ls)
	slices.SortStableFunc(starts, byStart)

	out := make([]Failover, 0, len(stops))
	for _, s := range stops {
		f := Failover{At: s.at.Sub(base), Stopped: s.id}
		i := sort.Search(len(starts), func(i int) bool { return !starts[i].start.Before(s.at) })
		if i < len(starts) {
			f.Resolved, f.NewLeader, f.Duration = true, starts[i].id, starts[i].start.Sub(s.at)
		}
		out = append(out, f)
	}
	return out
}

// failoverStats summarises the resolved failovers: min, median (nearest
// rank) and max. There are few of them, so sorting is fine here.
func failoverStats(fs []Failover) FailoverStats {
	var ds []time.Duration
	for _, f := range fs {
		if f.Resolved {
			ds = append(ds, f.Duration)
		}
	}
	st := FailoverStats{Count: len(fs), Resolved: len(ds)}
	if len(ds) > 0 {
		slices.Sort(ds)
		st.Min, st.P50, st.Max = ds[0], ds[(len(ds)+1)/2-1], ds[len(ds)-1]
	}
	return st
}

// transitions counts changes of the Lease holder as a watcher saw them: a
// non-empty holder that differs from the previous non-empty one. Releases
// (an empty holder) are not transitions; the first holder is not either.
func transitions(holders []string) int {
	n, last := 0, ""
	for _, h := range holders {
		if h == "" {
			continue
		}
		if last != "" && h != last {
			n++
		}
		last = h
	}
	return n
}

// coverage returns how long, within [from, to), no leadership was open
// (leaderless) and two or more were (overlap). Leaderships still open are
// taken to end at to.
func coverage(ls []leadership, from, to time.Time) (leaderless, overlap time.Duration) {
	sweep(ls, to, func(a, b time.Time, n int, _ map[string]int) {
		if a.Before(from) {
			a = from
		}
		switch d := b.Sub(a); {
		case d <= 0:
		case n == 0:
			leaderless += d
		case n >= 2:
			overlap += d
		}
	})
	return leaderless, overlap
}

// thefts finds every leadership that began while another candidate still
// believed it led: the Lease was taken from a leader that did not know it
// yet. Detection is from the taking to the old leader's step-down (to end
// for one that never stepped down).
func thefts(ls []leadership, base, end time.Time) []Theft {
	var out []Theft
	for _, b := range ls {
		for _, a := range ls {
			if a.id == b.id || !a.start.Before(b.start) {
				continue
			}
			aEnd := cmp.Or(a.end, end)
			if !aEnd.After(b.start) {
				continue
			}
			out = append(out, Theft{At: b.start.Sub(base), Victim: a.id, Thief: b.id, Detection: aEnd.Sub(b.start), Ongoing: a.end.IsZero()})
		}
	}
	slices.SortStableFunc(out, func(a, b Theft) int { return cmp.Compare(a.At, b.At) })
	return out
}

// leaseEvent is one change of the Lease as the run's watch saw it.
type leaseEvent struct {
	rv      uint64
	holder  string
	deleted bool
}

// fencing says, for each accepted fenced write, whether it was deposed
// (the Lease named someone else, or nobody, or did not exist when the
// apiserver accepted it) and whether a fencing check would have refused
// it: its token older than the resourceVersion at which the Lease last
// changed hands. history is the Lease's changes in resourceVersion order;
// a write's place among them is its own resourceVersion, which on one
// etcd is the same revision counter.
func fencing(history []leaseEvent, w event) (deposed, refused bool) {
	i := sort.Search(len(history), func(i int) bool { return history[i].rv >= w.RV })
	if i == 0 {
		return true, true // no Lease yet
	}
	// since: the revision at which the holder last changed, at or before i-1.
	since := uint64(0)
	for j := i - 1; j >= 0; j-- {
		e := history[j]
		if j == 0 || e.deleted || history[j-1].deleted || history[j-1].holder != e.holder {
			since = e.rv
			break
		}
	}
	cur := history[i-1]
	return cur.deleted || cur.holder != w.ID, w.Token < since
}

// classified is an accepted leader-only write, told apart by fencing.
type classified struct {
	id               string
	end              time.Time
	deposed, refused bool
}

// faultReports measures each fault over its window, from its injection to
// the next fault's (or end). The victim's step-down and its deposed
// writes count in the window only: after it, they are the next fault's.
func faultReports(faults []faultEvent, ls []leadership, log []event, fenced []classified, base, end time.Time) []FaultReport {
	out := make([]FaultReport, 0, len(faults))
	for i, f := range faults {
		to := end
		if i+1 < len(faults) {
			to = faults[i+1].at
		}
		fr := FaultReport{Kind: f.kind, At: f.at.Sub(base), Victim: f.victim}
		if f.err != nil {
			fr.Failed = f.err.Error()
		}
		if f.kind == FaultPartition || f.kind == FaultPause {
			fr.Duration = cmp.Or(f.healed, end).Sub(f.at)
		}
		// The taking: the first successful Lease write after the fault
		// naming a holder other than the victim.
		var taken, next time.Time
		for _, w := range log {
			if w.End.Before(f.at) || !w.End.Before(to) {
				continue
			}
			fr.LeaseWrites++
			if w.Outcome == metrics.VersionConflict {
				fr.LeaseConflicts++
			}
			if w.Outcome != metrics.Success || w.Holder == "" {
				continue
			}
			if next.IsZero() || w.End.Before(next) {
				next, fr.NextHolder = w.End, w.Holder
			}
			if w.Holder != f.victim && (taken.IsZero() || w.End.Before(taken)) {
				taken, fr.TakenBy = w.End, w.Holder
			}
		}
		if !next.IsZero() {
			fr.NextHolderAfter = next.Sub(f.at)
		}
		if !taken.IsZero() {
			fr.Taken, fr.TakenAfter = true, taken.Sub(f.at)
		}
		// An identity leads at most once.
		v := slices.IndexFunc(ls, func(l leadership) bool { return l.id == f.victim })
		if v >= 0 && !ls[v].end.IsZero() && ls[v].end.Before(to) {
			fr.VictimStopped, fr.StoppedAfter = true, ls[v].end.Sub(f.at)
			if fr.Taken {
				fr.Detection = ls[v].end.Sub(taken)
			}
		} else if fr.Taken {
			fr.Detection = to.Sub(taken)
		}
		fr.Leaderless, fr.Overlap = coverage(ls, f.at, to)
		for _, w := range fenced {
			if w.id != f.victim || w.end.Before(f.at) || !w.end.Before(to) {
				continue
			}
			if w.deposed {
				fr.DeposedWrites++
			}
			if w.refused {
				fr.WouldBeFenced++
			}
		}
		out = append(out, fr)
	}
	return out
}
