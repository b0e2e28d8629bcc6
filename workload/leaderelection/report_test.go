package leaderelection

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/results"
)

// The report's figures, as a Result keeps them, for reports of every
// shape: what the summary said of the election, each as a named, typed
// figure (testdata/figures-*.golden), and every one valid.
func TestReportFigures(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		report Report
	}{
		{"release", Report{
			Candidates: 3, ReleaseOnCancel: true, LeaseDurationSeconds: 2,
			TimeToFirstLeader: 12345 * time.Microsecond, FirstLeader: "candidate-1.0",
			Leaderships: 4, Transitions: 3, LeaseTransitions: 3,
			FailoverTime: FailoverStats{Count: 3, Resolved: 2, Min: 205 * ms, P50: 205 * ms, Max: 310 * ms},
			Acquire:      LeasePhase{Reads: 40, Writes: 6, Conflicts: 2},
			Renew:        LeasePhase{Reads: 1, Writes: 30},
			Release:      LeasePhase{Reads: 3, Writes: 3}}},
		{"overlap", Report{
			Candidates: 2, LeaseDurationSeconds: 1,
			Leaderships: 2, Transitions: 1, LeaseTransitions: 1, LostLeadership: 1,
			FailoverTime: FailoverStats{Count: 1},
			Acquire:      LeasePhase{Reads: 10, Writes: 2, Conflicts: 1, Errors: 1},
			Renew:        LeasePhase{Writes: 5},
			Overlaps:     []Overlap{{At: 1500 * ms, Duration: 42 * ms, Leaders: []string{"candidate-0.0", "candidate-1.0"}}},
			OverlapTotal: 42 * ms}},
		{"nothing happened", Report{Candidates: 4, LeaseDurationSeconds: 4}},
		{"partition", Report{
			Candidates: 3, LeaseDurationSeconds: 2, Lock: LockWatch, Fault: FaultPartition,
			TimeToFirstLeader: 7 * ms, FirstLeader: "candidate-0.0", Leaderships: 2, Transitions: 1, LeaseTransitions: 1, LostLeadership: 1,
			Renew: LeasePhase{Writes: 30}, Acquire: LeasePhase{Writes: 1, Reads: 40},
			Faults: []FaultReport{{Kind: FaultPartition, At: 1500 * ms, Victim: "candidate-0.0", Duration: 4 * time.Second,
				Taken: true, TakenBy: "candidate-1.0", TakenAfter: 1920 * ms, VictimStopped: true, StoppedAfter: 862 * ms, Detection: -1058 * ms,
				Leaderless: 1058 * ms, LeaseWrites: 34, DeposedWrites: 1, WouldBeFenced: 1}},
			Leaderless:   1058 * ms,
			LeaderWrites: &LeaderWrites{Writes: 79, Accepted: 79, Measured: 74, Deposed: 1, WouldBeFenced: 1},
		}},
		{"pause with a theft", Report{Candidates: 3, LeaseDurationSeconds: 2, Lock: LockWatch, Fault: FaultPause,
			CandidatesLost:    []string{"candidate process 1 (pid 7) exited: signal: killed"},
			TimeToFirstLeader: 12345 * time.Microsecond, FirstLeader: "candidate-1.0", Leaderships: 3, Transitions: 2,
			Intruder: LeasePhase{Writes: 1},
			Faults: []FaultReport{{Kind: FaultPause, At: 2 * time.Second, Victim: "candidate-1.0", Duration: 4 * time.Second,
				Taken: true, TakenBy: "candidate-0.0", TakenAfter: 2100 * ms, NextHolder: "candidate-0.0", NextHolderAfter: 2100 * ms,
				VictimStopped: true, StoppedAfter: 4010 * ms, Detection: 1910 * ms, Overlap: 1910 * ms, Leaderless: 100 * ms,
				LeaseWrites: 20, LeaseConflicts: 1, DeposedWrites: 2, WouldBeFenced: 2}},
			Thefts:       []Theft{{At: 4100 * ms, Victim: "candidate-1.0", Thief: "candidate-0.0", Detection: 1910 * ms}},
			Leaderless:   100 * ms,
			LeaderWrites: &LeaderWrites{Writes: 90, Accepted: 88, Measured: 80, Deposed: 2, WouldBeFenced: 2},
			Overlaps:     []Overlap{{At: 4100 * ms, Duration: 1910 * ms, Leaders: []string{"candidate-0.0", "candidate-1.0"}}}, OverlapTotal: 1910 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			figures := tt.report.Figures()
			if errs := results.ValidateFigures(field.NewPath("figures"), figures); len(errs) > 0 {
				t.Errorf("the figures do not validate: %v", errs)
			}
			var b strings.Builder
			for _, f := range figures {
				v := fmt.Sprint(f.Value)
				if f.Unit == results.UnitDuration {
					v = time.Duration(f.Value).String()
				}
				about := string(f.Unit)
				if f.Sum {
					about += ", sum"
				}
				if f.Better != "" {
					about += ", better " + string(f.Better)
				}
				fmt.Fprintf(&b, "%s %s (%s): %s\n", f.Key(), v, about, f.Help)
			}
			golden.Check(t, "figures-"+strings.ReplaceAll(tt.name, " ", "-")+".golden", []byte(b.String()))
		})
	}
}

func TestReportChecks(t *testing.T) {
	var none Report
	if c := none.Checks(); len(c) != 1 || c[0].Name != CheckOneLeader || !c[0].Passed || c[0].Observed != 0 {
		t.Errorf("checks without overlaps = %+v, want %q passed", c, CheckOneLeader)
	}
	two := Report{
		Overlaps:     []Overlap{{At: time.Second, Duration: 30 * time.Millisecond}, {At: 2 * time.Second, Duration: 20 * time.Millisecond}},
		OverlapTotal: 50 * time.Millisecond,
	}
	c := two.Checks()
	if len(c) != 1 || c[0].Passed || c[0].Observed != 2 || c[0].Detail != "2 spans, 50.0ms in total, in which two or more candidates believed they led at once" {
		t.Errorf("checks with two overlaps = %+v, want one failed check naming 2 spans of 50.0ms", c)
	}
}
