package workload

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/metrics/apiserver"
	"github.com/kb-bench/kb-bench/results"
)

// serverWatch takes the apiserver's /metrics around the measured window for
// the server cross-check (metrics/apiserver scrapes, results compares). The
// first scrape is due when the warm-up ends: at once when there is none,
// else from a timer while the writers run (warm-up operations still in
// flight then show as a mismatch, which results explains).
type serverWatch struct {
	rc    rest.Interface
	timer *time.Timer

	mu     sync.Mutex
	taken  chan struct{} // closed once the first scrape is done (or failed)
	before metrics.ServerSample
	err    error
}

// watchServer schedules the first scrape at at (now, synchronously, when at
// has passed).
func watchServer(ctx context.Context, rc rest.Interface, at time.Time) *serverWatch {
	w := &serverWatch{rc: rc, taken: make(chan struct{})}
	scrape := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		before, err := apiserver.Scrape(sctx, rc)
		w.mu.Lock()
		w.before, w.err = before, err
		w.mu.Unlock()
		close(w.taken)
	}
	if d := time.Until(at); d > 0 {
		w.timer = time.AfterFunc(d, scrape)
	} else {
		scrape()
	}
	return w
}

// check takes the second scrape and compares the two with m. Call it right
// after the last measured operation. It never fails: when /metrics cannot
// be read it says why, and warns on log.
func (w *serverWatch) check(ctx context.Context, m results.Measurements, resource string, log io.Writer) *results.ServerCheck {
	if w.timer != nil && w.timer.Stop() {
		return results.UnavailableServerCheck("the run stopped before the warm-up ended, so there is no measured window to compare")
	}
	<-w.taken
	w.mu.Lock()
	before, err := w.before, w.err
	w.mu.Unlock()
	if err == nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		var after metrics.ServerSample
		after, err = apiserver.Scrape(sctx, w.rc)
		if err == nil {
			return results.NewServerCheck(before, after, resource, m)
		}
	}
	fmt.Fprintf(log, "warning: no server cross-check: %v\n", err)
	return results.UnavailableServerCheck(err.Error())
}
