package quota

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Names of the checks the scenario reports.
const (
	CheckCreatesWithinHard  = "quota: successful creates within hard"
	CheckExistingWithinHard = "quota: objects existing at the end within hard"
	CheckUsedMatches        = "quota: status.used matches the objects that exist"
)

// Report holds the quota scenario's figures. Counts cover the whole run,
// warm-up included, because every admitted object counts against the quota;
// latencies cover the measured window only, like the summary.
type Report struct {
	// Resource is the quota'd resource, e.g. count/configmaps; Hard the limit H.
	Resource string
	Hard     int64
	// Writers is the number of concurrent creators.
	Writers int
	// StatusInitialized is set when kb-bench filled status.hard/status.used
	// itself because no quota controller did.
	StatusInitialized bool
	// InitialUsed is the usage already in the namespace before the writers started.
	InitialUsed int64

	// Creates counts create requests; Admitted those that succeeded;
	// Rejected the 403 Forbidden "exceeded quota" answers; Conflicts the
	// 409s that reached the client; Errors every other failure (timeouts
	// included).
	Creates, Admitted, Rejected, Conflicts, Errors int64
	// FullAt is when the first rejection came, from when the first create
	// was due; zero when the quota never filled.
	FullAt time.Duration

	// ExistingAtEnd is the usage counted from the objects that exist at
	// the end; UsedAtEnd the quota's status.used then.
	ExistingAtEnd, UsedAtEnd int64

	// AdmittedLatency and RejectedLatency are create latencies of the
	// measured window split by answer, from when each create was due: an
	// admitted create writes to etcd twice (quota status and object), a
	// rejected one not at all.
	AdmittedLatency, RejectedLatency results.Latency

	// EndError is why the end state could not be read, if it could not.
	EndError string
}

// Checks are the quota invariants: no more creates admitted than the hard
// limit allows, no more objects at the end than it allows, and status.used
// equal to what exists. The last two fail when the end could not be read.
func (r *Report) Checks() []results.Check {
	creates := r.InitialUsed + r.Admitted
	c := []results.Check{
		{Name: CheckCreatesWithinHard, Expected: r.Hard, Observed: creates, Passed: creates <= r.Hard},
		{Name: CheckExistingWithinHard, Expected: r.Hard, Observed: r.ExistingAtEnd, Passed: r.ExistingAtEnd <= r.Hard},
		{Name: CheckUsedMatches, Expected: r.ExistingAtEnd, Observed: r.UsedAtEnd, Passed: r.UsedAtEnd == r.ExistingAtEnd},
	}
	if !c[0].Passed {
		c[0].Detail = fmt.Sprintf("%d creates succeeded on top of %d already used: %d more than the hard limit %d", r.Admitted, r.InitialUsed, creates-r.Hard, r.Hard)
	}
	if r.EndError != "" {
		for i := range c[1:] {
			c[1+i].Passed = false
			c[1+i].Detail = "not checked: " + r.EndError
		}
		return c
	}
	if !c[1].Passed {
		c[1].Detail = fmt.Sprintf("%d objects' worth of %s exist, %d more than the hard limit %d", r.ExistingAtEnd, r.Resource, r.ExistingAtEnd-r.Hard, r.Hard)
	}
	if !c[2].Passed {
		c[2].Detail = fmt.Sprintf("status.used says %d but the objects that exist use %d: quota accounting drifted", r.UsedAtEnd, r.ExistingAtEnd)
	}
	return c
}

// Figures are the quota's figures: its counts (those Live shows too),
// what it held before and after, and the create latencies by answer.
func (r *Report) Figures() []results.Figure {
	out := r.counts()
	add := func(name string, v float64, unit results.Unit, help string) {
		out = append(out, results.Figure{Name: name, Value: v, Unit: unit, Help: help})
	}
	add("writers", float64(r.Writers), results.UnitCount, "Concurrent creators (with an open loop, the creates allowed in flight).")
	add("initialUsed", float64(r.InitialUsed), results.UnitCount, "Usage already in the namespace before the writers started.")
	if r.StatusInitialized {
		add("statusInitialized", 1, results.UnitBool, "kb-bench filled the quota's status itself, because no quota controller did.")
	}
	if r.FullAt > 0 {
		add("fullAt", float64(r.FullAt), results.UnitDuration, "From the first create due to the first rejection: when the quota was full.")
	}
	if r.EndError == "" {
		add("existingAtEnd", float64(r.ExistingAtEnd), results.UnitCount, "Usage counted from the objects that exist at the end.")
		add("usedAtEnd", float64(r.UsedAtEnd), results.UnitCount, "The quota's status.used at the end.")
	}
	out = append(out, quantiles("admittedLatency", "Latency of the admitted creates (two etcd writes: quota status and object), from when each was due.", r.AdmittedLatency)...)
	return append(out, quantiles("rejectedLatency", "Latency of the creates quota admission rejected (no etcd write), from when each was due.", r.RejectedLatency)...)
}

// counts are the quota's limit and its creates by answer so far, over the
// whole run (warm-up included, as every admitted object counts against
// the quota).
func (r *Report) counts() []results.Figure {
	count := func(name string, v int64, better results.Better, help string) results.Figure {
		return results.Figure{Name: name, Value: float64(v), Unit: results.UnitCount, Sum: true, Better: better, Help: help}
	}
	return []results.Figure{
		{Name: "hard", Labels: map[string]string{"resource": r.Resource}, Value: float64(r.Hard), Unit: results.UnitCount,
			Help: "The ResourceQuota's hard limit on what the writers create."},
		count("creates", r.Creates, "", "Creates the writers sent under the quota, warm-up included."),
		count("admitted", r.Admitted, "", "Creates quota admission let in, warm-up included: never more than hard."),
		count("rejected", r.Rejected, "", "Creates quota admission refused (403 exceeded quota), warm-up included."),
		count("conflicts", r.Conflicts, results.BetterLower, "Creates answered 409, warm-up included."),
		count("errors", r.Errors, results.BetterLower, "Creates that failed otherwise (timeouts included), warm-up included."),
	}
}

// quantiles are latency l as figures of one name by quantile (1 is the
// maximum); none when nothing was timed.
func quantiles(name, help string, l results.Latency) []results.Figure {
	if l.Max == 0 {
		return nil
	}
	var out []results.Figure
	for i, d := range []time.Duration{l.P50, l.P90, l.P99, l.P999, l.Max} {
		q := map[string]string{"quantile": []string{"0.5", "0.9", "0.99", "0.999", "1"}[i]}
		out = append(out, results.Figure{Name: name, Labels: q, Value: float64(d), Unit: results.UnitDuration, Better: results.BetterLower, Help: help})
	}
	return out
}

// Finish counts what exists, reads the quota's status, and returns the
// report. It runs also after Ctrl-C.
func (r *quota) Finish(ctx context.Context) (scenario.Report, error) {
	env := r.env
	rep := r.report
	rep.Creates = r.creates.Load()
	rep.Admitted = r.admitted.Load()
	rep.Rejected = r.rejected.Load()
	rep.Conflicts = r.conflicts.Load()
	rep.Errors = r.errs.Load()
	if full, start := r.firstRejection.Load(), r.started.Load(); full > 0 {
		rep.FullAt = time.Duration(full - start)
	}
	now := time.Now()
	rep.AdmittedLatency = results.LatencyOf(r.admittedLatency.Snapshot(now).Op)
	rep.RejectedLatency = results.LatencyOf(r.rejectedLatency.Snapshot(now).Op)

	if err := r.readBack(ctx, rep); err != nil {
		rep.EndError = err.Error()
		env.Warn("%v: the objects and the quota at the end were not checked", err)
		return rep, nil
	}
	if lost := rep.ExistingAtEnd - rep.InitialUsed - rep.Admitted; lost > 0 {
		env.Warn("quota: %d objects exist whose create did not succeed on the client (cut off by a timeout or Ctrl-C after the server admitted them)", lost)
	}
	return rep, nil
}

// readBack fills rep's end state: the usage of the objects that exist and
// the quota's status.used.
func (r *quota) readBack(ctx context.Context, rep *Report) error {
	env := r.env
	sctx, cancel := r.step(ctx)
	defer cancel()
	existing, err := r.kind.usage(sctx, env.Admin, env.Namespace)
	if err != nil {
		return fmt.Errorf("quota: counting the %s at the end: %w", r.kind.plural, err)
	}
	rq, err := env.Admin.CoreV1().ResourceQuotas(env.Namespace).Get(sctx, QuotaName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("quota: reading ResourceQuota %s at the end: %w", QuotaName, err)
	}
	rep.ExistingAtEnd = existing
	rep.UsedAtEnd = usedOf(rq, corev1.ResourceName(rep.Resource))
	return nil
}
