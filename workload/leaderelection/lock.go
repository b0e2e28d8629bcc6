package leaderelection

import (
	"context"
	"encoding/json"
	"errors"
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

// meteredLock is client-go's LeaseLock written over so that every Get,
// Create and Update the leader-election code makes (its internal retries
// included) is timed, classified and counted by phase, and the Lease's
// resourceVersion, which the LeaseLock does not expose, is kept. Each run
// of a candidate gets its own meteredLock.
//
// Stopping a candidate does not cut its request in flight off: the request
// keeps client-go's deadline but not its cancellation, so every request
// sent gets its answer and is counted on both sides of the server
// cross-check.
type meteredLock struct {
	c  *candidate
	id string
	// runCtx is the candidate's run context: once it is done, the requests of
	// a candidate that still holds the Lease are its release.
	runCtx context.Context

	held     atomic.Bool // this candidate's last successful write named it holder
	acquired atomic.Bool // it held the Lease at some point
	// seen is the Lease as the last successful request returned it: what
	// an Update writes over.
	seen atomic.Pointer[coordinationv1.Lease]
	// token is the resourceVersion of this candidate's last successful
	// write naming it holder: the fencing token its leader-only writes
	// carry (0 before any).
	token atomic.Uint64
}

func (l *meteredLock) leases() coordinationv1client.LeaseInterface {
	return l.c.client.CoordinationV1().Leases(l.c.Namespace)
}

// Identity is the candidate's identity.
func (l *meteredLock) Identity() string { return l.id }

// Describe names the Lease.
func (l *meteredLock) Describe() string { return l.c.Namespace + "/" + LeaseName }

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

// withSent returns ctx carrying (sentKey) when its request leaves the
// client: its connection's GotConn, unless something else says it first.
func withSent(ctx context.Context) (context.Context, *atomic.Pointer[time.Time]) {
	sent := new(atomic.Pointer[time.Time])
	return httptrace.WithClientTrace(context.WithValue(ctx, sentKey{}, sent), &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		sent.CompareAndSwap(nil, new(time.Now()))
	}}), sent
}

// send runs do with ctx's deadline (and the operation timeout) but not its
// cancellation, after the slot's partition (which may be nil), and returns
// the event of kind it is, with its times and outcome.
func send(ctx context.Context, timeout time.Duration, part *partition, kind string, do func(context.Context) error) (event, error) {
	deadline, ok := ctx.Deadline()
	if limit := time.Now().Add(timeout); !ok || limit.Before(deadline) {
		deadline = limit
	}
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	rctx, sent := withSent(rctx)
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
	var lease *coordinationv1.Lease
	e, err := send(ctx, l.c.Timeout, l.c.partition, evRead, func(ctx context.Context) (err error) {
		lease, err = l.leases().Get(ctx, LeaseName, metav1.GetOptions{})
		return err
	})
	e.Phase = p
	if apierrors.IsNotFound(err) {
		e.Outcome = metrics.Success
	}
	l.c.obs(e)
	if err != nil {
		return nil, nil, err
	}
	l.seen.Store(lease)
	rec := resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec)
	raw, err := json.Marshal(rec)
	return rec, raw, err
}

// Create creates the Lease naming this candidate holder.
func (l *meteredLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, func(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
		return l.leases().Create(ctx, lease, metav1.CreateOptions{})
	})
}

// Update writes the Lease with the resourceVersion last seen: a renewal, a
// takeover, or (with an empty holder) a release.
func (l *meteredLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, func(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
		last := l.seen.Load()
		if last == nil {
			return nil, errors.New("lease not initialized, call get or create first")
		}
		lease.ObjectMeta = last.ObjectMeta
		return l.leases().Update(ctx, lease, metav1.UpdateOptions{})
	})
}

// write runs one Lease write: one operation of one write attempt.
func (l *meteredLock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, do func(context.Context, *coordinationv1.Lease) (*coordinationv1.Lease, error)) error {
	p := l.phase(&ler.HolderIdentity)
	e, err := send(ctx, l.c.Timeout, l.c.partition, evWrite, func(ctx context.Context) error {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: l.c.Namespace}, Spec: resourcelock.LeaderElectionRecordToLeaseSpec(&ler)}
		got, err := do(ctx, lease)
		if err == nil {
			l.seen.Store(got)
		}
		return err
	})
	e.Phase, e.ID, e.Holder = p, l.id, ler.HolderIdentity
	// A create that loses the race for a new Lease answers 409
	// AlreadyExists: the same lost compare-and-swap as a stale update.
	if apierrors.IsAlreadyExists(err) {
		e.Outcome = metrics.VersionConflict
	}
	if e.Outcome == metrics.Success {
		mine := ler.HolderIdentity == l.id
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
