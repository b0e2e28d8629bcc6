package quota

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/internal/words"
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
	Resource string `json:"resource"`
	Hard     int64  `json:"hard"`
	// Writers is the number of concurrent creators.
	Writers int `json:"writers"`
	// StatusInitialized is set when kb-bench filled status.hard/status.used
	// itself because no quota controller did.
	StatusInitialized bool `json:"statusInitialized"`
	// InitialUsed is the usage already in the namespace before the writers started.
	InitialUsed int64 `json:"initialUsed"`

	// Creates counts create requests; Admitted those that succeeded.
	Creates  int64 `json:"creates"`
	Admitted int64 `json:"admitted"`
	// Rejected counts 403 Forbidden "exceeded quota" answers.
	Rejected int64 `json:"rejected"`
	// Conflicts counts 409s that reached the client.
	Conflicts int64 `json:"conflicts"`
	// Errors counts every other failure (timeouts included).
	Errors int64 `json:"errors"`
	// FullAt is when the first rejection came, from when the first create
	// was due; zero when the quota never filled.
	FullAt time.Duration `json:"fullAt,omitempty"`

	// ExistingAtEnd is the usage counted from the objects that exist at the end.
	ExistingAtEnd int64 `json:"existingAtEnd"`
	// UsedAtEnd is the quota's status.used at the end.
	UsedAtEnd int64 `json:"usedAtEnd"`

	// AdmittedLatency and RejectedLatency are create latencies of the
	// measured window split by answer, from when each create was due: an
	// admitted create writes to etcd twice (quota status and object), a
	// rejected one not at all.
	AdmittedLatency results.Latency `json:"admittedLatency"`
	RejectedLatency results.Latency `json:"rejectedLatency"`

	// EndError is why the end state could not be read, if it could not.
	EndError string `json:"endError,omitempty"`
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

// Rows are the quota lines of the summary table.
func (r *Report) Rows() [][2]string {
	note := ""
	if r.StatusInitialized {
		note = ", status initialised by kb-bench"
	}
	rows := [][2]string{
		{"quota", fmt.Sprintf("%s hard %d, %s%s", r.Resource, r.Hard, words.Plural(r.Writers, "writer"), note)},
		{"", fmt.Sprintf("creates %d: admitted %d  rejected %d (exceeded quota)  conflicts %d  errors %d",
			r.Creates, r.Admitted, r.Rejected, r.Conflicts, r.Errors)},
	}
	if r.FullAt > 0 {
		rows = append(rows, [2]string{"", "full after " + words.Duration(r.FullAt)})
	}
	if r.EndError == "" {
		rows = append(rows, [2]string{"", fmt.Sprintf("at the end: existing %d  status.used %d  (before the run: %d)", r.ExistingAtEnd, r.UsedAtEnd, r.InitialUsed)})
	}
	return append(rows,
		[2]string{"", "admitted latency " + results.ShortLatency(r.AdmittedLatency)},
		[2]string{"", "rejected latency " + results.ShortLatency(r.RejectedLatency)})
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
