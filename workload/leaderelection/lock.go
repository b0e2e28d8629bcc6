package leaderelection

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kb-bench/kb-bench/metrics"
)

// phase says what a candidate was doing when it sent a Lease request.
type phase int

const (
	phaseAcquire phase = iota // it does not hold the Lease
	phaseRenew                // it holds the Lease and keeps it
	phaseRelease              // it was stopped and gives the Lease up
	numPhases
)

// phaseCounters counts the measured window's Lease requests by phase,
// shared by every candidate.
type phaseCounters [numPhases]struct {
	reads, writes, conflicts, errors atomic.Int64
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
	// runCtx is the candidate's run context: once it is done, the requests of
	// a candidate that still holds the Lease are its release.
	runCtx          context.Context
	releaseOnCancel bool
	timeout         time.Duration
	shard           *metrics.Shard
	counts          *phaseCounters
	// onWrite is told of every measured write.
	onWrite func()

	held     atomic.Bool // this candidate's last successful write named it holder
	acquired atomic.Bool // it held the Lease at some point
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
	case holder == nil && l.releaseOnCancel && l.runCtx.Err() != nil:
		return phaseRelease // the read that starts a release
	}
	return phaseRenew
}

// request is one Lease request as the recorder sees it: when it was due
// (the zero time when it falls outside the measured window), when it ended.
type request struct {
	intended, end time.Time
	measured      bool
}

// send runs do with ctx's deadline (and the operation timeout) but not its
// cancellation. The request is due when it started; but one that waited at
// the engine's gate across the start of the measured window is due when it
// left the gate (when it got its connection), which is when the apiserver
// saw it: so the window holds exactly the requests the apiserver counted in
// it.
func (l *meteredLock) send(ctx context.Context, do func(context.Context) error) (request, error) {
	rctx := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(rctx, deadline)
		defer cancel()
	}
	rctx, cancel := context.WithTimeout(rctx, l.timeout)
	defer cancel()
	var sent atomic.Pointer[time.Time]
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		now := time.Now()
		sent.CompareAndSwap(nil, &now)
	}})
	start := time.Now()
	err := do(rctx)
	rq := request{intended: start, end: time.Now()}
	if s := sent.Load(); s != nil && !l.shard.Measured(start) {
		rq.intended = *s
	}
	rq.measured = l.shard.Measured(rq.intended)
	return rq, err
}

// Get reads the Lease. NotFound is a successful read: the Lease does not
// exist yet and the candidate will create it.
func (l *meteredLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	p := l.phase(nil)
	var rec *resourcelock.LeaderElectionRecord
	var raw []byte
	rq, err := l.send(ctx, func(ctx context.Context) (err error) {
		rec, raw, err = l.inner.Get(ctx)
		return err
	})
	out := metrics.Classify(err)
	if apierrors.IsNotFound(err) {
		out = metrics.Success
	}
	if rq.measured {
		l.counts[p].reads.Add(1)
		if out != metrics.Success {
			l.counts[p].errors.Add(1)
		}
	}
	l.shard.RecordAttempt(rq.intended, metrics.Attempt{Kind: metrics.Read, Latency: rq.end.Sub(rq.intended), Outcome: out})
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
	rq, err := l.send(ctx, func(ctx context.Context) error { return do(ctx, ler) })
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
		}
	}
	if rq.measured {
		c := &l.counts[p]
		c.writes.Add(1)
		switch out {
		case metrics.Success:
		case metrics.VersionConflict:
			c.conflicts.Add(1)
		default:
			c.errors.Add(1)
		}
		l.onWrite()
	}
	l.shard.RecordAttempt(rq.intended, metrics.Attempt{Kind: metrics.Write, Latency: rq.end.Sub(rq.intended), Outcome: out})
	l.shard.RecordOp(metrics.Op{Intended: rq.intended, Start: rq.intended, End: rq.end, Outcome: out, Err: err, Attempts: 1})
	return err
}

// RecordEvent is a no-op: kb-bench records no Kubernetes Events.
func (l *meteredLock) RecordEvent(string) {}

// Identity is the candidate's identity.
func (l *meteredLock) Identity() string { return l.inner.Identity() }

// Describe names the Lease.
func (l *meteredLock) Describe() string { return l.inner.Describe() }
