package leaderelection

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestReportRows(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		report Report
		want   [][2]string
	}{
		{"release", Report{
			Candidates: 3, ReleaseOnCancel: true, LeaseDurationSeconds: 2,
			TimeToFirstLeader: 12345 * time.Microsecond, FirstLeader: "candidate-1.0",
			Leaderships: 4, Transitions: 3, LeaseTransitions: 3,
			Failovers: []Failover{
				{At: 2 * time.Second, Stopped: "candidate-1.0", NewLeader: "candidate-0.0", Resolved: true, Duration: 310 * ms},
				{At: 4 * time.Second, Stopped: "candidate-0.0", NewLeader: "candidate-2.0", Resolved: true, Duration: 205 * ms},
				{At: 6 * time.Second, Stopped: "candidate-2.0"},
			},
			FailoverTime: FailoverStats{Count: 3, Resolved: 2, Min: 205 * ms, P50: 205 * ms, Max: 310 * ms},
			Acquire:      LeasePhase{Reads: 40, Writes: 6, Conflicts: 2},
			Renew:        LeasePhase{Reads: 1, Writes: 30},
			Release:      LeasePhase{Reads: 3, Writes: 3},
		}, [][2]string{
			{"leader election", "3 candidates, lease 2s, release on cancel"},
			{"  first leader", "candidate-1.0 after 12.3ms"},
			{"  transitions", "3 seen on the Lease (leaseTransitions 3), 4 leaderships, 0 lost on renew"},
			{"  failovers", "3 (2 resolved): min 205ms  p50 205ms  max 310ms"},
			{"  lease writes", "39: acquire 6 (409: 2)  renew 30 (409: 0)  release 3 (409: 0)"},
			{"  lease reads", "44 (other errors: 0)"},
			{"  overlap", "none: exactly one leader at a time"},
		}},
		{"overlap", Report{
			Candidates: 2, LeaseDurationSeconds: 1,
			Leaderships: 2, Transitions: 1, LeaseTransitions: 1, LostLeadership: 1,
			FailoverTime: FailoverStats{Count: 1},
			Failovers:    []Failover{{At: time.Second, Stopped: "candidate-0.0"}},
			Acquire:      LeasePhase{Reads: 10, Writes: 2, Conflicts: 1, Errors: 1},
			Renew:        LeasePhase{Writes: 5},
			Overlaps:     []Overlap{{At: 1500 * ms, Duration: 42 * ms, Leaders: []string{"candidate-0.0", "candidate-1.0"}}},
			OverlapTotal: 42 * ms,
		}, [][2]string{
			{"leader election", "2 candidates, lease 1s, lease kept on stop"},
			{"  first leader", "none elected"},
			{"  transitions", "1 seen on the Lease (leaseTransitions 1), 2 leaderships, 1 lost on renew"},
			{"  failovers", "1, none resolved before the end"},
			{"  lease writes", "7: acquire 2 (409: 1)  renew 5 (409: 0)  release 0 (409: 0)"},
			{"  lease reads", "10 (other errors: 1)"},
			{"  overlap", "1 span, 42.0ms in total: TWO LEADERS AT ONCE"},
			{"", "at 1.50s for 42.0ms: candidate-0.0, candidate-1.0"},
		}},
		{"nothing happened", Report{Candidates: 4, LeaseDurationSeconds: 4}, [][2]string{
			{"leader election", "4 candidates, lease 4s, lease kept on stop"},
			{"  first leader", "none elected"},
			{"  transitions", "0 seen on the Lease (leaseTransitions 0), 0 leaderships, 0 lost on renew"},
			{"  failovers", "none (no leader was stopped)"},
			{"  lease writes", "0: acquire 0 (409: 0)  renew 0 (409: 0)  release 0 (409: 0)"},
			{"  lease reads", "0 (other errors: 0)"},
			{"  overlap", "none: exactly one leader at a time"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.report.Rows(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Rows() =\n%q\nwant\n%q", got, tt.want)
			}
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

// A saved result shows what the run showed: a report, marshalled into
// the result's details, decodes to one with the same rows and checks.
func TestReportDecodes(t *testing.T) {
	ms := time.Millisecond
	reports := map[string]*Report{
		"overlap": {Candidates: 2, LeaseDurationSeconds: 1, Leaderships: 2, Transitions: 1, LostLeadership: 1,
			Failovers: []Failover{{At: time.Second, Stopped: "candidate-0.0"}}, FailoverTime: FailoverStats{Count: 1},
			Acquire: LeasePhase{Reads: 10, Writes: 2, Conflicts: 1, Errors: 1}, Renew: LeasePhase{Writes: 5},
			Overlaps: []Overlap{{At: 1500 * ms, Duration: 42 * ms, Leaders: []string{"candidate-0.0", "candidate-1.0"}}}, OverlapTotal: 42 * ms},
		"pause fault": {Candidates: 3, LeaseDurationSeconds: 2, Lock: LockWatch, Fault: FaultPause,
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
			Overlaps:     []Overlap{{At: 4100 * ms, Duration: 1910 * ms, Leaders: []string{"candidate-0.0", "candidate-1.0"}}}, OverlapTotal: 1910 * ms},
	}
	for name, live := range reports {
		t.Run(name, func(t *testing.T) {
			details, err := json.Marshal(live)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Definition.DecodeReport(details, live.Checks())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Rows(), live.Rows()) || !reflect.DeepEqual(got.Checks(), live.Checks()) {
				t.Errorf("decoded from %s:\nrows %q\nwant %q\nchecks %+v\nwant %+v", details, got.Rows(), live.Rows(), got.Checks(), live.Checks())
			}
		})
	}
}
