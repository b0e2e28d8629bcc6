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
	ops       context.Context
	partition *partition // nil: never partitioned
	obs       observer
	// writers waits for the leader-only writes of every leadership.
	writers *sync.WaitGroup

	gen int          // the next identity's generation; only campaign uses it
	seq atomic.Int64 // leader-only writes sent
}

// observer is told what a candidate does: the run observes its candidate
// goroutines directly, and its candidate processes through the events they
// write (wire).
type observer func(event)

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
			c.obs(event{Kind: evLost})
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
				c.obs(event{Kind: evBegan, ID: id, At: time.Now()})
				c.startLeaderWrites(lctx, id, lock)
				<-lctx.Done()
				c.obs(event{Kind: evEnded, At: time.Now()})
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		// Settings.Validate checks everything NewLeaderElector checks.
		c.obs(event{Kind: evFailed, Err: fmt.Sprintf("candidate %s: %v (a bug in kb-bench: please report it)", id, err)})
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
	t, err := send(c.ops, c.timeout, c.partition, func(ctx context.Context) (err error) {
		got, err = c.client.CoreV1().ConfigMaps(c.namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	e := event{Kind: evFenced, sendTimes: t, Outcome: metrics.Classify(err), Err: errText(err), ID: id, Token: token, OK: err == nil}
	if err == nil {
		e.RV = parseRV(got.ResourceVersion)
	}
	c.obs(e)
}

// newFenced is the fenced ConfigMap of run runID, with data.
func newFenced(namespace, runID string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: FencedName, Namespace: namespace, Labels: scenario.Labels(runID)},
		Data:       data,
	}
}
