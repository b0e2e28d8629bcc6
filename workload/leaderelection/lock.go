package leaderelection

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// phase says what a candidate was doing when it sent a Lease request.
type phase int

const (
	phaseAcquire phase = iota // it does not hold the Lease
	phaseRenew                // it holds the Lease and keeps it
	phaseRelease              // it was stopped and gives the Lease up
	numPhases
)

// phaseCounters counts Lease requests by phase, shared by every candidate.
type phaseCounters [numPhases]struct {
	reads, writes, conflicts, errors atomic.Int64
}

func (c *phaseCounters) report(p phase) results.LeasePhase {
	return results.LeasePhase{
		Reads:     c[p].reads.Load(),
		Writes:    c[p].writes.Load(),
		Conflicts: c[p].conflicts.Load(),
		Errors:    c[p].errors.Load(),
	}
}

// meteredLock wraps client-go's LeaseLock so that every Get, Create and
// Update the leader-election code makes (its internal retries included) is
// timed, classified and counted by phase. Each run of a candidate gets its
// own meteredLock. A request cut off because the scenario stopped the
// candidate (context canceled) is not counted: it measures the stop, not
// the apiserver.
type meteredLock struct {
	inner *resourcelock.LeaseLock
	// runCtx is the candidate's run context: once it is done, the requests of
	// a candidate that still holds the Lease are its release.
	runCtx          context.Context
	releaseOnCancel bool
	timeout         time.Duration
	shard           *metrics.Shard
	counts          *phaseCounters
	// onWrite is told of every write, with when it was due.
	onWrite func(intended time.Time)

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

// stoppedByUs reports whether err only says that the scenario stopped the
// candidate while the request was in flight.
func (l *meteredLock) stoppedByUs(err error) bool {
	return errors.Is(err, context.Canceled) && l.runCtx.Err() != nil
}

// Get reads the Lease. NotFound is a successful read: the Lease does not
// exist yet and the candidate will create it.
func (l *meteredLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	p := l.phase(nil)
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	start := time.Now()
	rec, raw, err := l.inner.Get(ctx)
	lat := time.Since(start)
	if l.stoppedByUs(err) {
		return rec, raw, err
	}
	out := metrics.Classify(err)
	if apierrors.IsNotFound(err) {
		out = metrics.Success
	}
	l.counts[p].reads.Add(1)
	if out != metrics.Success {
		l.counts[p].errors.Add(1)
	}
	l.shard.RecordAttempt(start, metrics.Attempt{Kind: metrics.Read, Latency: lat, Outcome: out})
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

func (l *meteredLock) write(ctx context.Context, ler resourcelock.LeaderElectionRecord, do func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	p := l.phase(&ler.HolderIdentity)
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	start := time.Now()
	err := do(ctx, ler)
	end := time.Now()
	if l.stoppedByUs(err) {
		return err
	}

	out := metrics.Classify(err)
	// A create that loses the race for a new Lease answers 409
	// AlreadyExists: the same lost compare-and-swap as a stale update.
	if apierrors.IsAlreadyExists(err) {
		out = metrics.VersionConflict
	}
	c := &l.counts[p]
	c.writes.Add(1)
	switch out {
	case metrics.Success:
		mine := ler.HolderIdentity == l.inner.Identity()
		l.held.Store(mine)
		if mine {
			l.acquired.Store(true)
		}
	case metrics.VersionConflict:
		c.conflicts.Add(1)
	default:
		c.errors.Add(1)
	}
	l.shard.RecordAttempt(start, metrics.Attempt{Kind: metrics.Write, Latency: end.Sub(start), Outcome: out})
	l.shard.RecordOp(metrics.Op{Intended: start, Start: start, End: end, Outcome: out, Err: err, Attempts: 1})
	l.onWrite(start)
	return err
}

// RecordEvent is a no-op: kb-bench records no Kubernetes Events.
func (l *meteredLock) RecordEvent(string) {}

// Identity is the candidate's identity.
func (l *meteredLock) Identity() string { return l.inner.Identity() }

// Describe names the Lease.
func (l *meteredLock) Describe() string { return l.inner.Describe() }
