package leaderelection

import (
	"context"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// FencedName is the ConfigMap a candidate writes while it believes it
// leads: the work a Lease guards, standing for a real leader's writes.
const FencedName = "kb-bench-fenced"

// fencedWrite is one write of the fenced ConfigMap.
type fencedWrite struct {
	id string
	// token is the fencing token the write carried: the resourceVersion
	// of the writer's last Lease write that named it holder.
	token uint64
	// rv is the resourceVersion the apiserver gave the write (0 when it
	// failed).
	rv       uint64
	start    time.Time
	end      time.Time
	ok       bool
	measured bool
}

// newFenced is the fenced ConfigMap as Setup creates it.
func (r *run) newFenced(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: FencedName, Namespace: r.env.Namespace, Labels: scenario.Labels(r.env.RunID)},
		Data:       data,
	}
}

// leaderWrites writes the fenced ConfigMap every LeaderWrites while lctx
// lasts, that is while the candidate believes it leads. A write in flight
// when it stops believing is not taken back: it lands when it lands.
func (r *run) leaderWrites(lctx context.Context, slot int, id string, lock *meteredLock) {
	t := time.NewTicker(r.set.LeaderWrites.Duration)
	defer t.Stop()
	for lctx.Err() == nil {
		r.fencedWrite(slot, id, lock)
		select {
		case <-lctx.Done():
			return
		case <-t.C:
		}
	}
}

// fencedWrite writes the fenced ConfigMap once, unconditionally (last
// write wins, as a leader that trusts its lock writes), carrying the
// writer's identity and fencing token, through the candidate's measured
// client and its partition.
func (r *run) fencedWrite(slot int, id string, lock *meteredLock) {
	env := r.env
	token := lock.token.Load()
	cm := r.newFenced(map[string]string{
		"holder": id,
		"token":  strconv.FormatUint(token, 10),
		"seq":    strconv.FormatInt(r.fencedSeq.Add(1), 10),
	})
	var got *corev1.ConfigMap
	rq, err := lock.send(env.Ops(), func(ctx context.Context) (err error) {
		got, err = env.Client(slot).CoreV1().ConfigMaps(env.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	out := metrics.Classify(err)
	w := fencedWrite{id: id, token: token, start: rq.intended, end: rq.end, ok: err == nil, measured: rq.measured}
	if err == nil {
		w.rv = parseRV(got.ResourceVersion)
	}
	r.mu.Lock()
	r.fenced = append(r.fenced, w)
	r.mu.Unlock()
	lock.shard.RecordAttempt(rq.intended, metrics.Attempt{Kind: metrics.Write, Latency: rq.end.Sub(rq.intended), Outcome: out})
	lock.shard.RecordOp(metrics.Op{Intended: rq.intended, Start: rq.intended, End: rq.end, Outcome: out, Err: err, Attempts: 1})
}

// leaseEvent is one change of the Lease as the run's watch saw it.
type leaseEvent struct {
	rv      uint64
	holder  string
	deleted bool
	seen    time.Time
}

// fencing says, for each accepted fenced write, whether it was deposed
// (the Lease named someone else, or nobody, or did not exist when the
// apiserver accepted it) and whether a fencing check would have refused
// it: its token older than the resourceVersion at which the Lease last
// changed hands. history is the Lease's changes in resourceVersion order;
// a write's place among them is its own resourceVersion, which on one
// etcd is the same revision counter.
func fencing(history []leaseEvent, w fencedWrite) (deposed, refused bool) {
	i := sort.Search(len(history), func(i int) bool { return history[i].rv >= w.rv })
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
	return cur.deleted || cur.holder != w.id, w.token < since
}
