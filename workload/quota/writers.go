package quota

import (
	"context"
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// write runs the writers until the run ends: after the warm-up plus
// Spec.Duration, after Spec.Operations measured creates, or when ctx is
// cancelled. Creates in flight then finish or hit their own timeout.
func (r *run) write(ctx context.Context) {
	env := r.env
	r.start = time.Now()
	r.measureFrom = r.start.Add(env.Spec.Warmup.Duration)
	// The set-up before this is not warm-up: measure from here.
	env.Recorder.MeasureFrom(r.measureFrom)
	env.Result.Started = r.measureFrom
	r.admittedLatency, r.rejectedLatency = metrics.NewHistogram(), metrics.NewHistogram()
	var end time.Time
	if d := env.Spec.Duration.Duration; d > 0 {
		end = r.measureFrom.Add(d)
	}
	var wg sync.WaitGroup
	for w := range env.Spec.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.writer(ctx, w, end)
		}()
	}
	wg.Wait()
	env.Result.Ended = time.Now()
}

// writer creates objects named w<writer>-<n> one after the other.
func (r *run) writer(ctx context.Context, w int, end time.Time) {
	env := r.env
	client := env.Clients[w%len(env.Clients)]
	shard := env.Recorder.Shard(w)
	// In-flight creates are not cancelled with ctx: a create cut off on the
	// client may still be admitted on the server, and would go uncounted.
	opCtx := context.WithoutCancel(ctx)

	for n := 0; ; n++ {
		if ctx.Err() != nil {
			return
		}
		start := time.Now()
		if !end.IsZero() && !start.Before(end) {
			return
		}
		measured := !start.Before(r.measureFrom)
		if measured && env.Spec.Operations > 0 && r.measured.Add(1) > env.Spec.Operations {
			return
		}

		cctx, cancel := context.WithTimeout(opCtx, env.Spec.OpTimeout.Duration)
		err := r.kind.create(cctx, client, env.Namespace, fmt.Sprintf("w%d-%d", w, n), env.Spec.ObjectSize, false)
		cancel()
		done := time.Now()
		lat := done.Sub(start)

		out := metrics.Classify(err)
		r.creates.Add(1)
		switch {
		case err == nil:
			r.admitted.Add(1)
			if measured {
				r.recordLatency(r.admittedLatency, lat)
			}
		case isQuotaRejection(err):
			out = metrics.FailedPrecondition
			r.rejected.Add(1)
			r.fullAt.CompareAndSwap(0, int64(done.Sub(r.start)))
			if measured {
				r.recordLatency(r.rejectedLatency, lat)
			}
		case out == metrics.VersionConflict:
			r.conflicts.Add(1)
		default:
			r.errs.Add(1)
		}
		shard.RecordAttempt(start, metrics.Attempt{Kind: metrics.Write, Latency: lat, Outcome: out})
		shard.RecordOp(metrics.Op{Intended: start, Start: start, End: done, Outcome: out, Err: err, Attempts: 1})

		if think := env.Spec.ThinkTime.Duration; think > 0 {
			if sleep(ctx, think) != nil {
				return
			}
		}
	}
}

// recordLatency adds d to one of the run's two histograms. One pair for all
// writers keeps memory flat in the number of writers; the lock is held for
// well under a microsecond against creates that take milliseconds.
func (r *run) recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	r.mu.Lock()
	metrics.RecordLatency(h, d)
	r.mu.Unlock()
}

// finish counts what exists, reads the quota's status, and fills the
// report and the checks. It runs also after Ctrl-C.
func (r *run) finish(ctx context.Context) error {
	env := r.env
	ctx = context.WithoutCancel(ctx)
	rep := r.report
	rep.Creates = r.creates.Load()
	rep.Admitted = r.admitted.Load()
	rep.Rejected = r.rejected.Load()
	rep.Conflicts = r.conflicts.Load()
	rep.Errors = r.errs.Load()
	rep.FullAt = time.Duration(r.fullAt.Load())
	rep.AdmittedLatency = results.LatencyOf(r.admittedLatency)
	rep.RejectedLatency = results.LatencyOf(r.rejectedLatency)
	env.Result.Quota = rep

	sctx, cancel := r.step(ctx)
	defer cancel()
	existing, err := r.kind.usage(sctx, r.admin, env.Namespace)
	if err != nil {
		return fmt.Errorf("quota: counting the %s at the end: %w", r.kind.plural, err)
	}
	rq, err := r.admin.CoreV1().ResourceQuotas(env.Namespace).Get(sctx, QuotaName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("quota: reading ResourceQuota %s at the end: %w", QuotaName, err)
	}
	rep.ExistingAtEnd = existing
	rep.UsedAtEnd = usedOf(rq, corev1.ResourceName(rep.Resource))
	env.Result.Checks = append(env.Result.Checks, checks(rep)...)
	if lost := rep.ExistingAtEnd - rep.InitialUsed - rep.Admitted; lost > 0 {
		r.warn("quota: %d objects exist whose create did not succeed on the client (cut off by a timeout or Ctrl-C after the server admitted them)", lost)
	}
	return nil
}

// checks are the quota invariants over a finished report.
func checks(rep *results.QuotaReport) []results.Check {
	creates := rep.InitialUsed + rep.Admitted
	c := []results.Check{
		{Name: CheckCreatesWithinHard, Expected: rep.Hard, Observed: creates, Passed: creates <= rep.Hard},
		{Name: CheckExistingWithinHard, Expected: rep.Hard, Observed: rep.ExistingAtEnd, Passed: rep.ExistingAtEnd <= rep.Hard},
		{Name: CheckUsedMatches, Expected: rep.ExistingAtEnd, Observed: rep.UsedAtEnd, Passed: rep.UsedAtEnd == rep.ExistingAtEnd},
	}
	if !c[0].Passed {
		c[0].Detail = fmt.Sprintf("%d creates succeeded on top of %d already used: %d more than the hard limit %d", rep.Admitted, rep.InitialUsed, creates-rep.Hard, rep.Hard)
	}
	if !c[1].Passed {
		c[1].Detail = fmt.Sprintf("%d objects' worth of %s exist, %d more than the hard limit %d", rep.ExistingAtEnd, rep.Resource, rep.ExistingAtEnd-rep.Hard, rep.Hard)
	}
	if !c[2].Passed {
		c[2].Detail = fmt.Sprintf("status.used says %d but the objects that exist use %d: quota accounting drifted", rep.UsedAtEnd, rep.ExistingAtEnd)
	}
	return c
}
