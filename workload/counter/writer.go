package counter

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

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
// client, its measurer (its recorder stripe), its chooser and its own
// counts, so that an operation takes no lock shared with other writers
// (apart from its recorder stripe, which writers share only when there
// are more writers than stripes).
type writer struct {
	id      int
	write   scenario.Write
	cms     corev1client.ConfigMapInterface
	measure *scenario.Measurer
	choose  func() int // picks the object of the next operation
	names   []string   // object names (shared, read-only)
	key     string     // the data key this writer increments

	applyOpts metav1.ApplyOptions
	apply     *applycorev1.ConfigMapApplyConfiguration

	shared []sharedTally // per object, every writer's (FieldsShared); nil otherwise
	own    []fieldTally  // per object, this writer's (FieldsDisjoint); nil otherwise
}

// do runs one operation that was due at intended and records it.
func (w *writer) do(intended time.Time) {
	obj := w.choose()
	w.measure.Measure(intended, func(o *scenario.Op) error { return w.readModifyWrite(o, obj) })
}

// readModifyWrite reads object obj, adds one to the writer's field and
// writes it back with the writer's write, and counts the write for the
// correctness check.
func (w *writer) readModifyWrite(o *scenario.Op, obj int) error {
	name := w.names[obj]
	var cm *corev1.ConfigMap
	err := o.Read(func(ctx context.Context) (err error) {
		cm, err = w.cms.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return err
	}
	cur, err := counterValue(cm.Data, name, w.key)
	if err != nil {
		return err
	}
	next := cur + 1
	outcome, err := o.Write(func(ctx context.Context) (err error) {
		switch w.write.Kind {
		case scenario.Update:
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[w.key] = strconv.FormatInt(next, 10)
			if !w.write.Precondition {
				cm.ResourceVersion = ""
			}
			_, err = w.cms.Update(ctx, cm, metav1.UpdateOptions{})
		case scenario.MergePatch:
			rv := ""
			if w.write.Precondition {
				rv = cm.ResourceVersion
			}
			// A fresh body each time: net/http may still read a request body
			// after RoundTrip returns, so a reused buffer could be overwritten
			// while in flight.
			body := appendMergePatch(make([]byte, 0, 64+len(w.key)+len(rv)), w.key, next, rv)
			_, err = w.cms.Patch(ctx, name, w.write.PatchType, body, metav1.PatchOptions{})
		case scenario.JSONPatch:
			body := appendJSONPatch(make([]byte, 0, 96+2*len(w.key)), w.key, cur, next)
			_, err = w.cms.Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{})
		case scenario.Apply:
			// Apply marshals the configuration before it returns, so the
			// writer's one configuration is reused.
			w.apply.Name = &w.names[obj]
			w.apply.Data[w.key] = strconv.FormatInt(next, 10)
			_, err = w.cms.Apply(ctx, w.apply, w.applyOpts)
		}
		return err
	})
	w.count(obj, outcome, err)
	return err
}

// count adds one write to the correctness tallies.
func (w *writer) count(obj int, outcome metrics.Outcome, err error) {
	success := outcome == metrics.Success
	unsure := !success && k8s.MayHaveLanded(outcome, err)
	switch {
	case w.shared != nil && success:
		w.shared[obj].successes.Add(1)
	case w.shared != nil && unsure:
		w.shared[obj].uncertain.Add(1)
	case w.own != nil && success:
		w.own[obj].Successes++
	case w.own != nil && unsure:
		w.own[obj].Uncertain++
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
