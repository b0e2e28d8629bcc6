package leaderelection

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/spec"
)

func TestLeaseSecondsOf(t *testing.T) {
	le := func(lease, renew, retry time.Duration) spec.LeaderElection {
		return spec.LeaderElection{LeaseDuration: spec.D(lease), RenewDeadline: spec.D(renew), RetryPeriod: spec.D(retry)}
	}
	tests := []struct {
		name    string
		le      spec.LeaderElection
		secs    int
		warning string // a substring; "" for none
	}{
		{"defaults", le(4*time.Second, 3*time.Second, 500*time.Millisecond), 4, ""},
		{"truncated but safe", le(2500*time.Millisecond, 1200*time.Millisecond, 200*time.Millisecond), 2, "recorded in the Lease as 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secs, warning := leaseSecondsOf(tt.le)
			if secs != tt.secs {
				t.Errorf("secs = %d, want %d", secs, tt.secs)
			}
			if (tt.warning == "") != (warning == "") || !strings.Contains(warning, tt.warning) {
				t.Errorf("warning = %q, want one containing %q", warning, tt.warning)
			}
		})
	}
}

func TestLeaderElectionOnLocalControlPlane(t *testing.T) {
	cfg := local.Config(t)
	// A 2s lease keeps the two cases apart: client-go compares Lease records
	// with their times cut to the second, so a standby's last sight of a
	// change may be up to about a second old, and failover without release
	// lands anywhere from about lease-1s to lease+2.2 retry periods.
	const lease = 2 * time.Second
	tests := []struct {
		name    string
		release bool
	}{
		{"release on cancel", true},
		{"lease kept on stop", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := clustertest.NewEnv(t, cfg, spec.Spec{
				Scenario: spec.ScenarioLeaderElection,
				Writers:  3,
				Duration: spec.D(5 * time.Second),
				LeaderElection: &spec.LeaderElection{
					LeaseDuration: spec.D(lease), RenewDeadline: spec.D(time.Second), RetryPeriod: spec.D(200 * time.Millisecond),
					FailoverEvery: spec.D(time.Second), ReleaseOnCancel: tt.release,
				},
			}, nil)
			if err := Run(context.Background(), env); err != nil {
				t.Fatal(err)
			}
			r := env.Result.LeaderElection
			if r == nil {
				t.Fatal("no LeaderElection report")
			}
			var b strings.Builder
			_ = r.WriteTable(&b)
			t.Logf("\n%s", b.String())

			if r.FirstLeader == "" || r.TimeToFirstLeader > 2*time.Second {
				t.Errorf("first leader %q after %s, want one within 2s", r.FirstLeader, r.TimeToFirstLeader)
			}
			if len(env.Result.Checks) != 1 || env.Result.Checks[0].Name != CheckOneLeader || !env.Result.Checks[0].Passed {
				t.Errorf("checks = %+v, want %q passed", env.Result.Checks, CheckOneLeader)
			}
			if len(r.Overlaps) != 0 {
				t.Errorf("overlapping leadership: %+v", r.Overlaps)
			}
			f := r.FailoverTime
			if f.Resolved < 1 {
				t.Fatalf("%d failovers resolved of %d, want at least 1: %+v", f.Resolved, f.Count, r.Failovers)
			}
			if tt.release {
				// A released Lease is free at once: a standby takes it at its
				// next retry (at most 2.2 retry periods), well within half a lease.
				if f.Resolved < 2 {
					t.Errorf("%d failovers resolved of %d, want at least 2: %+v", f.Resolved, f.Count, r.Failovers)
				}
				if f.Max >= lease/2 {
					t.Errorf("failover max %s with release on cancel, want under half the lease duration %s", f.Max, lease)
				}
				if r.Release.Writes < int64(f.Count) {
					t.Errorf("%d release writes for %d stops", r.Release.Writes, f.Count)
				}
			} else {
				// Standbys wait out the lease from their last sight of a
				// change, which is at most about a second old.
				if f.Min < lease/4 {
					t.Errorf("failover min %s without release, want about the lease duration %s", f.Min, lease)
				}
				if r.Release.Writes != 0 {
					t.Errorf("%d release writes without release on cancel", r.Release.Writes)
				}
			}
			if r.Transitions < f.Resolved || r.LeaseTransitions < f.Resolved {
				t.Errorf("transitions %d (Lease says %d), want at least the %d resolved failovers", r.Transitions, r.LeaseTransitions, f.Resolved)
			}
			if r.Acquire.Writes < 1 || r.Renew.Writes < 1 {
				t.Errorf("acquire writes %d, renew writes %d: want both", r.Acquire.Writes, r.Renew.Writes)
			}
			snap := env.Recorder.Snapshot(time.Now())
			if snap.Ops != r.LeaseWrites() {
				t.Errorf("recorder has %d ops, report %d lease writes", snap.Ops, r.LeaseWrites())
			}
		})
	}
}

// TestLeaderElectionInterruptedOnLocalControlPlane checks that Ctrl-C ends
// the run promptly with its figures, and that a releasing leader gives the
// Lease up on the way out.
func TestLeaderElectionInterruptedOnLocalControlPlane(t *testing.T) {
	cfg := local.Config(t)
	env := clustertest.NewEnv(t, cfg, spec.Spec{
		Scenario: spec.ScenarioLeaderElection,
		Writers:  2,
		Duration: spec.D(time.Minute),
		LeaderElection: &spec.LeaderElection{
			LeaseDuration: spec.D(2 * time.Second), RenewDeadline: spec.D(time.Second), RetryPeriod: spec.D(200 * time.Millisecond),
			ReleaseOnCancel: true,
		},
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(time.Second, cancel)
	start := time.Now()
	if err := Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %s after Ctrl-C at 1s, want it to stop promptly", took)
	}
	r := env.Result.LeaderElection
	if r == nil || r.FirstLeader == "" || r.Renew.Writes == 0 {
		t.Fatalf("report %+v, want a leader that renewed", r)
	}
	if r.Release.Writes != 1 {
		t.Errorf("%d release writes, want the last leader's one", r.Release.Writes)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := client.CoordinationV1().Leases(env.Namespace).Get(context.Background(), LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "" {
		t.Errorf("Lease holder %v after the run, want it released (empty)", h)
	}
}
