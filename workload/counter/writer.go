package counter

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/reads"
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
// access to the objects (through its client), its measurer (its recorder
// stripe), its chooser and its own counts, so that an operation takes no
// lock shared with other writers (apart from its recorder stripe, which
// writers share only when there are more writers than stripes).
type writer struct {
	id      int
	write   scenario.Write
	objects objects
	measure *scenario.Measurer
	choose  func() int // picks the object of the next operation
	names   []string   // object names (shared, read-only)
	key     string     // the field this writer increments
	field   fieldRef   // where key is in the object

	// Where the writer reads (read.go): GETs at resourceVersion rv, or
	// store, its client's informer's, by storeKeys (per object).
	rv        string
	store     cache.Store
	storeKeys []string
	cached    func(obj any, key string) (version, error)

	// Every object's successful writes, and the 409s by cause (reads);
	// watching, when there are watchers, wants each ack's time and window.
	acks     []reads.Acks
	causes   *reads.Causes
	watching *watching

	applyOpts metav1.ApplyOptions

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
	latest := w.acks[obj].Latest() // before the read: what it ought to see
	var read version
	err := o.Read(func(ctx context.Context) (err error) {
		read, err = w.read(ctx, obj)
		return err
	})
	if err != nil {
		return err
	}
	next := read.value + 1
	var rv string
	outcome, err := o.Write(func(ctx context.Context) (err error) {
		switch w.write.Kind {
		case scenario.Update:
			rv, err = w.objects.update(ctx, read, w.key, next, w.write.Precondition)
		case scenario.MergePatch:
			precondition := ""
			if w.write.Precondition {
				precondition = read.rv
			}
			// A fresh body each time: net/http may still read a request body
			// after RoundTrip returns, so a reused buffer could be overwritten
			// while in flight.
			body := appendMergePatch(make([]byte, 0, 64+len(w.key)+len(precondition)), w.field, next, precondition)
			rv, err = w.objects.patch(ctx, name, w.write.PatchType, body)
		case scenario.JSONPatch:
			body := appendJSONPatch(make([]byte, 0, 96+2*len(w.key)), w.field, read.value, next)
			rv, err = w.objects.patch(ctx, name, types.JSONPatchType, body)
		case scenario.Apply:
			rv, err = w.objects.apply(ctx, name, w.key, next, w.applyOpts)
		}
		return err
	})
	switch {
	case outcome == metrics.Success && w.watching == nil:
		w.acks[obj].Add(reads.ParseRV(rv), time.Time{}, false)
	case outcome == metrics.Success:
		measured := o.Measured()
		if early := w.acks[obj].Add(reads.ParseRV(rv), time.Now(), measured); measured {
			w.watching.acked(early)
		}
	case outcome == metrics.VersionConflict:
		if o.Measured() {
			w.causes.Conflict(&w.acks[obj], latest, read.rv)
		}
	}
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
