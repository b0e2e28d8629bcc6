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
