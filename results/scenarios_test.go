package results

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update if the change is intended)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestLeaderElectionReportTable(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		report LeaderElectionReport
	}{
		{"scenarios-leader-election-release.golden", LeaderElectionReport{
			Candidates: 3, ReleaseOnCancel: true, LeaseDurationSeconds: 2,
			TimeToFirstLeader: 12345 * time.Microsecond, FirstLeader: "candidate-1",
			Leaderships: 4, Transitions: 3, LeaseTransitions: 3,
			Failovers: []Failover{
				{At: 2 * time.Second, Stopped: "candidate-1", NewLeader: "candidate-0", Resolved: true, Duration: 310 * ms},
				{At: 4 * time.Second, Stopped: "candidate-0", NewLeader: "candidate-2", Resolved: true, Duration: 205 * ms},
				{At: 6 * time.Second, Stopped: "candidate-2"},
			},
			FailoverTime: FailoverStats{Count: 3, Resolved: 2, Min: 205 * ms, P50: 205 * ms, Max: 310 * ms},
			Acquire:      LeasePhase{Reads: 40, Writes: 6, Conflicts: 2},
			Renew:        LeasePhase{Reads: 1, Writes: 30},
			Release:      LeasePhase{Reads: 3, Writes: 3},
		}},
		{"scenarios-leader-election-overlap.golden", LeaderElectionReport{
			Candidates: 2, LeaseDurationSeconds: 1,
			Leaderships: 2, Transitions: 1, LeaseTransitions: 1, LostLeadership: 1,
			FailoverTime: FailoverStats{Count: 1},
			Failovers:    []Failover{{At: time.Second, Stopped: "candidate-0"}},
			Acquire:      LeasePhase{Reads: 10, Writes: 2, Conflicts: 1, Errors: 1},
			Renew:        LeasePhase{Writes: 5},
			Overlaps:     []Overlap{{At: 1500 * ms, Duration: 42 * ms, Leaders: []string{"candidate-0", "candidate-1"}}},
			OverlapTotal: 42 * ms,
		}},
		{"scenarios-leader-election-none.golden", LeaderElectionReport{Candidates: 4, LeaseDurationSeconds: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.report.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

func TestQuotaReportTable(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		report QuotaReport
	}{
		{"scenarios-quota-full.golden", QuotaReport{
			Resource: "count/configmaps", Hard: 50, Writers: 8, StatusInitialized: true,
			Creates: 1200, Admitted: 50, Rejected: 1149, Conflicts: 0, Errors: 1, FullAt: 180 * ms,
			ExistingAtEnd: 50, UsedAtEnd: 50,
			AdmittedLatency: Latency{P50: 4 * ms, P99: 21 * ms, Max: 30 * ms},
			RejectedLatency: Latency{P50: 900 * time.Microsecond, P99: 3 * ms, Max: 5 * ms},
		}},
		{"scenarios-quota-not-full.golden", QuotaReport{
			Resource: "requests.nvidia.com/gpu", Hard: 1000, Writers: 2, InitialUsed: 3,
			Creates: 20, Admitted: 20, ExistingAtEnd: 23, UsedAtEnd: 23,
			AdmittedLatency: Latency{P50: 6 * ms, P99: 150 * ms, Max: 151 * ms},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.report.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}
