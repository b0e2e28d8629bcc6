package leaderelection

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// candidate is one candidate slot: what its campaigns need to reach the
// apiserver, and the observer it tells everything it does. Usually it is
// a goroutine of the run, which observes it directly; with the pause fault
// it runs in a process of its own (RunCandidate), observed through that
// process's output, so that a SIGSTOP freezes all of it.
type candidate struct {
	slot      int
	set       *Settings
	lease     time.Duration // its lease duration: shorter for the skewed one
	client    kubernetes.Interface
	namespace string
	runID     string
	timeout   time.Duration
	// ops is what the leader-only writes' contexts derive from (Env.Ops).
	ops  context.Context
	gate *partition // nil: never partitioned
	obs  observer
	// writers waits for the leader-only writes of every leadership.
	writers *sync.WaitGroup

	gen int          // the next identity's generation; only campaign uses it
	seq atomic.Int64 // leader-only writes sent
}

// observer is told what candidates do. The run is the observer of its
// candidate goroutines, and of its candidate processes through their
// events; in a candidate process the observer writes those events.
type observer interface {
	// leaseRead is one Lease read of phase p, leaseWrite one Lease write
	// (w is its entry in the run's Lease log).
	leaseRead(slot int, p phase, t sendTimes, out metrics.Outcome)
	leaseWrite(slot int, p phase, t sendTimes, out metrics.Outcome, err error, w leaseWrite)
	// fencedWrite is one leader-only write; w has its identity, token
	// and resourceVersion.
	fencedWrite(slot int, t sendTimes, out metrics.Outcome, err error, w fencedWrite)
	// began and ended bound a leadership: from the candidate's first
	// belief that it leads to the moment it stops believing.
	began(slot int, id string, at time.Time)
	ended(slot int, at time.Time)
	// lost: a candidate that led lost the Lease on its own.
	lost(slot int)
	// failed: the candidate cannot campaign (a bug in kb-bench).
	failed(err error)
}

// campaign runs the slot's candidates until ctx ends. When one loses the
// Lease on its own (client-go: a renewal failed within the renew
// deadline; the watch lock: also another holder seen) its election ends,
// and the slot starts over under a new identity, candidate-<slot>.<gen>.
func (c *candidate) campaign(ctx context.Context) {
	for ctx.Err() == nil {
		id := fmt.Sprintf("candidate-%d.%d", c.slot, c.gen)
		c.gen++
		lock := &meteredLock{c: c, runCtx: ctx}
		lock.inner = lock.newLeaseLock(c.client.CoordinationV1(), c.namespace, id)
		var led bool
		if c.set.Lock == LockWatch {
			e := &watchElector{c: c, id: id, lock: lock}
			led = e.run(ctx)
		} else {
			var ok bool
			if led, ok = c.clientGo(ctx, id, lock); !ok {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		if led {
			c.obs.lost(c.slot)
		}
	}
}

// clientGo runs one candidate with client-go's leader election until ctx
// ends or it stops leading; it reports whether it led, and ok false when
// client-go refused the configuration.
func (c *candidate) clientGo(ctx context.Context, id string, lock *meteredLock) (led, ok bool) {
	ended := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            LeaseName,
		LeaseDuration:   c.lease,
		RenewDeadline:   c.set.RenewDeadline.Duration,
		RetryPeriod:     c.set.RetryPeriod.Duration,
		ReleaseOnCancel: c.set.ReleaseOnCancel,
		Callbacks: leaderelection.LeaderCallbacks{
			// The candidate believes it leads from here until client-go
			// cancels the context it hands over: that is when the work a
			// real leader guards must stop.
			OnStartedLeading: func(lctx context.Context) {
				defer close(ended)
				c.obs.began(c.slot, id, time.Now())
				c.startLeaderWrites(lctx, id, lock)
				<-lctx.Done()
				c.obs.ended(c.slot, time.Now())
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		// Settings.Validate checks everything NewLeaderElector checks.
		c.obs.failed(fmt.Errorf("candidate %s: %w (a bug in kb-bench: please report it)", id, err))
		return false, false
	}
	elector.Run(ctx)
	if lock.acquired.Load() {
		<-ended // client-go starts OnStartedLeading in its own goroutine
	}
	return lock.acquired.Load(), true
}

// startLeaderWrites starts the candidate's leader-only writes, which last
// while lctx does (while it believes it leads).
func (c *candidate) startLeaderWrites(lctx context.Context, id string, lock *meteredLock) {
	if c.set.LeaderWrites.Duration <= 0 {
		return
	}
	c.writers.Go(func() { c.leaderWrites(lctx, id, lock) })
}

// leaderWrites writes the fenced ConfigMap every LeaderWrites while lctx
// lasts, that is while the candidate believes it leads. A write in flight
// when it stops believing is not taken back: it lands when it lands.
func (c *candidate) leaderWrites(lctx context.Context, id string, lock *meteredLock) {
	t := time.NewTicker(c.set.LeaderWrites.Duration)
	defer t.Stop()
	for lctx.Err() == nil {
		c.fencedWrite(id, lock)
		select {
		case <-lctx.Done():
			return
		case <-t.C:
		}
	}
}

// fencedWrite writes the fenced ConfigMap once, unconditionally (last
// write wins, as a leader that trusts its lock writes), carrying the
// writer's identity and fencing token, through the candidate's client and
// its partition.
func (c *candidate) fencedWrite(id string, lock *meteredLock) {
	token := lock.token.Load()
	cm := newFenced(c.namespace, c.runID, map[string]string{
		"holder": id,
		"token":  strconv.FormatUint(token, 10),
		"seq":    strconv.FormatInt(c.seq.Add(1), 10),
	})
	var got *corev1.ConfigMap
	t, err := send(c.ops, c.timeout, c.gate, func(ctx context.Context) (err error) {
		got, err = c.client.CoreV1().ConfigMaps(c.namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	w := fencedWrite{id: id, token: token, ok: err == nil}
	if err == nil {
		w.rv = parseRV(got.ResourceVersion)
	}
	c.obs.fencedWrite(c.slot, t, metrics.Classify(err), err, w)
}

// newFenced is the fenced ConfigMap of run runID, with data.
func newFenced(namespace, runID string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: FencedName, Namespace: namespace, Labels: scenario.Labels(runID)},
		Data:       data,
	}
}
