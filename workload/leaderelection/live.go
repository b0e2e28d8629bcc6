package leaderelection

import (
	"slices"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

var _ scenario.Live = (*election)(nil)

// Live is the election as it stands: how many candidates believe they
// lead now, the leaderships and Lease transitions so far, leaderships
// lost on renew, and, since the first leader, how long no candidate led
// and two or more did at once. Those two are not counts that only grow: a
// leadership's end arrives a moment after it happened, which can shorten
// what was counted as overlap until then.
func (r *election) Live() []results.Figure {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{Leaderships: len(r.leaderships), Transitions: transitions(r.holders), LostLeadership: r.losses}
	if len(r.leaderships) > 0 {
		first := slices.MinFunc(r.leaderships, byStart)
		rep.FirstLeader = first.id
		rep.Leaderless, rep.OverlapTotal = coverage(r.leaderships, first.start, time.Now())
	}
	keep := map[string]bool{"leaderships": true, "transitions": true, "lostLeadership": true, "leaderless": true, "overlap": true}
	live := []results.Figure{{Name: "leaders", Value: float64(len(r.leading)), Unit: results.UnitCount,
		Help: "Candidates that believe they lead now: more than 1 is two leaders at once."}}
	for _, f := range rep.Figures() {
		if keep[f.Name] {
			live = append(live, f)
		}
	}
	return live
}
