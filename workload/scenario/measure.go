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

// Measurer measures one worker's operations into its stripe of the
// recorder: every scenario's operations go through it (Measure), or, for
// requests a scenario times itself, through RecordRequest. A worker's
// operations never overlap, so the one in progress (cur) is kept here,
// costing no allocation.
type Measurer struct {
	stripe  *metrics.Stripe
	base    context.Context
	timeout time.Duration
	retry   *spec.Backoff // nil: an operation is one attempt
	// classify tells a write's outcome from its error.
	classify func(error) metrics.Outcome
	cur      Op
}

// Measurer returns worker w's Measurer. With the retry strategy its
// operations retry on conflict with the Spec's backoff; classify (nil:
// metrics.Classify) tells a write's outcome from its error, for a
// scenario whose writes fail in a way of their own.
func (e *Env) Measurer(w int, classify func(error) metrics.Outcome) *Measurer {
	m := &Measurer{stripe: e.Recorder.Stripe(w), base: e.Ops(), timeout: e.Spec.OpTimeout.Duration, classify: classify}
	if e.Spec.Strategy == spec.StrategyRetry {
		m.retry = e.Spec.Backoff
	}
	if m.classify == nil {
		m.classify = metrics.Classify
	}
	return m
}

// Measurers returns the Measurers of workers 0..n-1.
func (e *Env) Measurers(n int, classify func(error) metrics.Outcome) []*Measurer {
	ms := make([]*Measurer, n)
	for w := range ms {
		ms[w] = e.Measurer(w, classify)
	}
	return ms
}

// Measured reports whether an operation due at intended falls in the
// measured window.
func (m *Measurer) Measured(intended time.Time) bool { return m.stripe.Measured(intended) }

// Op is one operation in progress, which Measure hands to its attempt.
type Op struct {
	// Ctx bounds the operation, every request and retry of it: the
	// operation timeout from its start. An interrupt does not end it, a
	// lost target does (Env.Ops).
	Ctx context.Context
	m   *Measurer
	op  metrics.Op
}

// Measure runs one operation that was due at intended and records it:
// attempt makes its requests through o's Read and Write. With the retry
// strategy attempt runs inside client-go's retry.RetryOnConflict, each
// write attempt and the time slept between them counted (RetryOnConflict
// reports neither). Its latency counts from intended, so an open loop's
// late start is in it. It returns the operation as recorded.
func (m *Measurer) Measure(intended time.Time, attempt func(o *Op) error) metrics.Op {
	o := &m.cur
	*o = Op{m: m, op: metrics.Op{Intended: intended, Start: time.Now()}}
	// The operation's timeout context is most of the engine's own cost per
	// operation (a few small allocations), and the one way to bound an
	// operation's every request and retry together.
	ctx, cancel := context.WithDeadline(m.base, o.op.Start.Add(m.timeout))
	o.Ctx = ctx
	var err error
	if m.retry == nil {
		err = attempt(o)
	} else {
		// RetryOnConflict's sleeps do not watch a context, so an operation
		// can overrun its timeout by at most one backoff step; the next
		// attempt then fails at once as a timeout.
		var last time.Time
		err = retry.RetryOnConflict(WaitBackoff(*m.retry), func() error {
			if !last.IsZero() {
				o.op.Backoff += time.Since(last)
			}
			err := attempt(o)
			last = time.Now()
			return err
		})
		o.op.GaveUp = err != nil && apierrors.IsConflict(err)
	}
	cancel()
	o.op.End = time.Now()
	o.op.Outcome, o.op.Err = m.classify(err), err
	m.stripe.RecordOp(o.op)
	return o.op
}

// Measured reports whether the operation falls in the measured window.
func (o *Op) Measured() bool { return o.m.Measured(o.op.Intended) }

// Read makes one read of the operation, timed and recorded as a read
// attempt.
func (o *Op) Read(get func(ctx context.Context) error) error {
	start := time.Now()
	err := get(o.Ctx)
	o.m.stripe.RecordAttempt(o.op.Intended, metrics.Attempt{Kind: metrics.Read, Latency: time.Since(start), Outcome: metrics.Classify(err)})
	return err
}

// Write makes one write attempt of the operation, timed and recorded, and
// returns its outcome: whether it may have landed when it failed is
// MayHaveLanded's to say.
func (o *Op) Write(write func(ctx context.Context) error) (metrics.Outcome, error) {
	start := time.Now()
	err := write(o.Ctx)
	out := o.m.classify(err)
	o.m.stripe.RecordAttempt(o.op.Intended, metrics.Attempt{Kind: metrics.Write, Latency: time.Since(start), Outcome: out})
	o.op.Attempts++
	return out, err
}

// RecordRequest records one request a scenario timed itself, from when
// it was due (intended) to its answer (end): a read as a read attempt, a
// write as an operation of one write attempt.
func RecordRequest(s *metrics.Stripe, kind metrics.AttemptKind, intended, end time.Time, out metrics.Outcome, err error) {
	s.RecordAttempt(intended, metrics.Attempt{Kind: kind, Latency: end.Sub(intended), Outcome: out})
	if kind == metrics.Write {
		s.RecordOp(metrics.Op{Intended: intended, Start: intended, End: end, Outcome: out, Err: err, Attempts: 1})
	}
}

// WaitBackoff maps b onto client-go's wait.Backoff, where Steps is the
// number of attempts (not of retries).
func WaitBackoff(b spec.Backoff) wait.Backoff {
	return wait.Backoff{Steps: b.Steps, Duration: b.Duration, Factor: b.Factor, Jitter: b.Jitter}
}
