// Package clientgo counts the work client-go does out of the engine's
// sight: requests it retried on its own (429 and 5xx with Retry-After, up
// to 10 times) and time spent waiting in its client-side rate limiter.
//
// This is the one process-wide piece of kb-bench. client-go reports these
// through k8s.io/client-go/tools/metrics, whose Register sets package
// variables once per process (later calls are ignored). So Install wires
// kb-bench's adapters the first time and hands every caller the same
// Counters; a run reads them before and after and keeps the difference.
// Two runs in one process at the same time would see each other's counts.
package clientgo

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	clientmetrics "k8s.io/client-go/tools/metrics"
)

// Counters accumulates client-go's hidden work for the whole process.
type Counters struct {
	retries         atomic.Int64
	rateLimited     atomic.Int64 // requests that waited in the rate limiter for minWait or more
	rateLimiterWait atomic.Int64 // nanoseconds
}

// Stats is a reading of Counters; subtract two readings for one run.
type Stats struct {
	// Retries counts requests client-go sent again on its own.
	Retries int64
	// RateLimited counts requests that waited a millisecond or more in the
	// client-side rate limiter; RateLimiterWait is the total wait of every
	// request (it stays zero without a limiter, QPS < 0).
	RateLimited     int64
	RateLimiterWait time.Duration
}

// Sub returns s minus before.
func (s Stats) Sub(before Stats) Stats {
	return Stats{
		Retries:         s.Retries - before.Retries,
		RateLimited:     s.RateLimited - before.RateLimited,
		RateLimiterWait: s.RateLimiterWait - before.RateLimiterWait,
	}
}

// Read returns the counts so far.
func (c *Counters) Read() Stats {
	return Stats{
		Retries:         c.retries.Load(),
		RateLimited:     c.rateLimited.Load(),
		RateLimiterWait: time.Duration(c.rateLimiterWait.Load()),
	}
}

// retryAdapter implements clientmetrics.RetryMetric.
type retryAdapter struct{ c *Counters }

func (a retryAdapter) IncrementRetry(context.Context, string, string, string) { a.c.retries.Add(1) }

// limiterAdapter implements clientmetrics.LatencyMetric for the rate limiter.
type limiterAdapter struct{ c *Counters }

// minWait separates a real wait for a token from the cost of taking one.
const minWait = time.Millisecond

func (a limiterAdapter) Observe(_ context.Context, _ string, _ url.URL, latency time.Duration) {
	a.c.rateLimiterWait.Add(int64(latency))
	if latency >= minWait {
		a.c.rateLimited.Add(1)
	}
}

// installation is the process-wide registration (see the package comment
// for why this one piece of state cannot be per run).
var installation struct {
	once     sync.Once
	counters *Counters
	err      error
}

// Install registers kb-bench's adapters with client-go's metrics hooks,
// once per process, and returns the process's Counters. Every call returns
// the same Counters. It fails when something else in the process
// registered client-go metrics first: client-go keeps only the first
// registration, so these counts would stay zero.
func Install() (*Counters, error) {
	installation.once.Do(func() {
		c := &Counters{}
		retry, limiter := retryAdapter{c}, limiterAdapter{c}
		clientmetrics.Register(clientmetrics.RegisterOpts{RequestRetry: retry, RateLimiterLatency: limiter})
		if clientmetrics.RequestRetry != clientmetrics.RetryMetric(retry) || clientmetrics.RateLimiterLatency != clientmetrics.LatencyMetric(limiter) {
			installation.err = errors.New("client-go metrics were registered by another component first, so client-go's own retries and rate-limiter waits cannot be counted")
			return
		}
		installation.counters = c
	})
	return installation.counters, installation.err
}
