package workload

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/metrics/apiserver"
	"github.com/kb-bench/kb-bench/results"
)

// serverWatch takes the apiserver's /metrics around the measured window for
// the server cross-check (metrics/apiserver scrapes, results compares).
type serverWatch struct {
	rc     rest.Interface
	before metrics.ServerSample
	err    error
}

// scrapeServer takes the first scrape. Call it when the warm-up's
// operations have finished and before the first measured one starts.
func scrapeServer(ctx context.Context, rc rest.Interface) *serverWatch {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	before, err := apiserver.Scrape(sctx, rc)
	return &serverWatch{rc: rc, before: before, err: err}
}

// check takes the second scrape and compares the two with m. Call it right
// after the last measured operation. It never fails: when /metrics cannot
// be read it says why, and warns on log.
func (w *serverWatch) check(ctx context.Context, m results.Measurements, resource string, log io.Writer) *results.ServerCheck {
	before, err := w.before, w.err
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
