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

// phaseCounters counts the measured window's Lease requests by phase,
// shared by every candidate.
type phaseCounters [numPhases]struct {
	reads, writes, conflicts, errors atomic.Int64
}

// write counts a measured Lease write of phase p by its outcome.
func (c *phaseCounters) write(p phase, out metrics.Outcome) {
	c[p].writes.Add(1)
	switch out {
	case metrics.Success:
	case metrics.VersionConflict:
		c[p].conflicts.Add(1)
	default:
		c[p].errors.Add(1)
	}
}

func (c *phaseCounters) report(p phase) LeasePhase {
	return LeasePhase{
		Reads:     c[p].reads.Load(),
		Writes:    c[p].writes.Load(),
		Conflicts: c[p].conflicts.Load(),
		Errors:    c[p].errors.Load(),
	}
}

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
	inner *resourcelock.LeaseLock
	c     *candidate
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

// newLeaseLock returns client-go's LeaseLock on the run's Lease for
// identity id, whose requests go through client and whose answers l sees.
func (l *meteredLock) newLeaseLock(client coordinationv1client.LeasesGetter, namespace, id string) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: LeaseName},
		Client:     seenLeases{client, &l.seen},
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
}

// seenLeases keeps the Lease each successful request returns, for the
// resourceVersion that client-go's LeaseLock does not expose.
type seenLeases struct {
	coordinationv1client.LeasesGetter
	seen *atomic.Pointer[coordinationv1.Lease]
}

func (s seenLeases) Leases(namespace string) coordinationv1client.LeaseInterface {
	return seenLease{s.LeasesGetter.Leases(namespace), s.seen}
}

type seenLease struct {
	coordinationv1client.LeaseInterface
	seen *atomic.Pointer[coordinationv1.Lease]
}

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
	case holder == nil && l.c.set.ReleaseOnCancel && l.runCtx.Err() != nil:
		return phaseRelease // the read that starts a release
	}
	return phaseRenew
}

// sendTimes are one request's times as its sender saw them: when it
// started, when it left the client for the apiserver (zero when not
// known), when its answer came.
type sendTimes struct {
	Start time.Time `json:"start,omitzero"`
	Sent  time.Time `json:"sent,omitzero"`
	End   time.Time `json:"end,omitzero"`
}

// request is one request as the recorder sees it: when it was due, when it
// ended, and whether it falls in the measured window.
type request struct {
	intended, end time.Time
	measured      bool
}

// request places t in the measured window of slot's recorder stripe. The
// request is due when it started; but one that waited at the engine's
// hold across the start of the measured window is due when it left the
// hold (when it got its connection), which is when the apiserver saw it:
// so the window holds exactly the requests the apiserver counted in it.
func (r *election) request(slot int, t sendTimes) request {
	shard := r.env.Recorder.Stripe(slot)
	rq := request{intended: t.Start, end: t.End}
	if !t.Sent.IsZero() && !shard.Measured(t.Start) {
		rq.intended = t.Sent
	}
	rq.measured = shard.Measured(rq.intended)
	return rq
}

// sentKey is the context key of the time a request left the client: its
// connection's GotConn in one process, or, for a candidate process, what
// the run's proxy says (sentHeader).
type sentKey struct{}

// send runs do with ctx's deadline (and the operation timeout) but not its
// cancellation, after the slot's partition (which may be nil), and returns
// its times.
func send(ctx context.Context, timeout time.Duration, part *partition, do func(context.Context) error) (sendTimes, error) {
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
	t := sendTimes{Start: time.Now()}
	err := part.wait(rctx)
	if err == nil {
		err = do(rctx)
	}
	t.End = time.Now()
	if s := sent.Load(); s != nil {
		t.Sent = *s
	}
	return t, err
}

// send runs one request of the candidate, through its partition.
func (l *meteredLock) send(ctx context.Context, do func(context.Context) error) (sendTimes, error) {
	return send(ctx, l.c.timeout, l.c.partition, do)
}

// Get reads the Lease. NotFound is a successful read: the Lease does not
// exist yet and the candidate will create it.
func (l *meteredLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	p := l.phase(nil)
	var rec *resourcelock.LeaderElectionRecord
	var raw []byte
	t, err := l.send(ctx, func(ctx context.Context) (err error) {
		rec, raw, err = l.inner.Get(ctx)
		return err
	})
	out := metrics.Classify(err)
	if apierrors.IsNotFound(err) {
		out = metrics.Success
	}
	l.c.obs(event{Kind: evRead, Phase: p, sendTimes: t, Outcome: out})
	return rec, raw, err
}

// Create creates the Lease naming this candidate holder.
func (l *meteredLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.inner.Create)
}

// Update writes the Lease with the resourceVersion last read: a renewal, a
// takeover, or (with an empty holder) a release.
func (l *meteredLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, ler, l.inner.Update)
}

// write runs one Lease write: one operation of one write attempt.
func (l *meteredLock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, do func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	p := l.phase(&ler.HolderIdentity)
	t, err := l.send(ctx, func(ctx context.Context) error { return do(ctx, ler) })
	out := metrics.Classify(err)
	// A create that loses the race for a new Lease answers 409
	// AlreadyExists: the same lost compare-and-swap as a stale update.
	if apierrors.IsAlreadyExists(err) {
		out = metrics.VersionConflict
	}
	if out == metrics.Success {
		mine := ler.HolderIdentity == l.inner.Identity()
		l.held.Store(mine)
		if mine {
			l.acquired.Store(true)
			if seen := l.seen.Load(); seen != nil {
				l.token.Store(parseRV(seen.ResourceVersion))
			}
		}
	}
	l.c.obs(event{Kind: evWrite, Phase: p, sendTimes: t, Outcome: out, Err: errText(err),
		ID: l.inner.Identity(), Holder: ler.HolderIdentity, OK: out == metrics.Success, Conflict: out == metrics.VersionConflict})
	return err
}

// RecordEvent is a no-op: kb-bench records no Kubernetes Events.
func (l *meteredLock) RecordEvent(string) {}

// Identity is the candidate's identity.
func (l *meteredLock) Identity() string { return l.inner.Identity() }

// Describe names the Lease.
func (l *meteredLock) Describe() string { return l.inner.Describe() }
