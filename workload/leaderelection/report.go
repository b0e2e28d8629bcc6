package leaderelection

import (
	"fmt"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
)

// CheckOneLeader names the check that no two candidates led at once.
const CheckOneLeader = "leader election: exactly one leader at a time"

// CheckFencing names the check that a fencing token would have refused
// every leader-only write accepted from a deposed leader.
const CheckFencing = "leader election: the fencing token refuses every deposed leader's write"

// CheckCandidates names the check, with the pause fault, that every
// candidate process ran until the run stopped it.
const CheckCandidates = "leader election: every candidate process ran to the end"

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
	// Lock is the lock implementation: client-go or watch.
	Lock string `json:"lock,omitempty"`
	// Fault is the fault injected ("" for none); SkewedLeaseSeconds the
	// skewed candidate's lease with the skew fault.
	Fault              string `json:"fault,omitempty"`
	SkewedLeaseSeconds int    `json:"skewedLeaseSeconds,omitempty"`
	// CandidatesLost, with the pause fault, says how each candidate
	// process that ended before the run stopped it ended.
	CandidatesLost []string `json:"candidatesLost,omitempty"`

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
	// Intruder counts the delete and edit faults' requests (sent through
	// a measured client, so the server cross-check counts them too).
	Intruder LeasePhase `json:"intruder,omitzero"`

	// Faults lists every fault injected, with what followed it.
	Faults []FaultReport `json:"faults,omitempty"`
	// Thefts lists every leadership that began while another candidate
	// still believed it led.
	Thefts []Theft `json:"thefts,omitempty"`
	// Leaderless is the time, from the first leader on, during which no
	// candidate believed it led.
	Leaderless time.Duration `json:"leaderless"`
	// LeaderWrites are the writes of the fenced ConfigMap that candidates
	// made while they believed they led.
	LeaderWrites *LeaderWrites `json:"leaderWrites,omitempty"`

	// Overlaps lists every span during which two or more candidates
	// believed they led. None is the expected outcome.
	Overlaps []Overlap `json:"overlaps,omitempty"`
	// OverlapTotal is the summed duration of Overlaps.
	OverlapTotal time.Duration `json:"overlapTotal"`
}

// LeaseWrites is the number of Lease writes (creates and updates) in every
// phase, 409s and errors included.
func (r *Report) LeaseWrites() int64 {
	return r.Acquire.Writes + r.Renew.Writes + r.Release.Writes + r.Intruder.Writes
}

// LeaderWrites are the leader-only writes: each candidate, while it
// believes it leads, writes the fenced ConfigMap with its identity and its
// fencing token (the resourceVersion of its last Lease write naming it
// holder). Counts cover the whole run, warm-up included, but Measured.
type LeaderWrites struct {
	// Writes is every write sent; Accepted those the apiserver took.
	Writes   int `json:"writes"`
	Accepted int `json:"accepted"`
	// Measured is the writes in the measured window (the server
	// cross-check's PUT configmaps).
	Measured int64 `json:"measured"`
	// Deposed is the accepted writes whose writer no longer held the
	// Lease when the apiserver accepted them: the damage a stolen lease
	// does.
	Deposed int `json:"deposed"`
	// WouldBeFenced is the accepted writes a fencing check would have
	// refused: their token older than the revision at which the Lease last
	// changed hands. It may exceed Deposed: a leader whose deleted Lease
	// it re-created itself has a new token, and a write it sent with the
	// old one is refused although it still leads.
	WouldBeFenced int `json:"wouldBeFenced"`
	// Unfenced is the deposed writes the fencing check would have let
	// through: none, when the token does its job.
	Unfenced int `json:"unfenced"`
	// Unclassified is set when resourceVersions were not numbers (not
	// etcd revisions), so Deposed and WouldBeFenced could not be told.
	Unclassified bool `json:"unclassified,omitempty"`
}

// FaultReport is one injected fault and what followed it, up to the next
// fault (or the end).
type FaultReport struct {
	// Kind is pause, partition, delete or edit; At when it was injected;
	// Victim the leader it hit.
	Kind   string        `json:"kind"`
	At     time.Duration `json:"at"`
	Victim string        `json:"victim"`
	// Duration is how long a pause or partition lasted.
	Duration time.Duration `json:"duration,omitempty"`
	// Failed says why a delete or edit failed.
	Failed string `json:"failed,omitempty"`
	// Taken: another holder (a candidate, or the intruder of the edit
	// fault) took the Lease, TakenAfter the fault, by TakenBy.
	Taken      bool          `json:"taken"`
	TakenBy    string        `json:"takenBy,omitempty"`
	TakenAfter time.Duration `json:"takenAfter,omitempty"`
	// NextHolder is the first holder any write named after the fault
	// (the victim itself when it re-created a deleted Lease), NextHolderAfter
	// the fault.
	NextHolder      string        `json:"nextHolder,omitempty"`
	NextHolderAfter time.Duration `json:"nextHolderAfter,omitempty"`
	// VictimStopped: the victim stopped believing it led, StoppedAfter
	// the fault.
	VictimStopped bool          `json:"victimStopped"`
	StoppedAfter  time.Duration `json:"stoppedAfter,omitempty"`
	// Detection is from the taking to the victim's step-down (to the end
	// of the window if it never stepped down): how long a deposed leader
	// went on believing. Negative: it stepped down that long before the
	// Lease was taken. Meaningful only when Taken.
	Detection time.Duration `json:"detection,omitempty"`
	// Overlap and Leaderless are the time, in the window, with two or
	// more leaders and with none.
	Overlap    time.Duration `json:"overlap"`
	Leaderless time.Duration `json:"leaderless"`
	// LeaseWrites and LeaseConflicts count the Lease writes answered in
	// the window, and their 409s.
	LeaseWrites    int `json:"leaseWrites"`
	LeaseConflicts int `json:"leaseConflicts"`
	// DeposedWrites are the victim's leader-only writes accepted after it
	// lost the Lease; WouldBeFenced those a fencing check would refuse.
	DeposedWrites int `json:"deposedWrites"`
	WouldBeFenced int `json:"wouldBeFenced"`
}

// Theft is a leadership that began while another candidate still
// believed it led.
type Theft struct {
	// At is when the thief started leading.
	At time.Duration `json:"at"`
	// Victim believed it led when Thief started to.
	Victim string `json:"victim"`
	Thief  string `json:"thief"`
	// Detection is from the theft to the victim's step-down.
	Detection time.Duration `json:"detection"`
	// Ongoing: the victim still believed it led at the end.
	Ongoing bool `json:"ongoing,omitempty"`
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
//
// Under a fault two leaders are expected, so measured, not judged: the
// check there is the fencing one, that the fencing token tells the
// deposed leaders' writes apart.
func (r *Report) Checks() []results.Check {
	var checks []results.Check
	check := func(name string, observed int, detail string) {
		c := results.Check{Name: name, Observed: int64(observed), Passed: observed == 0}
		if !c.Passed {
			c.Detail = detail
		}
		checks = append(checks, c)
	}
	if r.Fault == "" {
		check(CheckOneLeader, len(r.Overlaps), fmt.Sprintf("%d spans, %s in total, in which two or more candidates believed they led at once",
			len(r.Overlaps), words.Duration(r.OverlapTotal)))
	}
	if r.Fault == FaultPause {
		check(CheckCandidates, len(r.CandidatesLost), "candidate processes ended during the run, so the figures lack what they would have done: "+strings.Join(r.CandidatesLost, "; "))
	}
	if w := r.LeaderWrites; w != nil && !w.Unclassified {
		check(CheckFencing, w.Unfenced, fmt.Sprintf("%d of the %d leader-only writes accepted from deposed leaders carried a token a fencing check would have let through", w.Unfenced, w.Deposed))
	}
	return checks
}

// Rows are the leader-election lines of the summary.
func (r *Report) Rows() [][2]string {
	ms := words.Duration
	release := "lease kept on stop"
	if r.ReleaseOnCancel {
		release = "release on cancel"
	}
	head := fmt.Sprintf("%d candidates, lease %ds, %s", r.Candidates, r.LeaseDurationSeconds, release)
	if r.Lock != "" {
		head += ", lock " + r.Lock
	}
	rows := [][2]string{{"leader election", head}}
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
	writes := fmt.Sprintf("%d: acquire %d (409: %d)  renew %d (409: %d)  release %d (409: %d)",
		r.LeaseWrites(), r.Acquire.Writes, r.Acquire.Conflicts, r.Renew.Writes, r.Renew.Conflicts, r.Release.Writes, r.Release.Conflicts)
	if r.Intruder != (LeasePhase{}) {
		writes += fmt.Sprintf("  intruder %d (409: %d)", r.Intruder.Writes, r.Intruder.Conflicts)
	}
	add("  lease writes", "%s", writes)
	add("  lease reads", "%d (other errors: %d)",
		r.Acquire.Reads+r.Renew.Reads+r.Release.Reads+r.Intruder.Reads, r.Acquire.Errors+r.Renew.Errors+r.Release.Errors+r.Intruder.Errors)
	// The faults, the thefts and the leader-only writes.
	switch {
	case r.Fault == FaultSkew:
		add("  fault", "skew: the last candidate runs with lease %ds against the others' %ds", r.SkewedLeaseSeconds, r.LeaseDurationSeconds)
	case r.Fault != "":
		add("  fault", "%s, %s", r.Fault, words.Plural(len(r.Faults), "injection"))
	}
	for _, f := range r.Faults {
		what := f.Kind
		if f.Duration > 0 {
			what += " for " + ms(f.Duration)
		}
		line := fmt.Sprintf("at %s %s of %s: ", ms(f.At), what, f.Victim)
		switch {
		case f.Failed != "":
			line += "failed: " + f.Failed
		case !f.Taken:
			line += "the Lease was not taken"
		default:
			line += fmt.Sprintf("taken by %s after %s", f.TakenBy, ms(f.TakenAfter))
		}
		switch {
		case f.VictimStopped && f.Taken && f.Detection < 0:
			line += fmt.Sprintf(", victim stepped down after %s (%s before the taking)", ms(f.StoppedAfter), ms(-f.Detection))
		case f.VictimStopped && f.Taken:
			line += fmt.Sprintf(", victim stepped down after %s (detection %s)", ms(f.StoppedAfter), ms(f.Detection))
		case f.VictimStopped:
			line += fmt.Sprintf(", victim stepped down after %s", ms(f.StoppedAfter))
		default:
			line += ", victim still leads"
		}
		add("", "%s", line)
		add("", "  overlap %s, leaderless %s, lease writes %d (409: %d), deposed writes %d (fencing refuses %d)",
			ms(f.Overlap), ms(f.Leaderless), f.LeaseWrites, f.LeaseConflicts, f.DeposedWrites, f.WouldBeFenced)
	}
	switch {
	case len(r.Thefts) > 0:
		add("  thefts", "%s: the Lease taken from a leader that still believed it led", words.Plural(len(r.Thefts), "theft"))
		for _, t := range r.Thefts {
			end := "stepped down"
			if t.Ongoing {
				end = "still leading at the end"
			}
			add("", "at %s %s from %s: %s %s later", ms(t.At), t.Thief, t.Victim, end, ms(t.Detection))
		}
	case r.Fault != "":
		add("  thefts", "none: no candidate started leading while another believed it led")
	}
	if r.Fault != "" {
		add("  leaderless", "%s in total", ms(r.Leaderless))
	}
	if w := r.LeaderWrites; w != nil {
		line := fmt.Sprintf("%d sent, %d accepted (%d measured)", w.Writes, w.Accepted, w.Measured)
		if w.Unclassified {
			line += ": resourceVersions are not etcd revisions, deposed writes not told"
		} else {
			line += fmt.Sprintf(": %d from deposed leaders, fencing token refuses %d", w.Deposed, w.WouldBeFenced)
			if w.Unfenced > 0 {
				line += fmt.Sprintf(", LETS %d DEPOSED WRITES THROUGH", w.Unfenced)
			}
		}
		add("  leader writes", "%s", line)
	}
	if len(r.Overlaps) == 0 {
		add("  overlap", "none: exactly one leader at a time")
		return rows
	}
	shout := "TWO LEADERS AT ONCE"
	if r.Fault != "" {
		shout = "two leaders at once"
	}
	add("  overlap", "%s, %s in total: %s", words.Plural(len(r.Overlaps), "span"), ms(r.OverlapTotal), shout)
	for _, o := range r.Overlaps {
		add("", "at %s for %s: %s", ms(o.At), ms(o.Duration), strings.Join(o.Leaders, ", "))
	}
	return rows
}
