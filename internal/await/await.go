// Package await lets tests wait for an event instead of for a time: a
// slow or loaded machine only makes a test slower, never red. A wait gives
// up only near the test binary's own deadline (go test -timeout), leaving a
// margin to clean up and report, and then fails the test naming what did
// not happen. Import it from tests only.
package await

import (
	"context"
	"testing"
	"time"
)

// margin is the time left after a wait gives up, for the test to clean
// up and report before the test binary's deadline kills it.
const margin = 30 * time.Second

// giveUp is when a wait in t gives up: the test binary's deadline less
// the margin (or half the time left, if less); false without a deadline.
func giveUp(t testing.TB) (time.Time, bool) {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return time.Time{}, false
	}
	deadline, ok := d.Deadline()
	return deadline.Add(-min(margin, time.Until(deadline)/2)), ok
}

// After returns a channel that receives when a wait in t gives up, for a
// select that also waits on other events; nil (never ready) when the test
// binary has no deadline.
func After(t testing.TB) <-chan time.Time {
	at, ok := giveUp(t)
	if !ok {
		return nil
	}
	return time.After(time.Until(at))
}

// Context returns a context that ends when a wait in t gives up, or when
// t ends.
func Context(t testing.TB) context.Context {
	ctx := t.Context()
	if at, ok := giveUp(t); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, at)
		t.Cleanup(cancel)
	}
	return ctx
}

// Until polls cond until it returns nil. If it has not when the wait
// gives up, t fails with what (the event waited for) and cond's last
// error (what is still not so).
func Until(t testing.TB, what string, cond func() error) {
	t.Helper()
	after := After(t)
	for wait := time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-after:
			t.Fatalf("waiting for %s: still not so near the test's deadline (go test -timeout): %v", what, err)
		case <-time.After(wait):
		}
	}
}

// Recv waits for a value from ch; if none comes before the wait gives up,
// t fails with what (the event waited for).
func Recv[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-After(t):
		t.Fatalf("waiting for %s: it did not happen before the test's deadline (go test -timeout)", what)
	}
	var zero T
	return zero
}
