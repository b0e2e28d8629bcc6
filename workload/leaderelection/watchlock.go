package leaderelection

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kb-bench/kb-bench/internal/k8s"
)

// watchElector is kb-bench's raw Lease lock, the other lock the scenario
// compares with client-go's. It takes and renews the Lease with the same
// compare-and-swap writes and the same timings, with two differences:
//
//   - while it leads it watches the Lease, and steps down the moment an
//     event names another holder or deletes the Lease, instead of finding
//     out at its next renewal;
//   - a renewal answered 409 or 404 ends its leadership at once (the Lease
//     is someone else's now); client-go retries until the renew deadline.
//
// A follower judges the Lease expired when it has not changed
// (resourceVersion) for the holder's recorded lease duration, measured on
// the follower's own clock from when it saw the change, as client-go does.
type watchElector struct {
	c    *candidate
	id   string
	lock *meteredLock

	observedRV string
	observedAt time.Time
}

// run campaigns until ctx ends or the candidate loses the Lease after
// leading; it reports whether it led.
func (e *watchElector) run(ctx context.Context) (led bool) {
	for {
		if rec, ok := e.tryAcquire(ctx); ok {
			e.lead(ctx, rec)
			return true
		}
		if !k8s.Sleep(ctx, wait.Jitter(e.c.Settings.RetryPeriod.Duration, 1.2)) {
			return false
		}
	}
}

// tryAcquire takes the Lease if it is free, released or expired, and
// returns the record it wrote.
func (e *watchElector) tryAcquire(ctx context.Context) (resourcelock.LeaderElectionRecord, bool) {
	old, _, err := e.lock.Get(ctx)
	// Now is when the Get returned, as client-go's observed time is: a Get
	// held long (a partition, the window's edge) must not date the
	// follower's sight of a change back to before it, or it would find a
	// freshly renewed Lease expired early and take it from a live holder.
	now := time.Now()
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: e.id, LeaseDurationSeconds: int(e.c.Lease / time.Second),
		AcquireTime: metav1.NewTime(now), RenewTime: metav1.NewTime(now)}
	if apierrors.IsNotFound(err) {
		return rec, e.lock.Create(ctx, rec) == nil
	}
	if err != nil {
		return rec, false
	}
	if seen := e.lock.seen.Load(); seen != nil && seen.ResourceVersion != e.observedRV {
		e.observedRV, e.observedAt = seen.ResourceVersion, now
	}
	valid := e.observedAt.Add(time.Duration(old.LeaseDurationSeconds) * time.Second).After(now)
	if old.HolderIdentity != "" && old.HolderIdentity != e.id && valid {
		return rec, false
	}
	rec.LeaderTransitions = old.LeaderTransitions
	if old.HolderIdentity != e.id {
		rec.LeaderTransitions++
	}
	return rec, e.lock.Update(ctx, rec) == nil
}

// lead runs the candidate's leadership until it steps down: ctx ends (it
// is stopped), the watch shows another holder or no Lease, a renewal is
// refused (409 or 404), or a renewal round does not succeed within the
// renew deadline.
func (e *watchElector) lead(ctx context.Context, rec resourcelock.LeaderElectionRecord) {
	acquired := time.Now()
	var acquireRV string
	if seen := e.lock.seen.Load(); seen != nil {
		acquireRV = seen.ResourceVersion
	}
	lctx, stepDown := context.WithCancel(ctx)
	defer stepDown()
	ended := make(chan struct{})
	e.c.leads(lctx, e.id, acquired, e.lock, ended)
	// It steps down at the first event of its watch that names another
	// holder or deletes the Lease. The watch goes through the candidate's
	// own client and partition: a partitioned leader sees nothing until it
	// heals.
	var watching sync.WaitGroup
	watching.Go(func() {
		w, err := watchtools.NewRetryWatcherWithContext(lctx, acquireRV, leaseWatcher{e.c.client, e.c.Namespace})
		if err != nil {
			return // no resourceVersion to watch from: the renewals still find out
		}
		eachLease(lctx, w, func(t watch.EventType, l *coordinationv1.Lease) bool {
			if e.c.partition.wait(lctx) != nil {
				return false
			}
			if t == watch.Deleted || holderOf(l) != e.id {
				stepDown()
				return false
			}
			return true
		})
	})

	retry, renew := e.c.Settings.RetryPeriod.Duration, e.c.Settings.RenewDeadline.Duration
	// Renew as client-go does: a retry period after each success, a
	// renewal round starts; it retries every retry period and gives up
	// leading when the round has not succeeded within the renew deadline.
	for k8s.Sleep(lctx, retry) {
		deadline := time.Now().Add(renew)
		for {
			rec.RenewTime = metav1.NewTime(time.Now())
			rctx, cancel := context.WithDeadline(lctx, deadline)
			err := e.lock.Update(rctx, rec)
			cancel()
			if err == nil {
				break
			}
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				stepDown() // someone else's Lease now
				break
			}
			if !k8s.Sleep(lctx, min(retry, time.Until(deadline))) {
				break
			}
			if !time.Now().Before(deadline) {
				stepDown() // out of time
				break
			}
		}
	}
	<-ended
	watching.Wait()
	// A stopped leader that still holds the Lease gives it up.
	if e.c.Settings.ReleaseOnCancel && ctx.Err() != nil && e.lock.held.Load() {
		rel := resourcelock.LeaderElectionRecord{LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1,
			RenewTime: metav1.NewTime(time.Now()), AcquireTime: metav1.NewTime(time.Now())}
		_ = e.lock.Update(ctx, rel) //nolint:errcheck // counted by the lock; nothing to do on failure
	}
}
