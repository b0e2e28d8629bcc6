package leaderelection

import (
	"fmt"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/results"
)

// CheckOneLeader names the check that no two candidates led at once.
const CheckOneLeader = "leader election: exactly one leader at a time"

// Report holds the leader-election scenario's figures. Times ("At") are
// offsets from the moment the candidates were started (Start). The
// leaderships, transitions and failovers cover the whole run, warm-up
// included; the Lease requests by phase cover the measured window, as the
// server cross-check does.
type Report struct {
	// Candidates is the number of candidates running at any time.
	Candidates int `json:"candidates"`
	// ReleaseOnCancel says whether a stopped leader released the Lease.
	ReleaseOnCancel bool `json:"releaseOnCancel"`
	// LeaseDurationSeconds is what the Lease recorded: client-go stores
	// whole seconds, and followers wait that long, not the configured value.
	LeaseDurationSeconds int `json:"leaseDurationSeconds"`

	// TimeToFirstLeader is from starting the candidates to the first
	// OnStartedLeading; zero with FirstLeader empty when none was elected.
	TimeToFirstLeader time.Duration `json:"timeToFirstLeader"`
	// FirstLeader is the identity of the first leader.
	FirstLeader string `json:"firstLeader,omitempty"`
	// Leaderships counts OnStartedLeading callbacks over the whole run.
	Leaderships int `json:"leaderships"`
	// Transitions counts holder changes seen by watching the Lease: a new
	// non-empty holder that differs from the previous one.
	Transitions int `json:"transitions"`
	// LeaseTransitions is the Lease's own spec.leaseTransitions at the end,
	// as client-go counted it.
	LeaseTransitions int `json:"leaseTransitions"`
	// LostLeadership counts leaders that stopped on their own because a
	// renewal did not succeed within the renew deadline.
	LostLeadership int `json:"lostLeadership"`

	// Failovers lists every leader the scenario stopped, in order.
	Failovers []Failover `json:"failovers,omitempty"`
	// FailoverTime summarises the resolved failovers.
	FailoverTime FailoverStats `json:"failoverTime"`

	// Acquire, Renew and Release count the measured window's Lease
	// requests by phase: acquire while a candidate does not hold the Lease,
	// renew while it does, release when a stopped leader gives it up
	// (ReleaseOnCancel).
	Acquire LeasePhase `json:"acquire"`
	Renew   LeasePhase `json:"renew"`
	Release LeasePhase `json:"release"`

	// Overlaps lists every span during which two or more candidates
	// believed they led. None is the expected outcome.
	Overlaps []Overlap `json:"overlaps,omitempty"`
	// OverlapTotal is the summed duration of Overlaps.
	OverlapTotal time.Duration `json:"overlapTotal"`
}

// LeaseWrites is the number of Lease writes (creates and updates) in every
// phase, 409s and errors included.
func (r *Report) LeaseWrites() int64 {
	return r.Acquire.Writes + r.Renew.Writes + r.Release.Writes
}

// Failover is one stop of the current leader and what followed.
type Failover struct {
	// At is when the leader was stopped.
	At time.Duration `json:"at"`
	// Stopped is the identity of the stopped leader.
	Stopped string `json:"stopped"`
	// NewLeader is the next candidate to start leading, if any did.
	NewLeader string `json:"newLeader,omitempty"`
	// Resolved is false when no candidate started leading before the end.
	Resolved bool `json:"resolved"`
	// Duration is from the stop to the next OnStartedLeading anywhere.
	Duration time.Duration `json:"duration,omitempty"`
}

// FailoverStats summarises failover durations.
type FailoverStats struct {
	// Count is the number of failovers; Resolved those that ended with a new leader.
	Count    int `json:"count"`
	Resolved int `json:"resolved"`
	// Min, P50 and Max of the resolved failovers' durations.
	Min time.Duration `json:"min"`
	P50 time.Duration `json:"p50"`
	Max time.Duration `json:"max"`
}

// LeasePhase counts the Lease requests of one phase.
type LeasePhase struct {
	// Reads counts GETs of the Lease.
	Reads int64 `json:"reads"`
	// Writes counts creates and updates; Conflicts those answered 409
	// (a stale resourceVersion, or AlreadyExists for a lost create race).
	Writes    int64 `json:"writes"`
	Conflicts int64 `json:"conflicts"`
	// Errors counts other failed requests (reads and writes).
	Errors int64 `json:"errors"`
}

// Overlap is a span during which two or more candidates believed they led.
type Overlap struct {
	// At is when the span started.
	At time.Duration `json:"at"`
	// Duration of the span.
	Duration time.Duration `json:"duration"`
	// Leaders are the identities that believed they led during the span.
	Leaders []string `json:"leaders"`
}

// Checks is the one-leader check: no span in which two candidates
// believed they led.
func (r *Report) Checks() []results.Check {
	c := results.Check{Name: CheckOneLeader, Passed: len(r.Overlaps) == 0, Observed: int64(len(r.Overlaps))}
	if !c.Passed {
		c.Detail = fmt.Sprintf("%d spans, %s in total, in which two or more candidates believed they led at once",
			len(r.Overlaps), results.FormatDuration(r.OverlapTotal))
	}
	return []results.Check{c}
}

// Rows are the leader-election lines of the summary.
func (r *Report) Rows() [][2]string {
	ms := results.FormatDuration
	release := "lease kept on stop"
	if r.ReleaseOnCancel {
		release = "release on cancel"
	}
	rows := [][2]string{{"leader election", fmt.Sprintf("%d candidates, lease %ds, %s", r.Candidates, r.LeaseDurationSeconds, release)}}
	add := func(name, format string, a ...any) { rows = append(rows, [2]string{name, fmt.Sprintf(format, a...)}) }
	if r.FirstLeader == "" {
		add("  first leader", "none elected")
	} else {
		add("  first leader", "%s after %s", r.FirstLeader, ms(r.TimeToFirstLeader))
	}
	add("  transitions", "%d seen on the Lease (leaseTransitions %d), %d leaderships, %d lost on renew",
		r.Transitions, r.LeaseTransitions, r.Leaderships, r.LostLeadership)
	switch f := r.FailoverTime; {
	case f.Count == 0:
		add("  failovers", "none (no leader was stopped)")
	case f.Resolved == 0:
		add("  failovers", "%d, none resolved before the end", f.Count)
	default:
		add("  failovers", "%d (%d resolved): min %s  p50 %s  max %s", f.Count, f.Resolved, ms(f.Min), ms(f.P50), ms(f.Max))
	}
	add("  lease writes", "%d: acquire %d (409: %d)  renew %d (409: %d)  release %d (409: %d)",
		r.LeaseWrites(), r.Acquire.Writes, r.Acquire.Conflicts, r.Renew.Writes, r.Renew.Conflicts, r.Release.Writes, r.Release.Conflicts)
	add("  lease reads", "%d (other errors: %d)",
		r.Acquire.Reads+r.Renew.Reads+r.Release.Reads, r.Acquire.Errors+r.Renew.Errors+r.Release.Errors)
	if len(r.Overlaps) == 0 {
		add("  overlap", "none: exactly one leader at a time")
		return rows
	}
	add("  overlap", "%s, %s in total: TWO LEADERS AT ONCE", results.Plural(len(r.Overlaps), "span"), ms(r.OverlapTotal))
	for _, o := range r.Overlaps {
		add("", "at %s for %s: %s", ms(o.At), ms(o.Duration), strings.Join(o.Leaders, ", "))
	}
	return rows
}
