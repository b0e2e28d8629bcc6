package leaderelection

import (
	"context"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kb-bench/kb-bench/metrics"
)

// phase says what a candidate was doing when it sent a Lease request.
type phase int

const (
	phaseAcquire  phase = iota // it does not hold the Lease
	phaseRenew                 // it holds the Lease and keeps it
	phaseRelease               // it was stopped and gives the Lease up
	phaseIntruder              // someone else (a fault) deletes or edits it
	numPhases
)

// meteredLock wraps client-go's LeaseLock so that every Get, Create and
// Update the leader-election code makes (its internal retries included) is
// timed, classified and counted by phase. Each run of a candidate gets its
// own meteredLock.
//
// Stopping a candidate does not cut its request in flight off: the request
// keeps client-go's deadline but not its cancellation, so every request
// sent gets its answer and is counted on both sides of the server
// cross-check.
type meteredLock struct {
	*resourcelock.LeaseLock // Identity and Describe are its own
	c                       *candidate
	// runCtx is the candidate's run context: once it is done, the requests of
	// a candidate that still holds the Lease are its release.
	runCtx context.Context

	held     atomic.Bool // this candidate's last successful write named it holder
	acquired atomic.Bool // it held the Lease at some point
	// seen is the Lease as the last successful request returned it.
	seen atomic.Pointer[coordinationv1.Lease]
	// token is the resourceVersion of this candidate's last successful
	// write naming it holder: the fencing token its leader-only writes
	// carry (0 before any).
	token atomic.Uint64
}

// newMeteredLock returns c's lock, for identity id, over client-go's
// LeaseLock on the run's Lease.
func newMeteredLock(runCtx context.Context, c *candidate, id string) *meteredLock {
	l := &meteredLock{c: c, runCtx: runCtx}
	l.LeaseLock = &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: LeaseName},
		Client:     seenLease{c.client.CoordinationV1().Leases(c.Namespace), &l.seen},
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	return l
}

// seenLease keeps the Lease each successful request returns, for the
// resourceVersion that client-go's LeaseLock does not expose. The
// LeaseLock only asks it for the run's namespace.
type seenLease struct {
	coordinationv1client.LeaseInterface
	seen *atomic.Pointer[coordinationv1.Lease]
}

func (s seenLease) Leases(string) coordinationv1client.LeaseInterface { return s }

func (s seenLease) keep(l *coordinationv1.Lease, err error) (*coordinationv1.Lease, error) {
	if err == nil && l != nil {
		s.seen.Store(l)
	}
	return l, err
}

func (s seenLease) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	return s.keep(s.LeaseInterface.Get(ctx, name, o))
}

func (s seenLease) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return s.keep(s.LeaseInterface.Create(ctx, l, o))
}

func (s seenLease) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return s.keep(s.LeaseInterface.Update(ctx, l, o))
}

// parseRV reads a resourceVersion as the etcd revision it is on a
// kube-apiserver backed by etcd (0 when it is not a number).
func parseRV(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

var _ resourcelock.Interface = (*meteredLock)(nil)

// phase says what a request of a candidate that is (held) or is not the
// holder is for; a write naming no holder is always a release.
func (l *meteredLock) phase(holder *string) phase {
	switch {
	case holder != nil && *holder == "":
		return phaseRelease
	case !l.held.Load():
		return phaseAcquire
	case holder == nil && l.c.Settings.ReleaseOnCancel && l.runCtx.Err() != nil:
		return phaseRelease // the read that starts a release
	}
	return phaseRenew
}

// sentKey is the context key of the time a request left the client: its
// connection's GotConn in one process, or, for a candidate process, what
// the run's proxy says (sentHeader).
type sentKey struct{}

// send runs do with ctx's deadline (and the operation timeout) but not its
// cancellation, after the slot's partition (which may be nil), and returns
// the event of kind it is, with its times and outcome.
func send(ctx context.Context, timeout time.Duration, part *partition, kind string, do func(context.Context) error) (event, error) {
	rctx := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(rctx, deadline)
		defer cancel()
	}
	rctx, cancel := context.WithTimeout(rctx, timeout)
	defer cancel()
	var sent atomic.Pointer[time.Time]
	rctx = context.WithValue(rctx, sentKey{}, &sent)
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		now := time.Now()
		sent.CompareAndSwap(nil, &now)
	}})
	e := event{Kind: kind, Start: time.Now()}
	err := part.wait(rctx)
	if err == nil {
		err = do(rctx)
	}
	e.End = time.Now()
	if s := sent.Load(); s != nil {
		e.Sent = *s
	}
	e.Outcome = metrics.Classify(err)
	if err != nil {
		e.Err = err.Error()
	}
	return e, err
}

// Get reads the Lease. NotFound is a successful read: the Lease does not
// exist yet and the candidate will create it.
func (l *meteredLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	p := l.phase(nil)
	var rec *resourcelock.LeaderElectionRecord
	var raw []byte
	e, err := send(ctx, l.c.Timeout, l.c.partition, evRead, func(ctx context.Context) (err error) {
		rec, raw, err = l.LeaseLock.Get(ctx)
		return err
	})
	e.Phase = p
	if apierrors.IsNotFound(err) {
		e.Outcome = metrics.Success
	}
	l.c.obs(e)
	return rec, raw, err
}

// Create creates the Lease naming this candidate holder.
func (l *meteredLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.LeaseLock.Create)
}

// Update writes the Lease with the resourceVersion last read: a renewal, a
// takeover, or (with an empty holder) a release.
func (l *meteredLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.LeaseLock.Update)
}

// write runs one Lease write: one operation of one write attempt.
func (l *meteredLock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, do func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	p := l.phase(&ler.HolderIdentity)
	e, err := send(ctx, l.c.Timeout, l.c.partition, evWrite, func(ctx context.Context) error { return do(ctx, ler) })
	e.Phase, e.ID, e.Holder = p, l.Identity(), ler.HolderIdentity
	// A create that loses the race for a new Lease answers 409
	// AlreadyExists: the same lost compare-and-swap as a stale update.
	if apierrors.IsAlreadyExists(err) {
		e.Outcome = metrics.VersionConflict
	}
	if e.Outcome == metrics.Success {
		mine := ler.HolderIdentity == l.Identity()
		l.held.Store(mine)
		if mine {
			l.acquired.Store(true)
			if seen := l.seen.Load(); seen != nil {
				l.token.Store(parseRV(seen.ResourceVersion))
			}
		}
	}
	l.c.obs(e)
	return err
}

// RecordEvent is a no-op: kb-bench records no Kubernetes Events.
func (l *meteredLock) RecordEvent(string) {}
