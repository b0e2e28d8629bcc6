package leaderelection

import (
	"slices"
	"time"

	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

var _ scenario.Live = (*election)(nil)

// Live is the election as it stands: how many candidates believe they
// lead now, the leaderships and Lease transitions so far, leaderships
// lost on renew, and, since the first leader, how long no candidate led
// and two or more did at once. Those two are gauges: a leadership's end
// arrives a moment after it happened, which can shorten what was counted
// as overlap until then.
func (r *election) Live() []live.Gauge {
	r.mu.Lock()
	defer r.mu.Unlock()
	var leaderless, overlap time.Duration
	if len(r.leaderships) > 0 {
		first := slices.MinFunc(r.leaderships, byStart).start
		leaderless, overlap = coverage(r.leaderships, first, time.Now())
	}
	return []live.Gauge{
		{Name: "leaders", Help: "Candidates that believe they lead now: more than 1 is two leaders at once.", Value: float64(len(r.leading))},
		{Name: "leaderships_total", Help: "Leaderships begun (a candidate's OnStartedLeading), warm-up included.", Counter: true, Value: float64(len(r.leaderships))},
		{Name: "lease_transitions_total", Help: "Changes of the Lease's holder seen on its watch.", Counter: true, Value: float64(transitions(r.holders))},
		{Name: "lost_leadership_total", Help: "Leaderships lost on renew (not stopped by the scenario).", Counter: true, Value: float64(r.losses)},
		{Name: "leaderless_seconds", Help: "Time since the first leader during which no candidate believed it led.", Value: leaderless.Seconds()},
		{Name: "overlap_seconds", Help: "Time since the first leader during which two or more candidates believed they led.", Value: overlap.Seconds()},
	}
}
