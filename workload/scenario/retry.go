package scenario

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// RetryOnConflict runs attempt inside client-go's retry.RetryOnConflict
// with backoff b, and records on op what RetryOnConflict does not report:
// the time slept between attempts (op.Backoff) and whether the retries ran
// out on a conflict (op.GaveUp). attempt counts its own writes in
// op.Attempts. RetryOnConflict's sleeps do not watch a context, so an
// operation can overrun its timeout by at most one backoff step; the next
// attempt then fails at once as a timeout.
func RetryOnConflict(b spec.Backoff, op *metrics.Op, attempt func() error) error {
	var last time.Time
	err := retry.RetryOnConflict(WaitBackoff(b), func() error {
		if !last.IsZero() {
			op.Backoff += time.Since(last)
		}
		err := attempt()
		last = time.Now()
		return err
	})
	op.GaveUp = err != nil && apierrors.IsConflict(err)
	return err
}

// WaitBackoff maps b onto client-go's wait.Backoff, where Steps is the
// number of attempts (not of retries).
func WaitBackoff(b spec.Backoff) wait.Backoff {
	return wait.Backoff{Steps: b.Steps, Duration: b.Duration, Factor: b.Factor, Jitter: b.Jitter}
}

// Sleep waits d, or until ctx is done; it reports whether the whole d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
