package leaderelection

import (
	"sort"
	"time"
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

// overlaps returns every span during which two or more leaderships were open
// at once, with offsets from base. Leaderships still open are taken to end at
// end. Two leaderships that merely touch (one ends the instant the other
// starts) do not overlap.
func overlaps(ls []leadership, base, end time.Time) []Overlap {
	type edge struct {
		at    time.Time
		id    string
		start bool
	}
	edges := make([]edge, 0, 2*len(ls))
	for _, l := range ls {
		e := l.end
		if e.IsZero() {
			e = end
		}
		if !e.After(l.start) {
			continue
		}
		edges = append(edges, edge{l.start, l.id, true}, edge{e, l.id, false})
	}
	// At the same instant, ends go first so that touching is not overlap.
	sort.SliceStable(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return !edges[i].start && edges[j].start
	})

	var out []Overlap
	active := map[string]int{} // id -> open leaderships (an id may lead twice in a row)
	open := 0
	var spanStart time.Time
	var spanLeaders map[string]bool
	for _, e := range edges {
		if e.start {
			active[e.id]++
			open++
			if open == 2 {
				spanStart = e.at
				spanLeaders = map[string]bool{}
				for id := range active {
					spanLeaders[id] = true
				}
			} else if open > 2 {
				spanLeaders[e.id] = true
			}
			continue
		}
		active[e.id]--
		if active[e.id] == 0 {
			delete(active, e.id)
		}
		open--
		if open == 1 {
			leaders := make([]string, 0, len(spanLeaders))
			for id := range spanLeaders {
				leaders = append(leaders, id)
			}
			sort.Strings(leaders)
			out = append(out, Overlap{At: spanStart.Sub(base), Duration: e.at.Sub(spanStart), Leaders: leaders})
		}
	}
	return out
}

// failovers pairs each stop with the first leadership that started at or
// after it, anywhere: the failover time is the gap between the two. A stop
// with no later leadership is unresolved.
func failovers(stops []stop, ls []leadership, base time.Time) []Failover {
	starts := make([]leadership, len(ls))
	copy(starts, ls)
	sort.SliceStable(starts, func(i, j int) bool { return starts[i].start.Before(starts[j].start) })

	out := make([]Failover, 0, len(stops))
	for _, s := range stops {
		f := Failover{At: s.at.Sub(base), Stopped: s.id}
		i := sort.Search(len(starts), func(i int) bool { return !starts[i].start.Before(s.at) })
		if i < len(starts) {
			f.Resolved = true
			f.NewLeader = starts[i].id
			f.Duration = starts[i].start.Sub(s.at)
		}
		out = append(out, f)
	}
	return out
}

// failoverStats summarises the resolved failovers: min, median (nearest
// rank) and max. There are few of them, so sorting is fine here.
func failoverStats(fs []Failover) FailoverStats {
	st := FailoverStats{Count: len(fs)}
	var ds []time.Duration
	for _, f := range fs {
		if f.Resolved {
			ds = append(ds, f.Duration)
		}
	}
	st.Resolved = len(ds)
	if len(ds) == 0 {
		return st
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	st.Min = ds[0]
	st.P50 = ds[(len(ds)+1)/2-1]
	st.Max = ds[len(ds)-1]
	return st
}

// transitions counts changes of the Lease holder as a watcher saw them: a
// non-empty holder that differs from the previous non-empty one. Releases
// (an empty holder) are not transitions; the first holder is not either.
func transitions(holders []string) int {
	n := 0
	last := ""
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
	if !to.After(from) {
		return 0, 0
	}
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	open := 0
	for _, l := range ls {
		e := l.end
		if e.IsZero() || e.After(to) {
			e = to
		}
		if !e.After(l.start) || !e.After(from) || !l.start.Before(to) {
			continue
		}
		if !l.start.After(from) {
			open++
		} else {
			edges = append(edges, edge{l.start, 1})
		}
		if e.Before(to) {
			edges = append(edges, edge{e, -1})
		}
	}
	// Ends first at the same instant, as in overlaps.
	sort.SliceStable(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	last := from
	account := func(until time.Time) {
		switch {
		case open == 0:
			leaderless += until.Sub(last)
		case open >= 2:
			overlap += until.Sub(last)
		}
		last = until
	}
	for _, e := range edges {
		account(e.at)
		open += e.delta
	}
	account(to)
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
			aEnd := a.end
			if aEnd.IsZero() {
				aEnd = end
			}
			if !aEnd.After(b.start) {
				continue
			}
			out = append(out, Theft{At: b.start.Sub(base), Victim: a.id, Thief: b.id, Detection: aEnd.Sub(b.start), Ongoing: a.end.IsZero()})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// leadershipOf returns id's leadership (an identity leads at most once).
func leadershipOf(ls []leadership, id string) (leadership, bool) {
	for _, l := range ls {
		if l.id == id {
			return l, true
		}
	}
	return leadership{}, false
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
			healed := f.healed
			if healed.IsZero() {
				healed = end
			}
			fr.Duration = healed.Sub(f.at)
		}
		// The taking: the first successful Lease write after the fault
		// naming a holder other than the victim.
		var taken, next time.Time
		for _, w := range log {
			if w.OK && !w.End.Before(f.at) && w.End.Before(to) && w.Holder != "" && (next.IsZero() || w.End.Before(next)) {
				next, fr.NextHolder = w.End, w.Holder
			}
			if w.OK && !w.End.Before(f.at) && w.End.Before(to) && w.Holder != "" && w.Holder != f.victim {
				if taken.IsZero() || w.End.Before(taken) {
					taken, fr.TakenBy = w.End, w.Holder
				}
			}
		}
		if !next.IsZero() {
			fr.NextHolderAfter = next.Sub(f.at)
		}
		if !taken.IsZero() {
			fr.Taken, fr.TakenAfter = true, taken.Sub(f.at)
		}
		if l, ok := leadershipOf(ls, f.victim); ok && !l.end.IsZero() && l.end.Before(to) {
			fr.VictimStopped, fr.StoppedAfter = true, l.end.Sub(f.at)
			if fr.Taken {
				fr.Detection = l.end.Sub(taken)
			}
		} else if fr.Taken {
			fr.Detection = to.Sub(taken)
		}
		fr.Leaderless, fr.Overlap = coverage(ls, f.at, to)
		for _, w := range log {
			if !w.End.Before(f.at) && w.End.Before(to) {
				fr.LeaseWrites++
				if w.Conflict {
					fr.LeaseConflicts++
				}
			}
		}
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
