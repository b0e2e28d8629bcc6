package scenario

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/kb-bench/kb-bench/spec"
)

// Write is the write a writer makes after reading the object, resolved
// once from the Spec's strategy and its options, so that the hot path
// only switches on a small integer. The retry strategy is an update whose
// operations a Measurer retries on conflict.
type Write struct {
	Kind WriteKind
	// Precondition: an update or a merge patch carries the
	// resourceVersion read, an optimistic lock (409 when stale); an update
	// without it is unconditional, last write wins.
	Precondition bool
	// PatchType is a merge patch's: merge or strategic.
	PatchType types.PatchType
	// Force: an apply takes the fields other managers own.
	Force bool
}

// WriteKind is how a writer writes.
type WriteKind uint8

// The ways to write.
const (
	Update     WriteKind = iota // PUT the object read
	MergePatch                  // merge or strategic merge patch
	JSONPatch                   // test + replace: a compare-and-swap
	Apply                       // server-side apply
)

// WriteOf resolves the writers' write from s.
func WriteOf(s *spec.Spec) Write {
	switch s.Strategy {
	case spec.StrategyPatch:
		w := Write{Kind: MergePatch, Precondition: s.PatchPrecondition, PatchType: types.MergePatchType}
		switch s.PatchType {
		case spec.PatchJSON:
			w.Kind = JSONPatch
		case spec.PatchStrategic:
			w.PatchType = types.StrategicMergePatchType
		}
		return w
	case spec.StrategySSA:
		return Write{Kind: Apply, Force: s.Force}
	}
	return Write{Kind: Update, Precondition: !s.Unconditional}
}

// NeedsRead reports whether the write carries what a read gives: the whole
// object (an update) or its resourceVersion (a merge patch with a
// precondition).
func (w Write) NeedsRead() bool {
	return w.Kind == Update || (w.Kind == MergePatch && w.Precondition)
}
