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

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
)

// FencedName is the ConfigMap a candidate writes while it believes it
// leads: the work a Lease guards, standing for a real leader's writes.
const FencedName = "kb-bench-fenced"

// candidate is one candidate slot: what its campaigns need to reach the
// apiserver, and whom it tells everything it does (obs): the run, directly
// or, with the pause fault, through its process's output (RunCandidate).
type candidate struct {
	candidateConfig
	client kubernetes.Interface
	// ops is what the leader-only writes' contexts derive from (Env.Ops).
	ops       context.Context
	partition *partition // nil: never partitioned
	obs       func(event)
	// writers waits for the leader-only writes of every leadership.
	writers *sync.WaitGroup

	gen int          // the next identity's generation; only campaign uses it
	seq atomic.Int64 // leader-only writes sent
}

// candidateConfig is what a candidate runs with; the run tells a
// candidate process it on its stdin when the campaign starts.
type candidateConfig struct {
	Slot      int      `json:"slot"`
	Namespace string   `json:"namespace"`
	RunID     string   `json:"runID"`
	Settings  Settings `json:"settings"`
	// Lease is its lease duration: shorter for the skewed one.
	Lease   time.Duration `json:"lease"`
	Timeout time.Duration `json:"timeout"`
	Client  spec.Client   `json:"client"`
	// Server is the run's proxy for a candidate process's slot.
	Server string `json:"server"`
}

// campaign runs the slot's candidates until ctx ends. When one loses the
// Lease on its own (client-go: a renewal failed within the renew
// deadline; the watch lock: also another holder seen) its election ends,
// and the slot starts over under a new identity, candidate-<slot>.<gen>.
func (c *candidate) campaign(ctx context.Context) {
	for ctx.Err() == nil {
		id := fmt.Sprintf("candidate-%d.%d", c.Slot, c.gen)
		c.gen++
		lock := &meteredLock{c: c, id: id, runCtx: ctx}
		led, ok := false, true
		if c.Settings.Lock == LockWatch {
			led = (&watchElector{c: c, id: id, lock: lock}).run(ctx)
		} else {
			led, ok = c.clientGo(ctx, id, lock)
		}
		if !ok || ctx.Err() != nil {
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
		LeaseDuration:   c.Lease,
		RenewDeadline:   c.Settings.RenewDeadline.Duration,
		RetryPeriod:     c.Settings.RetryPeriod.Duration,
		ReleaseOnCancel: c.Settings.ReleaseOnCancel,
		Callbacks: leaderelection.LeaderCallbacks{
			// The candidate believes it leads from here until client-go
			// cancels the context it hands over: that is when the work a
			// real leader guards must stop.
			OnStartedLeading: func(lctx context.Context) { c.leads(lctx, id, time.Now(), lock, ended) },
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

// leads runs the candidate's leadership as id, from start while lctx
// lasts, that is while it believes it leads: it tells the run, writes the
// fenced ConfigMap every LeaderWrites, and when lctx ends tells the run
// and closes ended. A write in flight then is not taken back: it lands
// when it lands.
func (c *candidate) leads(lctx context.Context, id string, start time.Time, lock *meteredLock, ended chan<- struct{}) {
	c.obs(event{Kind: evBegan, ID: id, Start: start})
	if every := c.Settings.LeaderWrites.Duration; every > 0 {
		c.writers.Go(func() {
			tick := time.Tick(every)
			for lctx.Err() == nil {
				c.fencedWrite(id, lock)
				select {
				case <-lctx.Done():
					return
				case <-tick:
				}
			}
		})
	}
	context.AfterFunc(lctx, func() {
		defer close(ended)
		c.obs(event{Kind: evEnded, End: time.Now()})
	})
}

// fencedWrite writes the fenced ConfigMap once, unconditionally (last
// write wins, as a leader that trusts its lock writes), carrying the
// writer's identity and fencing token, through the candidate's client and
// its partition.
func (c *candidate) fencedWrite(id string, lock *meteredLock) {
	token := lock.token.Load()
	cm := newFenced(c.Namespace, c.RunID, map[string]string{
		"holder": id,
		"token":  strconv.FormatUint(token, 10),
		"seq":    strconv.FormatInt(c.seq.Add(1), 10),
	})
	var got *corev1.ConfigMap
	e, err := send(c.ops, c.Timeout, c.partition, evFenced, func(ctx context.Context) (err error) {
		got, err = c.client.CoreV1().ConfigMaps(c.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	e.ID, e.Token = id, token
	if err == nil {
		e.RV = parseRV(got.ResourceVersion)
	}
	c.obs(e)
}

// newFenced is the fenced ConfigMap of run runID, with data.
func newFenced(namespace, runID string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: FencedName, Namespace: namespace, Labels: k8s.Labels(runID)},
		Data:       data,
	}
}
