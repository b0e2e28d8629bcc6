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
	rbacv1 "k8s.io/api/rbac/v1"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// QuotaName is the ResourceQuota the scenario creates in the run's namespace.
const QuotaName = "kb-bench-quota"

// Definition registers the quota scenario.
//
// Setup creates the ResourceQuota and makes sure its status is filled and
// enforced before the clock starts (initialising it itself when no quota
// controller does). Each operation is one create by one writer, named
// w<writer>-<n>, through the writer's client: one write attempt. The
// writers go on after the quota is full, so rejections are measured too. A
// quota rejection (403 "exceeded quota") is recorded as
// metrics.FailedPrecondition: like a failed JSON patch test, it is the
// server's compare-and-swap on the quota's status saying no. Conflicts
// (409) that reach the client and every other failure keep their own
// classes.
//
// The server cross-check also reports the apiserver's own writes of the
// ResourceQuota's status (quota admission's compare-and-swap, its 409s
// retried inside the apiserver).
var Definition = scenario.Definition{
	Name:        "quota",
	Description: "writers create objects under a ResourceQuota until it is full and beyond; admission must never let more than the hard limit in",
	Traits:      spec.Traits{Strategies: false, Driven: true},
	NewSettings: func() scenario.Settings { return &Settings{} },
	New: func(env *scenario.Env, settings scenario.Settings) (scenario.Scenario, error) {
		return newRun(env, settings.(*Settings)), nil
	},
	ServerResources: []string{"resourcequotas"},
	Rules: func(settings scenario.Settings) []rbacv1.PolicyRule {
		rules := []rbacv1.PolicyRule{
			scenario.Rule("", []string{"resourcequotas"}, "get", "create"),
			scenario.Rule("", []string{"resourcequotas/status"}, "update"),
		}
		if settings.(*Settings).Resource == ResourceConfigMaps {
			return append(rules, scenario.Rule("", []string{"configmaps"}, "get", "list", "create"))
		}
		return append(rules, scenario.Rule("", []string{"pods"}, "get", "list", "create"), scenario.Rule("", []string{"serviceaccounts"}, "get", "create"))
	},
}

// run is one run of the scenario.
type run struct {
	env    *scenario.Env
	set    *Settings
	kind   objectKind
	base   context.Context // Setup's, never cancelled: a create in flight outlives Ctrl-C
	next   []int           // next[w] numbers writer w's next object
	report *Report         // Setup's part: InitialUsed, StatusInitialized

	// Counts over the whole run, warm-up included: every admitted object
	// counts against the quota.
	started           atomic.Int64 // UnixNano of the first create's due time
	firstRejection    atomic.Int64 // UnixNano, 0 when none
	creates, admitted atomic.Int64
	rejected          atomic.Int64
	conflicts, errs   atomic.Int64

	mu              sync.Mutex // guards the two histograms (measured window only)
	admittedLatency *hdrhistogram.Histogram
	rejectedLatency *hdrhistogram.Histogram
}

var _ scenario.Driven = (*run)(nil)

func newRun(env *scenario.Env, set *Settings) *run {
	kind, _ := kindFor(set.Resource) // validated
	n := workers(&env.Spec)
	if n != env.Spec.Writers {
		fmt.Fprintf(env.Log, "note: open loop: the %d workers allowed in flight (max-in-flight) are the writers\n", n)
	}
	return &run{
		env: env, set: set, kind: kind, next: make([]int, n),
		report:          &Report{Resource: set.Resource, Hard: set.Hard, Writers: n},
		admittedLatency: metrics.NewHistogram(), rejectedLatency: metrics.NewHistogram(),
	}
}

// Workers is the number of writers.
func (r *run) Workers() int { return len(r.next) }

// Do makes writer w's next create, due at intended, and records it.
func (r *run) Do(w int, intended time.Time) {
	env := r.env
	r.started.CompareAndSwap(0, intended.UnixNano())
	name := fmt.Sprintf("w%d-%d", w, r.next[w])
	r.next[w]++

	ctx, cancel := context.WithTimeout(r.base, env.Spec.OpTimeout.Duration)
	start := time.Now()
	err := r.kind.create(ctx, env.Client(w), env.Namespace, name, r.set.ObjectSize, false)
	done := time.Now()
	cancel()

	shard := env.Recorder.Shard(w)
	measured := shard.Measured(intended)
	out := metrics.Classify(err)
	r.creates.Add(1)
	switch {
	case err == nil:
		r.admitted.Add(1)
		if measured {
			r.recordLatency(r.admittedLatency, done.Sub(intended))
		}
	case isQuotaRejection(err):
		out = metrics.FailedPrecondition
		r.rejected.Add(1)
		r.firstRejection.CompareAndSwap(0, done.UnixNano())
		if measured {
			r.recordLatency(r.rejectedLatency, done.Sub(intended))
		}
	case out == metrics.VersionConflict:
		r.conflicts.Add(1)
	default:
		r.errs.Add(1)
	}
	shard.RecordAttempt(intended, metrics.Attempt{Kind: metrics.Write, Latency: done.Sub(start), Outcome: out})
	shard.RecordOp(metrics.Op{Intended: intended, Start: start, End: done, Outcome: out, Err: err, Attempts: 1})
}

// recordLatency adds d to one of the run's two histograms. One pair for all
// writers keeps memory flat in the number of writers; the lock is held for
// well under a microsecond against creates that take milliseconds.
func (r *run) recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	r.mu.Lock()
	metrics.RecordLatency(h, d)
	r.mu.Unlock()
}

// isQuotaRejection reports whether err is quota admission's 403.
func isQuotaRejection(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}
