package leaderelection

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
)

// Names of the checks the scenario reports (Checks).
const (
	CheckOneLeader  = "leader election: exactly one leader at a time"
	CheckFencing    = "leader election: the fencing token refuses every deposed leader's write"
	CheckCandidates = "leader election: every candidate process ran to the end" // with the pause fault
)

// Report holds the leader-election scenario's figures. Times ("At") are
// offsets from the moment the candidates were started (Start). The
// leaderships, transitions and failovers cover the whole run, warm-up
// included; the Lease requests by phase cover the measured window, as the
// server cross-check does.
type Report struct {
	// Candidates is the number of candidates running at any time.
	Candidates int
	// ReleaseOnCancel says whether a stopped leader released the Lease.
	ReleaseOnCancel bool
	// LeaseDurationSeconds is what the Lease recorded: client-go stores
	// whole seconds, and followers wait that long, not the configured value.
	LeaseDurationSeconds int
	// Lock is the lock implementation: client-go or watch.
	Lock string
	// Fault is the fault injected ("" for none); SkewedLeaseSeconds the
	// skewed candidate's lease with the skew fault.
	Fault              string
	SkewedLeaseSeconds int
	// CandidatesLost, with the pause fault, says how each candidate
	// process that ended before the run stopped it ended.
	CandidatesLost []string

	// TimeToFirstLeader is from starting the candidates to the first
	// OnStartedLeading, FirstLeader's; both zero when none was elected.
	TimeToFirstLeader time.Duration
	FirstLeader       string
	// Leaderships counts OnStartedLeading callbacks over the whole run.
	Leaderships int
	// Transitions counts holder changes seen by watching the Lease: a new
	// non-empty holder that differs from the previous one.
	Transitions int
	// LeaseTransitions is the Lease's own spec.leaseTransitions at the end,
	// as client-go counted it.
	LeaseTransitions int
	// LostLeadership counts leaders that stopped on their own because a
	// renewal did not succeed within the renew deadline.
	LostLeadership int

	// FailoverTime summarises the failovers: every leader the scenario
	// stopped.
	FailoverTime FailoverStats

	// Acquire, Renew and Release count the measured window's Lease
	// requests by phase: acquire while a candidate does not hold the Lease,
	// renew while it does, release when a stopped leader gives it up
	// (ReleaseOnCancel).
	Acquire, Renew, Release LeasePhase
	// Intruder counts the delete and edit faults' requests (sent through
	// a measured client, so the server cross-check counts them too).
	Intruder LeasePhase

	// Faults lists every fault injected, with what followed it.
	Faults []FaultReport
	// Thefts lists every leadership that began while another candidate
	// still believed it led.
	Thefts []Theft
	// Leaderless is the time, from the first leader on, during which no
	// candidate believed it led.
	Leaderless time.Duration
	// LeaderWrites are the writes of the fenced ConfigMap that candidates
	// made while they believed they led.
	LeaderWrites *LeaderWrites

	// Overlaps lists every span during which two or more candidates
	// believed they led (none is the expected outcome); OverlapTotal is
	// their summed duration.
	Overlaps     []Overlap
	OverlapTotal time.Duration
}

// LeaderWrites are the leader-only writes: each candidate, while it
// believes it leads, writes the fenced ConfigMap with its identity and its
// fencing token (the resourceVersion of its last Lease write naming it
// holder). Counts cover the whole run, warm-up included, but Measured.
type LeaderWrites struct {
	// Writes is every write sent; Accepted those the apiserver took.
	Writes, Accepted int
	// Measured is the writes in the measured window (the server
	// cross-check's PUT configmaps).
	Measured int64
	// Deposed is the accepted writes whose writer no longer held the
	// Lease when the apiserver accepted them: the damage a stolen lease
	// does.
	Deposed int
	// WouldBeFenced is the accepted writes a fencing check would have
	// refused: their token older than the revision at which the Lease last
	// changed hands. It may exceed Deposed: a leader whose deleted Lease
	// it re-created itself has a new token, and a write it sent with the
	// old one is refused although it still leads.
	WouldBeFenced int
	// Unfenced is the deposed writes the fencing check would have let
	// through: none, when the token does its job.
	Unfenced int
	// Unclassified is set when resourceVersions were not numbers (not
	// etcd revisions), so Deposed and WouldBeFenced could not be told.
	Unclassified bool
}

// FaultReport is one injected fault and what followed it, up to the next
// fault (or the end).
type FaultReport struct {
	// Kind is pause, partition, delete or edit; At when it was injected
	// (as every At in the report, from the measured window's start);
	// Victim the leader it hit.
	Kind   string
	At     time.Duration
	Victim string
	// Duration is how long a pause or partition lasted.
	Duration time.Duration
	// Failed says why a delete or edit failed.
	Failed string
	// Taken: another holder (a candidate, or the intruder of the edit
	// fault) took the Lease, TakenAfter the fault, by TakenBy.
	Taken      bool
	TakenBy    string
	TakenAfter time.Duration
	// NextHolder is the first holder any write named after the fault
	// (the victim itself when it re-created a deleted Lease), NextHolderAfter
	// the fault.
	NextHolder      string
	NextHolderAfter time.Duration
	// VictimStopped: the victim stopped believing it led, StoppedAfter
	// the fault.
	VictimStopped bool
	StoppedAfter  time.Duration
	// Detection is from the taking to the victim's step-down (to the end
	// of the window if it never stepped down): how long a deposed leader
	// went on believing. Negative: it stepped down that long before the
	// Lease was taken. Meaningful only when Taken.
	Detection time.Duration
	// Overlap and Leaderless are the time, in the window, with two or
	// more leaders and with none.
	Overlap, Leaderless time.Duration
	// LeaseWrites and LeaseConflicts count the Lease writes answered in
	// the window, and their 409s.
	LeaseWrites, LeaseConflicts int
	// DeposedWrites are the victim's leader-only writes accepted after it
	// lost the Lease; WouldBeFenced those a fencing check would refuse.
	DeposedWrites, WouldBeFenced int
}

// Theft is a leadership that Thief began At while Victim still believed
// it led; Detection is from then to Victim's step-down, and Ongoing says
// Victim still believed it led at the end.
type Theft struct {
	At            time.Duration
	Victim, Thief string
	Detection     time.Duration
	Ongoing       bool
}

// Failover is one stop of the leader Stopped, At, and what followed:
// when Resolved (a candidate started leading before the end), NewLeader
// did, Duration after the stop.
type Failover struct {
	At                 time.Duration
	Stopped, NewLeader string
	Resolved           bool
	Duration           time.Duration
}

// FailoverStats counts the failovers and those Resolved, and summarises
// the resolved ones' durations.
type FailoverStats struct {
	Count, Resolved int
	Min, P50, Max   time.Duration
}

// LeasePhase counts the Lease requests of one phase: Reads (GETs),
// Writes (creates and updates), Conflicts (writes answered 409: a stale
// resourceVersion, or AlreadyExists for a lost create race) and Errors
// (other failed requests, reads and writes).
type LeasePhase struct {
	Reads, Writes, Conflicts, Errors int64
}

// Overlap is a span, from At for Duration, during which two or more
// candidates, Leaders, believed they led.
type Overlap struct {
	At, Duration time.Duration
	Leaders      []string
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

// Figures are the election's figures: how it ran, its leaderships and
// failovers, the Lease requests by phase, and each fault, theft and
// overlap with what followed (numbered from 1 by the label fault, theft
// or span); identities are labels. Times ("At") are from the start of
// the candidates.
func (r *Report) Figures() []results.Figure {
	var out []results.Figure
	// add appends a figure with labels kv (key, value, ...; none of an
	// empty value).
	add := func(f results.Figure, kv ...string) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				continue
			}
			if f.Labels == nil {
				f.Labels = map[string]string{}
			}
			f.Labels[kv[i]] = kv[i+1]
		}
		out = append(out, f)
	}
	count, boolean, dur, lower := results.UnitCount, results.UnitBool, results.UnitDuration, results.BetterLower
	add(results.Figure{Name: "candidates", Value: float64(r.Candidates), Unit: count, Help: "Candidates running at any time, with the lock they use."}, "lock", r.Lock)
	add(results.Figure{Name: "leaseDuration", Value: float64(time.Duration(r.LeaseDurationSeconds) * time.Second), Unit: dur, Help: "The lease duration the Lease recorded (whole seconds): what followers wait."})
	add(results.Figure{Name: "releaseOnCancel", Value: one(r.ReleaseOnCancel), Unit: boolean, Help: "A stopped leader releases the Lease (else followers wait the lease out)."})
	if r.FirstLeader != "" {
		add(results.Figure{Name: "timeToFirstLeader", Value: float64(r.TimeToFirstLeader), Unit: dur, Better: lower, Help: "From starting the candidates to the first leader."})
		add(results.Figure{Name: "firstLeader", Value: 1, Unit: boolean, Help: "The first candidate to lead, by its label candidate."}, "candidate", r.FirstLeader)
		add(results.Figure{Name: "leaderless", Value: float64(r.Leaderless), Unit: dur, Better: lower, Help: "Time since the first leader during which no candidate believed it led."})
	}
	add(results.Figure{Name: "leaderships", Value: float64(r.Leaderships), Unit: count, Sum: true, Help: "Leaderships begun (a candidate's OnStartedLeading), warm-up included."})
	add(results.Figure{Name: "transitions", Value: float64(r.Transitions), Unit: count, Sum: true, Help: "Changes of the Lease's holder seen on its watch."})
	add(results.Figure{Name: "leaseTransitions", Value: float64(r.LeaseTransitions), Unit: count, Help: "The Lease's spec.leaseTransitions at the end, as client-go counted."})
	add(results.Figure{Name: "lostLeadership", Value: float64(r.LostLeadership), Unit: count, Sum: true, Better: lower, Help: "Leaderships lost on renew (not stopped by the scenario)."})
	f := r.FailoverTime
	add(results.Figure{Name: "failovers", Value: float64(f.Count), Unit: count, Sum: true, Help: "Leaders the scenario stopped."})
	add(results.Figure{Name: "failoversResolved", Value: float64(f.Resolved), Unit: count, Sum: true, Help: "Stopped leaders followed by a new leader before the end."})
	if f.Resolved > 0 {
		for i, d := range []time.Duration{f.Min, f.P50, f.Max} {
			add(results.Figure{Name: "failoverTime", Value: float64(d), Unit: dur, Better: lower, Help: "From stopping the leader to the next leader (quantile 0: min, 1: max)."}, "quantile", []string{"0", "0.5", "1"}[i])
		}
	}
	for i, c := range []LeasePhase{r.Acquire, r.Renew, r.Release, r.Intruder} {
		phase := []string{"acquire", "renew", "release", "intruder"}[i]
		if phase == "intruder" && c == (LeasePhase{}) {
			continue
		}
		add(results.Figure{Name: "leaseWrites", Value: float64(c.Writes), Unit: count, Sum: true, Help: "Lease creates and updates in the measured window, by phase."}, "phase", phase)
		add(results.Figure{Name: "leaseConflicts", Value: float64(c.Conflicts), Unit: count, Sum: true, Better: lower, Help: "Lease writes answered 409 in the measured window, by phase."}, "phase", phase)
		add(results.Figure{Name: "leaseReads", Value: float64(c.Reads), Unit: count, Sum: true, Help: "Lease GETs in the measured window, by phase."}, "phase", phase)
		add(results.Figure{Name: "leaseErrors", Value: float64(c.Errors), Unit: count, Sum: true, Better: lower, Help: "Lease requests that failed otherwise in the measured window, by phase."}, "phase", phase)
	}
	switch {
	case r.Fault == FaultSkew:
		add(results.Figure{Name: "skewedLeaseDuration", Value: float64(time.Duration(r.SkewedLeaseSeconds) * time.Second), Unit: dur, Help: "The skew fault's last candidate's lease duration, against the others' leaseDuration."})
	case r.Fault != "":
		add(results.Figure{Name: "faults", Value: float64(len(r.Faults)), Unit: count, Sum: true, Help: "Faults injected, of the kind its label says."}, "kind", r.Fault)
	}
	for i, x := range r.Faults {
		n := strconv.Itoa(i + 1)
		add(results.Figure{Name: "faultAt", Value: float64(x.At), Unit: dur, Help: "When the fault was injected, from the start of the measured window: its kind, its victim, who took the Lease, its first holder after, why it failed."},
			"fault", n, "kind", x.Kind, "victim", x.Victim, "takenBy", x.TakenBy, "nextHolder", x.NextHolder, "failed", x.Failed)
		if x.Duration > 0 {
			add(results.Figure{Name: "faultDuration", Value: float64(x.Duration), Unit: dur, Help: "How long the pause or partition lasted."}, "fault", n)
		}
		add(results.Figure{Name: "faultTaken", Value: one(x.Taken), Unit: boolean, Help: "Another holder took the Lease after the fault."}, "fault", n)
		if x.Taken {
			add(results.Figure{Name: "faultTakenAfter", Value: float64(x.TakenAfter), Unit: dur, Better: lower, Help: "From the fault to another holder taking the Lease."}, "fault", n)
		}
		if x.NextHolder != "" {
			add(results.Figure{Name: "faultNextHolderAfter", Value: float64(x.NextHolderAfter), Unit: dur, Help: "From the fault to the first Lease write naming a holder (the victim's own, if it re-created the Lease)."}, "fault", n)
		}
		add(results.Figure{Name: "faultVictimStopped", Value: one(x.VictimStopped), Unit: boolean, Better: results.BetterHigher, Help: "The victim stopped believing it led (before the next fault or the end)."}, "fault", n)
		if x.VictimStopped {
			add(results.Figure{Name: "faultStoppedAfter", Value: float64(x.StoppedAfter), Unit: dur, Better: lower, Help: "From the fault to the victim stepping down."}, "fault", n)
		}
		switch {
		case x.Taken && x.Detection >= 0:
			add(results.Figure{Name: "faultDetection", Value: float64(x.Detection), Unit: dur, Better: lower, Help: "From the Lease's taking to the victim stepping down (or the end): how long a deposed leader believed it led."}, "fault", n)
		case x.Taken:
			add(results.Figure{Name: "faultSteppedDownEarly", Value: float64(-x.Detection), Unit: dur, Help: "How long before the Lease's taking the victim stepped down."}, "fault", n)
		}
		add(results.Figure{Name: "faultOverlap", Value: float64(x.Overlap), Unit: dur, Better: lower, Help: "Time after the fault with two or more leaders."}, "fault", n)
		add(results.Figure{Name: "faultLeaderless", Value: float64(x.Leaderless), Unit: dur, Better: lower, Help: "Time after the fault with no leader."}, "fault", n)
		add(results.Figure{Name: "faultLeaseWrites", Value: float64(x.LeaseWrites), Unit: count, Sum: true, Help: "Lease writes answered after the fault."}, "fault", n)
		add(results.Figure{Name: "faultLeaseConflicts", Value: float64(x.LeaseConflicts), Unit: count, Sum: true, Help: "Lease writes answered 409 after the fault."}, "fault", n)
		add(results.Figure{Name: "faultDeposedWrites", Value: float64(x.DeposedWrites), Unit: count, Sum: true, Better: lower, Help: "The victim's leader-only writes accepted after it lost the Lease."}, "fault", n)
		add(results.Figure{Name: "faultWouldBeFenced", Value: float64(x.WouldBeFenced), Unit: count, Sum: true, Help: "The victim's accepted writes after the fault that a fencing check would refuse."}, "fault", n)
	}
	if r.Fault != "" || len(r.Thefts) > 0 {
		add(results.Figure{Name: "thefts", Value: float64(len(r.Thefts)), Unit: count, Sum: true, Better: lower, Help: "Leaderships begun while another candidate still believed it led."})
	}
	for i, t := range r.Thefts {
		n := strconv.Itoa(i + 1)
		add(results.Figure{Name: "theftAt", Value: float64(t.At), Unit: dur, Help: "When the thief started leading while the victim believed it led, from the start of the measured window (negative: in the warm-up)."}, "theft", n, "thief", t.Thief, "victim", t.Victim)
		add(results.Figure{Name: "theftDetection", Value: float64(t.Detection), Unit: dur, Better: lower, Help: "From the theft to the victim stepping down (or the end)."}, "theft", n)
		add(results.Figure{Name: "theftOngoing", Value: one(t.Ongoing), Unit: boolean, Better: lower, Help: "The victim still believed it led at the end."}, "theft", n)
	}
	if w := r.LeaderWrites; w != nil {
		add(results.Figure{Name: "leaderWrites", Value: float64(w.Writes), Unit: count, Sum: true, Help: "Leader-only writes sent, warm-up included."})
		add(results.Figure{Name: "leaderWritesAccepted", Value: float64(w.Accepted), Unit: count, Sum: true, Help: "Leader-only writes the apiserver accepted, warm-up included."})
		add(results.Figure{Name: "leaderWritesMeasured", Value: float64(w.Measured), Unit: count, Sum: true, Help: "Leader-only writes in the measured window."})
		add(results.Figure{Name: "leaderWritesUnclassified", Value: one(w.Unclassified), Unit: boolean, Help: "resourceVersions were not etcd revisions, so deposed writes were not told."})
		if !w.Unclassified {
			add(results.Figure{Name: "deposedWrites", Value: float64(w.Deposed), Unit: count, Sum: true, Better: lower, Help: "Accepted leader-only writes from a candidate that no longer held the Lease."})
			add(results.Figure{Name: "wouldBeFenced", Value: float64(w.WouldBeFenced), Unit: count, Sum: true, Help: "Accepted leader-only writes a fencing token check would have refused."})
			add(results.Figure{Name: "unfencedWrites", Value: float64(w.Unfenced), Unit: count, Sum: true, Better: lower, Help: "Deposed leaders' writes a fencing token check would have let through."})
		}
	}
	add(results.Figure{Name: "overlaps", Value: float64(len(r.Overlaps)), Unit: count, Sum: true, Better: lower, Help: "Spans in which two or more candidates believed they led."})
	add(results.Figure{Name: "overlap", Value: float64(r.OverlapTotal), Unit: dur, Better: lower, Help: "Time since the first leader during which two or more candidates believed they led."})
	for i, o := range r.Overlaps {
		n := strconv.Itoa(i + 1)
		add(results.Figure{Name: "overlapAt", Value: float64(o.At), Unit: dur, Help: "When a span with two or more leaders began, from the start of the measured window (negative: in the warm-up), and who they were."}, "span", n, "leaders", strings.Join(o.Leaders, ","))
		add(results.Figure{Name: "overlapSpan", Value: float64(o.Duration), Unit: dur, Better: lower, Help: "How long a span with two or more leaders lasted."}, "span", n)
	}
	return out
}

// one is 1 for true, 0 for false: a bool figure's value.
func one(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
