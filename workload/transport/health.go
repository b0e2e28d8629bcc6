package transport

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
)

// Target health: a dead apiserver answers nothing (connection refused or
// reset) and a hung one answers nothing until each request's deadline;
// writers would otherwise spin on errors, or wait, until the window ends.
const (
	// targetQuiet is how long no request may get an answer, while
	// requests fail, before the target is declared lost.
	targetQuiet = 3 * time.Second
	// targetFailures is how many requests must fail in that time.
	targetFailures = 3
	// healthEvery is how often the watchdog looks.
	healthEvery = 100 * time.Millisecond
)

// Health records, for every request the writers' clients send, whether an
// HTTP answer came back (whatever its status) or the request failed
// without one.
type Health struct {
	lastAnswer atomic.Int64 // unix nanoseconds
	failures   atomic.Int64 // requests without an answer since lastAnswer
	lastErr    atomic.Pointer[string]
	// gone is cancelled once the target is declared lost (Abandon): the
	// operations' contexts derive from it (scenario.Env.Ops), so those
	// still waiting on it end instead of each waiting out its timeout.
	gone    context.Context
	abandon context.CancelFunc
}

// NewHealth returns the health of a target that has just answered.
func NewHealth() *Health {
	h := &Health{}
	h.gone, h.abandon = context.WithCancel(context.Background())
	h.lastAnswer.Store(time.Now().UnixNano())
	return h
}

// answered records an HTTP response.
func (h *Health) answered() {
	h.lastAnswer.Store(time.Now().UnixNano())
	if h.failures.Load() != 0 {
		h.failures.Store(0)
	}
}

// failed records a request that got no answer; a request cancelled by the
// run itself (its end, Ctrl-C) says nothing about the target.
func (h *Health) failed(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	h.failures.Add(1)
	h.lastErr.Store(new(err.Error()))
}

// failingBackoff is how long a request waits before it is sent while the
// target answers nothing (targetFailures or more requests in a row failed):
// writers then probe it instead of spinning on connection errors.
const failingBackoff = 50 * time.Millisecond

// backoff waits failingBackoff (or until ctx ends) when the target is
// failing, and not at all otherwise.
func (h *Health) backoff(ctx context.Context) {
	if h.failures.Load() >= targetFailures {
		k8s.Sleep(ctx, failingBackoff)
	}
}

// lost says why the target is lost at now: no answer for targetQuiet
// while at least targetFailures requests failed; "" when it is not.
func (h *Health) lost(now time.Time) string {
	last := time.Unix(0, h.lastAnswer.Load())
	quiet := now.Sub(last)
	if quiet < targetQuiet || h.failures.Load() < targetFailures {
		return ""
	}
	why := "no answer"
	if p := h.lastErr.Load(); p != nil {
		why = *p
	}
	return fmt.Sprintf("no request got an answer for %s (since %s), %d failed; the last: %s",
		quiet.Round(100*time.Millisecond), last.UTC().Format("15:04:05.000"), h.failures.Load(), why)
}

// Watch cancels the run with spec.ErrTargetLost (and says why) as soon as
// the target is lost. The returned func stops watching.
func (h *Health) Watch(cancel context.CancelCauseFunc) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.Tick(healthEvery)
		for {
			select {
			case <-done:
				return
			case now := <-tick:
				if reason := h.lost(now); reason != "" {
					cancel(fmt.Errorf("%w: the apiserver stopped answering: %s", spec.ErrTargetLost, reason))
					h.Abandon()
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// Abandon gives up on the target: every operation's context (Gone) ends.
func (h *Health) Abandon() { h.abandon() }

// Gone is done once the target is declared lost (Abandon).
func (h *Health) Gone() context.Context { return h.gone }
