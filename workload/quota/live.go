package quota

import (
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

var _ scenario.Live = (*quota)(nil)

// Live is the quota's limit and its creates by answer so far, as its
// Report counts them.
func (r *quota) Live() []results.Figure {
	rep := Report{Resource: r.set.Resource, Hard: r.set.Hard, Creates: r.creates.Load(), Admitted: r.admitted.Load(),
		Rejected: r.rejected.Load(), Conflicts: r.conflicts.Load(), Errors: r.errs.Load()}
	return rep.counts()
}
