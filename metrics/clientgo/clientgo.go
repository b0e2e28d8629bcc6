// Package clientgo counts the requests client-go retries on its own, out of
// the engine's sight: 429s and 5xx with Retry-After, up to 10 times. (The
// engine's own rate limiter measures the client-side waits.)
//
// This is the one process-wide piece of kb-bench. client-go reports
// retries through k8s.io/client-go/tools/metrics, whose Register sets
// package variables once per process (later calls are ignored). So Install
// wires kb-bench's adapter the first time and hands every caller the same
// Counters; a run reads them before and after and keeps the difference.
// Two runs in one process at the same time would see each other's counts.
package clientgo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	clientmetrics "k8s.io/client-go/tools/metrics"
)

// Counters accumulates client-go's hidden retries for the whole process.
type Counters struct {
	retries atomic.Int64
}

// Retries returns the requests client-go sent again on its own so far;
// subtract two readings for one run.
func (c *Counters) Retries() int64 { return c.retries.Load() }

// retryAdapter implements clientmetrics.RetryMetric.
type retryAdapter struct{ c *Counters }

func (a retryAdapter) IncrementRetry(context.Context, string, string, string) { a.c.retries.Add(1) }

// Install registers kb-bench's adapter with client-go's metrics hooks, once
// per process, and returns the process's Counters. Every call returns the
// same Counters. It fails when something else in the process registered
// client-go metrics first: client-go keeps only the first registration, so
// these counts would stay zero.
func Install() (*Counters, error) { return install() }

// install is the process-wide registration (see the package comment for
// why this one piece of state cannot be per run).
var install = sync.OnceValues(func() (*Counters, error) {
	c := &Counters{}
	retry := retryAdapter{c}
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestRetry: retry})
	if clientmetrics.RequestRetry != clientmetrics.RetryMetric(retry) {
		return nil, errors.New("client-go metrics were registered by another component first, so client-go's own retries cannot be counted")
	}
	return c, nil
})
