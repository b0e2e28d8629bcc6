package transport

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The target is lost only when nothing has answered for targetQuiet and
// requests failed meanwhile; any answer, even a 500, resets it; requests
// the run cancelled itself say nothing. The clock is passed in.
func TestHealthLost(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	h := NewHealth()
	last := time.Unix(0, h.lastAnswer.Load())
	for range targetFailures {
		h.failed(refused)
	}
	if why := h.lost(last.Add(targetQuiet - time.Millisecond)); why != "" {
		t.Errorf("lost before %s of quiet: %s", targetQuiet, why)
	}
	why := h.lost(last.Add(targetQuiet))
	if !strings.Contains(why, "connection refused") || !strings.Contains(why, "3 failed") {
		t.Errorf("lost after %s of quiet and %d failures: %q", targetQuiet, targetFailures, why)
	}

	h.answered()
	last = time.Unix(0, h.lastAnswer.Load())
	if why := h.lost(last.Add(time.Hour)); why != "" {
		t.Errorf("an answer and no failure since: lost %q", why)
	}
	for range 100 {
		h.failed(context.Canceled)
		h.failed(errors.Join(errors.New("request cancelled"), context.Canceled))
	}
	if why := h.lost(last.Add(time.Hour)); why != "" {
		t.Errorf("cancelled requests made the target lost: %q", why)
	}
	h.failed(context.DeadlineExceeded)
	h.failed(context.DeadlineExceeded)
	if why := h.lost(last.Add(time.Hour)); why != "" {
		t.Errorf("%d timeouts (fewer than %d) made the target lost: %q", 2, targetFailures, why)
	}
	h.failed(context.DeadlineExceeded)
	if why := h.lost(last.Add(time.Hour)); !strings.Contains(why, "context deadline exceeded") {
		t.Errorf("a hung target (%d timeouts, no answer for an hour) is not lost: %q", targetFailures, why)
	}
}
