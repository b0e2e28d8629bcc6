// Package quota is the quota scenario: writers create objects concurrently
// under a namespace ResourceQuota with a hard limit, so the apiserver's quota
// admission (a compare-and-swap on the quota's status) decides each create.
// kb-bench measures create latency, rejections and conflicts, and checks that
// no more than the limit was ever admitted and that status.used matches what
// exists.
package quota

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// QuotaName is the ResourceQuota the scenario creates in the run's namespace.
const QuotaName = "kb-bench-quota"

// Definition registers the quota scenario. Each operation is one create by
// one writer, named w<writer>-<n>, through the writer's client: one write
// attempt. The writers go on after the quota is full, so rejections are
// measured too. The server cross-check also reports the apiserver's own
// writes of the ResourceQuota's status (quota admission's compare-and-swap,
// its 409s retried inside the apiserver).
var Definition = scenario.Definition{
	Name:        "quota",
	Description: "writers create objects under a ResourceQuota until it is full and beyond; admission must never let more than the hard limit in",
	NewSettings: func() scenario.Settings { return &Settings{} },
	Driven: func(env *scenario.Env, settings scenario.Settings) scenario.Driven {
		return newQuota(env, settings.(*Settings))
	},
	ServerResources: []string{"resourcequotas"},
	Rules: func(settings scenario.Settings) []rbacv1.PolicyRule {
		rules := []rbacv1.PolicyRule{
			k8s.Rule("", []string{"resourcequotas"}, "get", "create"),
			k8s.Rule("", []string{"resourcequotas/status"}, "update"),
		}
		if settings.(*Settings).Resource == ResourceConfigMaps {
			return append(rules, k8s.Rule("", []string{"configmaps"}, "get", "list", "create"))
		}
		return append(rules, k8s.Rule("", []string{"pods"}, "get", "list", "create"), k8s.Rule("", []string{"serviceaccounts"}, "get", "create"))
	},
}

// quota is one run of the scenario.
type quota struct {
	env      *scenario.Env
	set      *Settings
	kind     objectKind
	measures []*scenario.Measurer // the writers', made by Setup
	next     []int                // next[w] numbers writer w's next object
	report   *Report              // Setup's part: InitialUsed, StatusInitialized

	// Counts over the whole run, warm-up included: every admitted object
	// counts against the quota.
	started           atomic.Int64 // UnixNano of the first create's due time
	firstRejection    atomic.Int64 // UnixNano, 0 when none
	creates, admitted atomic.Int64
	rejected          atomic.Int64
	conflicts, errs   atomic.Int64

	// admittedLatency and rejectedLatency record the measured window's
	// creates by answer: recorders of their own, of one stripe each, so
	// that memory stays flat in the number of writers.
	admittedLatency, rejectedLatency *metrics.Recorder
}

var _ scenario.Driven = (*quota)(nil)

func newQuota(env *scenario.Env, set *Settings) *quota {
	n := env.Writers()
	// Do records only measured creates in them: their window is the run's.
	now := time.Now()
	return &quota{
		env: env, set: set, kind: kindFor(set.Resource), next: make([]int, n),
		report:          &Report{Resource: set.Resource, Hard: set.Hard, Writers: n},
		admittedLatency: metrics.NewRecorder(now, 1, false), rejectedLatency: metrics.NewRecorder(now, 1, false),
	}
}

// Workers is the number of writers.
func (r *quota) Workers() int { return len(r.next) }

// Do makes writer w's next create, due at intended: one operation of one
// write attempt.
func (r *quota) Do(w int, intended time.Time) {
	env := r.env
	r.started.CompareAndSwap(0, intended.UnixNano())
	name := fmt.Sprintf("w%d-%d", w, r.next[w])
	r.next[w]++
	m := r.measures[w]
	op := m.Measure(intended, func(o *scenario.Op) error {
		_, err := o.Write(func(ctx context.Context) error {
			return r.kind.create(ctx, env.Client(w), env.Namespace, name, r.set.ObjectSize, false)
		})
		return err
	})
	r.creates.Add(1)
	var byAnswer *metrics.Recorder
	switch {
	case op.Err == nil:
		r.admitted.Add(1)
		byAnswer = r.admittedLatency
	case isQuotaRejection(op.Err):
		r.rejected.Add(1)
		r.firstRejection.CompareAndSwap(0, op.End.UnixNano())
		byAnswer = r.rejectedLatency
	case op.Outcome == metrics.VersionConflict:
		r.conflicts.Add(1)
	default:
		r.errs.Add(1)
	}
	if byAnswer != nil && m.Measured(intended) {
		byAnswer.Stripe(0).RecordOp(op)
	}
}

// classify makes a quota rejection (403 "exceeded quota") a failed
// precondition: like a failed JSON patch test, it is the server's
// compare-and-swap on the quota's status saying no.
func classify(err error) metrics.Outcome {
	if isQuotaRejection(err) {
		return metrics.FailedPrecondition
	}
	return metrics.Classify(err)
}

// isQuotaRejection reports whether err is quota admission's 403.
func isQuotaRejection(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}
