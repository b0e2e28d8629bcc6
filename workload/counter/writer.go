package counter

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// strategy is the write a writer makes after reading the object, resolved
// once from the Spec so the hot path only switches on a small integer.
type strategy uint8

const (
	strategyUpdate        strategy = iota // PUT with the read resourceVersion: 409 when stale
	strategyUnconditional                 // PUT without resourceVersion: last write wins
	strategyRetry                         // strategyUpdate inside retry.RetryOnConflict
	strategyMergePatch                    // merge or strategic merge patch, optionally with resourceVersion
	strategyJSONPatch                     // test + replace: a compare-and-swap
	strategyApply                         // server-side apply
)

// strategyOf resolves the writers' strategy from the Spec.
func strategyOf(s spec.Spec) strategy {
	switch s.Strategy {
	case spec.StrategyRetry:
		return strategyRetry
	case spec.StrategyPatch:
		if s.PatchType == spec.PatchJSON {
			return strategyJSONPatch
		}
		return strategyMergePatch
	case spec.StrategySSA:
		return strategyApply
	}
	if s.Unconditional {
		return strategyUnconditional
	}
	return strategyUpdate
}

// Field names in the benchmark's ConfigMaps.
const (
	counterKey = "counter" // the field every writer increments (FieldsShared)
	fillerKey  = "filler"  // spec.ObjectSize bytes that make writes cost what real ones do
)

// fieldKey is writer w's own field (FieldsDisjoint).
func fieldKey(w int) string { return "w-" + strconv.Itoa(w) }

// fieldManager is writer w's server-side apply field manager.
func fieldManager(s *spec.Spec, w int) string {
	if s.FieldManager == spec.ManagerShared {
		return "kb-bench"
	}
	return "kb-bench-w" + strconv.Itoa(w)
}

// writer is one concurrent writer with everything an operation needs: its
// client, its recorder shard, its chooser and its own counts, so that an
// operation takes no lock shared with other writers (apart from its
// recorder shard, which writers share only when there are more writers than
// shards).
type writer struct {
	id        int
	strategy  strategy
	cms       corev1client.ConfigMapInterface
	shard     *metrics.Shard
	choose    chooser
	names     []string        // object names (shared, read-only)
	key       string          // the data key this writer increments
	base      context.Context // never cancelled: an operation outlives Ctrl-C
	opTimeout time.Duration

	patchType    types.PatchType
	precondition bool
	backoff      spec.Backoff
	applyOpts    metav1.ApplyOptions
	apply        *applycorev1.ConfigMapApplyConfiguration

	shared []sharedTally // per object, every writer's (FieldsShared); nil otherwise
	own    []fieldTally  // per object, this writer's (FieldsDisjoint); nil otherwise
}

// do runs one operation that was due at intended and records it.
func (w *writer) do(intended time.Time) {
	op := metrics.Op{Intended: intended, Start: time.Now()}
	// The operation's timeout context is most of the engine's own cost per
	// operation (a few small allocations), and the one way to bound an
	// operation's every request and retry together.
	ctx, cancel := context.WithDeadline(w.base, op.Start.Add(w.opTimeout))
	obj := w.choose.next()
	var err error
	if w.strategy == strategyRetry {
		err = w.retry(ctx, obj, &op)
	} else {
		err = w.readModifyWrite(ctx, obj, &op)
	}
	cancel()
	op.End = time.Now()
	op.Outcome = metrics.Classify(err)
	if op.Outcome == metrics.Other {
		op.Err = err
	}
	w.shard.RecordOp(op)
}

// retry wraps readModifyWrite in client-go's retry.RetryOnConflict,
// counting every attempt and the backoff slept.
func (w *writer) retry(ctx context.Context, obj int, op *metrics.Op) error {
	return scenario.RetryOnConflict(w.backoff, op, func() error { return w.readModifyWrite(ctx, obj, op) })
}

// readModifyWrite reads object obj, adds one to the writer's field and writes
// it back with the writer's strategy. It records the read and the write as
// attempts, adds the write to op.Attempts and counts it for the correctness
// check.
func (w *writer) readModifyWrite(ctx context.Context, obj int, op *metrics.Op) error {
	name := w.names[obj]
	t0 := time.Now()
	cm, err := w.cms.Get(ctx, name, metav1.GetOptions{})
	// The read's end is taken as the write's start: building the write
	// takes well under a microsecond, and the clock is read once less.
	t1 := time.Now()
	w.shard.RecordAttempt(op.Intended, metrics.Attempt{Kind: metrics.Read, Latency: t1.Sub(t0), Outcome: metrics.Classify(err)})
	if err != nil {
		return err
	}
	cur, err := counterValue(cm.Data, name, w.key)
	if err != nil {
		return err
	}
	next := cur + 1

	switch w.strategy {
	case strategyUpdate, strategyRetry, strategyUnconditional:
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[w.key] = strconv.FormatInt(next, 10)
		if w.strategy == strategyUnconditional {
			cm.ResourceVersion = ""
		}
		_, err = w.cms.Update(ctx, cm, metav1.UpdateOptions{})
	case strategyMergePatch:
		rv := ""
		if w.precondition {
			rv = cm.ResourceVersion
		}
		// A fresh body each time: net/http may still read a request body
		// after RoundTrip returns, so a reused buffer could be overwritten
		// while in flight.
		body := appendMergePatch(make([]byte, 0, 64+len(w.key)+len(rv)), w.key, next, rv)
		_, err = w.cms.Patch(ctx, name, w.patchType, body, metav1.PatchOptions{})
	case strategyJSONPatch:
		body := appendJSONPatch(make([]byte, 0, 96+2*len(w.key)), w.key, cur, next)
		_, err = w.cms.Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{})
	case strategyApply:
		// Apply marshals the configuration before it returns, so the
		// writer's one configuration is reused.
		w.apply.Name = &w.names[obj]
		w.apply.Data[w.key] = strconv.FormatInt(next, 10)
		_, err = w.cms.Apply(ctx, w.apply, w.applyOpts)
	}
	lat := time.Since(t1)
	outcome := metrics.Classify(err)
	w.shard.RecordAttempt(op.Intended, metrics.Attempt{Kind: metrics.Write, Latency: lat, Outcome: outcome})
	op.Attempts++
	w.count(obj, outcome, err)
	return err
}

// count adds one write to the correctness tallies.
func (w *writer) count(obj int, outcome metrics.Outcome, err error) {
	success := outcome == metrics.Success
	unsure := !success && scenario.MayHaveLanded(outcome, err)
	switch {
	case w.shared != nil && success:
		w.shared[obj].successes.Add(1)
	case w.shared != nil && unsure:
		w.shared[obj].uncertain.Add(1)
	case w.own != nil && success:
		w.own[obj].successes++
	case w.own != nil && unsure:
		w.own[obj].uncertain++
	}
}

// counterValue reads data[key] as a number; an absent key is 0.
func counterValue(data map[string]string, name, key string) (int64, error) {
	raw, ok := data[key]
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s's data[%q] holds %q, which is not a number: another client wrote the object; run again in a fresh namespace", name, key, raw)
	}
	return v, nil
}
