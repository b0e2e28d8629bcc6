package counter

import (
	"cmp"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Distribution picks which object an operation hits.
type Distribution string

// Key distributions.
const (
	DistUniform Distribution = "uniform"
	DistZipf    Distribution = "zipf"
	DistHotspot Distribution = "hotspot"
)

// Fields says which fields the writers increment.
type Fields string

// Field layouts.
const (
	FieldsShared   Fields = "shared"   // all writers increment the same counter field
	FieldsDisjoint Fields = "disjoint" // each writer owns its own field
)

// maxObjects bounds the objects created before the run.
const maxObjects = 10_000

// Settings are the counter scenario's own settings; each field's help tag,
// its flag's help, says what it is.
type Settings struct {
	Objects          int          `json:"objects" flag:"objects" help:"shared objects created before the run"`
	ObjectSize       int          `json:"objectSize,omitempty" flag:"object-size" help:"bytes of filler in each object, so writes cost what real objects cost"`
	Distribution     Distribution `json:"distribution" flag:"distribution" help:"which object an operation hits: uniform, zipf or hotspot"`
	ZipfExponent     float64      `json:"zipfExponent,omitempty" flag:"zipf-exponent" help:"zipf: exponent s > 1 (default 1.1)"`
	HotFraction      float64      `json:"hotFraction,omitempty" flag:"hot-fraction" help:"hotspot: fraction of objects that are hot (default 0.1)"`
	HotShare         float64      `json:"hotShare,omitempty" flag:"hot-share" help:"hotspot: share of traffic to hot objects (default 0.9)"`
	WritersPerObject int          `json:"writersPerObject,omitempty" flag:"writers-per-object" help:"pin fixed groups of K writers to each object instead of a distribution"`
	Fields           Fields       `json:"fields" flag:"fields" help:"shared (all writers increment one counter) or disjoint (each writer owns a field)"`
}

// Default fills the zero fields that have defaults.
func (c *Settings) Default(*spec.Spec) {
	c.Objects = cmp.Or(c.Objects, 1)
	c.Distribution = cmp.Or(c.Distribution, DistUniform)
	if c.Distribution == DistZipf && c.ZipfExponent == 0 {
		c.ZipfExponent = 1.1
	}
	if c.Distribution == DistHotspot {
		c.HotFraction = cmp.Or(c.HotFraction, 0.1)
		c.HotShare = cmp.Or(c.HotShare, 0.9)
	}
	c.Fields = cmp.Or(c.Fields, FieldsShared)
}

// Validate checks the defaulted settings.
func (c *Settings) Validate(_ *spec.Spec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Objects < 1 || c.Objects > maxObjects {
		errs = append(errs, field.Invalid(p.Child("objects"), c.Objects, fmt.Sprintf("use 1 to %d (--objects)", maxObjects)))
	}
	errs = append(errs, scenario.ValidObjectSize(p.Child("objectSize"), c.ObjectSize)...)
	errs = append(errs, spec.OneOf(p.Child("distribution"), c.Distribution, []Distribution{DistUniform, DistZipf, DistHotspot}, "distribution")...)
	numbers := []struct {
		name string
		v    float64
	}{{"zipfExponent", c.ZipfExponent}, {"hotFraction", c.HotFraction}, {"hotShare", c.HotShare}}
	for _, n := range numbers {
		if math.IsNaN(n.v) || math.IsInf(n.v, 0) {
			errs = append(errs, field.Invalid(p.Child(n.name), n.v, "must be a finite number"))
		}
	}
	if c.Distribution == DistZipf {
		if c.ZipfExponent <= 1 {
			errs = append(errs, field.Invalid(p.Child("zipfExponent"), c.ZipfExponent, "must be greater than 1, e.g. 1.1 (--zipf-exponent)"))
		}
	} else if c.ZipfExponent != 0 {
		errs = append(errs, field.Forbidden(p.Child("zipfExponent"), "applies only to distribution zipf: drop --zipf-exponent or set --distribution zipf"))
	}
	if c.Distribution == DistHotspot {
		if f := c.HotFraction; f <= 0 || f >= 1 {
			errs = append(errs, field.Invalid(p.Child("hotFraction"), f, "use a fraction between 0 and 1, e.g. 0.1 (--hot-fraction)"))
		}
		if f := c.HotShare; f <= 0 || f > 1 {
			errs = append(errs, field.Invalid(p.Child("hotShare"), f, "use a fraction above 0 and at most 1, e.g. 0.9 (--hot-share)"))
		}
	} else {
		for _, n := range numbers[1:] {
			if n.v != 0 {
				errs = append(errs, field.Forbidden(p.Child(n.name), "applies only to distribution hotspot: drop it or set --distribution hotspot"))
			}
		}
	}
	if c.WritersPerObject < 0 {
		errs = append(errs, field.Invalid(p.Child("writersPerObject"), c.WritersPerObject, "use 0 (use the distribution) or at least 1 (--writers-per-object)"))
	}
	if c.WritersPerObject > 0 && c.Distribution != DistUniform {
		errs = append(errs, field.Forbidden(p.Child("writersPerObject"), fmt.Sprintf("pins writers to objects, so distribution %s cannot apply: set one or the other", c.Distribution)))
	}
	errs = append(errs, spec.OneOf(p.Child("fields"), c.Fields, []Fields{FieldsShared, FieldsDisjoint}, "fields")...)
	return errs
}

// Describe is the run in a few words.
func (c *Settings) Describe(s *spec.Spec) string {
	where := fmt.Sprintf("%s on %s", words.Plural(s.Writers, "writer"), words.Plural(c.Objects, "object"))
	switch {
	case c.WritersPerObject > 0:
		where += fmt.Sprintf(" (%d writers per object)", c.WritersPerObject)
	case c.Objects > 1 && c.Distribution == DistZipf:
		where += fmt.Sprintf(" (zipf s=%g)", c.ZipfExponent)
	case c.Objects > 1 && c.Distribution == DistHotspot:
		where += fmt.Sprintf(" (hotspot: %g%% of objects get %g%% of writes)", 100*c.HotFraction, 100*c.HotShare)
	case c.Objects > 1:
		where += " (" + string(c.Distribution) + ")"
	}
	where += ", " + string(c.Fields) + " fields"
	if c.ObjectSize > 0 {
		where += fmt.Sprintf(", %d B filler", c.ObjectSize)
	}
	return where
}
