package quota

import (
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

var _ scenario.Live = (*quota)(nil)

// Live is the quota's admissions so far, over the whole run (warm-up
// included, as every admitted object counts against the quota), beside
// its hard limit: admitted must never pass it.
func (r *quota) Live() []live.Gauge {
	return []live.Gauge{
		{Name: "quota_hard", Help: "The ResourceQuota's hard limit on the objects the writers create.", Value: float64(r.set.Hard)},
		{Name: "quota_creates_total", Help: "Creates the writers made under the quota, warm-up included.", Counter: true, Value: float64(r.creates.Load())},
		{Name: "quota_admitted_total", Help: "Creates quota admission let in, warm-up included: never more than the hard limit.", Counter: true, Value: float64(r.admitted.Load())},
		{Name: "quota_rejected_total", Help: "Creates quota admission refused (403 exceeded quota), warm-up included.", Counter: true, Value: float64(r.rejected.Load())},
	}
}
