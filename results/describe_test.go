package results

import (
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

func TestDescribeWorkloadPerScenario(t *testing.T) {
	cases := []struct {
		name string
		s    spec.Spec
		want string
	}{
		{"counter", spec.Spec{Writers: 8, Strategy: spec.StrategyUpdate}, "counter: 8 writers on 1 object, shared fields, strategy update, closed loop, 10s"},
		{"leader election", spec.Spec{Scenario: spec.ScenarioLeaderElection, Writers: 5, Duration: spec.D(time.Minute),
			LeaderElection: &spec.LeaderElection{FailoverEvery: spec.D(3 * time.Second), ReleaseOnCancel: true}},
			"leader-election: 5 candidates on one Lease, lease 4s, renew 3s, retry 500ms, leader stopped every 3s (releases on cancel), 1m0s"},
		{"quota", spec.Spec{Scenario: spec.ScenarioQuota, Writers: 16},
			"quota: 16 writers creating objects under a ResourceQuota of count/configmaps=50, closed loop, 10s"},
		{"controller status", spec.Spec{Scenario: spec.ScenarioControllerStatus, Writers: 2, Strategy: spec.StrategyRetry},
			"controller-status: 4 controllers x 2 workers, 10 Pods owned each + 2 shared, strategy retry (backoff default-retry), closed loop, 10s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.s.Defaults()
			if got := describeWorkload(c.s); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
