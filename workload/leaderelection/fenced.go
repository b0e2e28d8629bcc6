package leaderelection

import (
	"sort"
)

// FencedName is the ConfigMap a candidate writes while it believes it
// leads: the work a Lease guards, standing for a real leader's writes.
const FencedName = "kb-bench-fenced"

// leaseEvent is one change of the Lease as the run's watch saw it.
type leaseEvent struct {
	rv      uint64
	holder  string
	deleted bool
}

// fencing says, for each accepted fenced write, whether it was deposed
// (the Lease named someone else, or nobody, or did not exist when the
// apiserver accepted it) and whether a fencing check would have refused
// it: its token older than the resourceVersion at which the Lease last
// changed hands. history is the Lease's changes in resourceVersion order;
// a write's place among them is its own resourceVersion, which on one
// etcd is the same revision counter.
func fencing(history []leaseEvent, w event) (deposed, refused bool) {
	i := sort.Search(len(history), func(i int) bool { return history[i].rv >= w.RV })
	if i == 0 {
		return true, true // no Lease yet
	}
	// since: the revision at which the holder last changed, at or before i-1.
	since := uint64(0)
	for j := i - 1; j >= 0; j-- {
		e := history[j]
		if j == 0 || e.deleted || history[j-1].deleted || history[j-1].holder != e.holder {
			since = e.rv
			break
		}
	}
	cur := history[i-1]
	return cur.deleted || cur.holder != w.ID, w.Token < since
}
