package counter

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/types"
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
	// Manifest is the text itself once defaulted (a file's, stdin's), so
	// that the result records the object that ran.
	Manifest    string `json:"manifest,omitempty" flag:"manifest" help:"the object every writer shares instead of a ConfigMap, of any namespaced kind the target serves: a YAML file, - for stdin, or (in a profile) the YAML itself; its CustomResourceDefinition may come with it as another document"`
	FieldPath   string `json:"fieldPath,omitempty" flag:"field-path" help:"with --manifest: the field the writers increment, e.g. .status.count, .spec.replicas or .metadata.annotations[\"example.com/n\"]"`
	Subresource string `json:"subresource,omitempty" flag:"subresource" help:"with --manifest: status writes to the status subresource (default: the main resource)"`
	InstallCRD  bool   `json:"installCRD,omitempty" flag:"install-crd" help:"with --manifest on a cluster kb-bench did not make: install the manifest's CustomResourceDefinition for the run and delete it after (on the local control plane or a kind cluster kb-bench made it always does)"`
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
func (c *Settings) Validate(s *spec.Spec, p *field.Path) field.ErrorList {
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
	return append(errs, c.validateObject(s, p)...)
}

// validateObject checks the run's own object (--manifest) without the
// target, first reading the file (or stdin) Manifest names into it, so
// that the result records the object that ran: the manifest parses, the field path is in the object or its
// CRD's schema, and the subresource and strategy suit the type.
func (c *Settings) validateObject(s *spec.Spec, p *field.Path) field.ErrorList {
	if c.Manifest == "" {
		var errs field.ErrorList
		for name, set := range map[string]bool{"fieldPath": c.FieldPath != "", "subresource": c.Subresource != "", "installCRD": c.InstallCRD} {
			if set {
				errs = append(errs, field.Forbidden(p.Child(name), "applies only to the run's own object: give --manifest, or drop it"))
			}
		}
		return errs
	}
	mp := p.Child("manifest")
	text, err := readManifest(c.Manifest, stdin)
	if err != nil {
		return field.ErrorList{field.Invalid(mp, c.Manifest, fmt.Sprintf("cannot be read (%v): give a YAML file, - for stdin, or the YAML itself", err))}
	}
	c.Manifest = text
	m, err := parseManifest(c.Manifest)
	if err != nil {
		return field.ErrorList{field.Invalid(mp, firstLine(c.Manifest), err.Error())}
	}
	var errs field.ErrorList
	if m.crd != nil && !m.crdNamespaced() {
		errs = append(errs, field.Invalid(mp, firstLine(c.Manifest), "its CustomResourceDefinition is cluster-scoped: kb-bench writes objects in the run's namespace, so give a namespaced kind (scope: Namespaced)"))
	}
	fp := p.Child("fieldPath")
	path, err := parseFieldPath(c.FieldPath)
	switch {
	case c.FieldPath == "":
		errs = append(errs, field.Required(fp, "name the field the writers increment, e.g. --field-path .status.count"))
	case err != nil:
		errs = append(errs, field.Invalid(fp, c.FieldPath, err.Error()))
	case path[0] == "metadata" && path[1] != "annotations" && path[1] != "labels":
		errs = append(errs, field.Invalid(fp, c.FieldPath, "the writers can change only annotations and labels in metadata"))
	default:
		if _, err := m.resolveField(path); err != nil {
			errs = append(errs, field.Invalid(fp, c.FieldPath, err.Error()))
		}
	}
	sp := p.Child("subresource")
	switch {
	case c.Subresource != "" && c.Subresource != "status":
		errs = append(errs, field.NotSupported(sp, c.Subresource, []string{"", "status"}))
	case c.Subresource == "status" && m.crd != nil && !m.crdHasStatus():
		errs = append(errs, field.Invalid(sp, c.Subresource, "the manifest's CustomResourceDefinition gives "+m.obj.GetKind()+" no status subresource: add subresources: {status: {}} to its version, or drop --subresource"))
	case c.Subresource == "status" && len(path) > 0 && path[0] != "status":
		errs = append(errs, field.Invalid(sp, c.Subresource, "a write to the status subresource changes only .status: name a field under .status, or drop --subresource"))
	case c.Subresource == "" && len(path) > 0 && path[0] == "status" && m.crd != nil && m.crdHasStatus():
		errs = append(errs, field.Invalid(sp, c.Subresource, "the main resource ignores .status when the type has a status subresource: pass --subresource status"))
	}
	if c.Fields == FieldsDisjoint {
		errs = append(errs, field.Forbidden(p.Child("fields"), "the run's own object has one field the writers share (--field-path): drop --fields disjoint"))
	}
	if w := scenario.WriteOf(s); m.crd != nil && w.Kind == scenario.MergePatch && w.PatchType == types.StrategicMergePatchType {
		errs = append(errs, field.Forbidden(field.NewPath("patchType"), "custom resources take no strategic merge patch: use --patch-type merge or json"))
	}
	if c.InstallCRD && m.crd == nil {
		errs = append(errs, field.Forbidden(p.Child("installCRD"), "the manifest has no CustomResourceDefinition to install: add it as another YAML document, or drop --install-crd"))
	}
	return errs
}

// firstLine is text's first line, to point at a manifest in an error.
func firstLine(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return line
}

// Describe is the run in a few words.
func (c *Settings) Describe(s *spec.Spec) string {
	noun := "object"
	if m, err := parseManifest(c.Manifest); c.Manifest != "" && err == nil {
		noun = m.obj.GetKind()
	}
	where := fmt.Sprintf("%s on %s", words.Plural(s.Writers, "writer"), words.Plural(c.Objects, noun))
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
	switch {
	case c.Manifest != "" && c.Subresource != "":
		where += ", " + c.FieldPath + " through " + c.Subresource
	case c.Manifest != "":
		where += ", " + c.FieldPath
	default:
		where += ", " + string(c.Fields) + " fields"
	}
	if c.ObjectSize > 0 {
		where += fmt.Sprintf(", %d B filler", c.ObjectSize)
	}
	return where
}
