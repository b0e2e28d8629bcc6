package quota

import (
	"cmp"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// The quota'd resources the scenario supports.
const (
	// ResourceConfigMaps counts ConfigMaps.
	ResourceConfigMaps = "count/configmaps"
	// ResourceGPU sums the nvidia.com/gpu requests of Pods; each Pod asks
	// for one. Without nodes the Pods stay Pending, which is fine here.
	ResourceGPU = "requests.nvidia.com/gpu"
)

// Settings are the quota scenario's own settings; each field's help tag,
// its flag's help, says what it is.
type Settings struct {
	Resource   string `json:"resource" flag:"quota-resource" help:"the quota'd resource: count/configmaps (the writers create ConfigMaps) or requests.nvidia.com/gpu (Pods asking for one GPU each)"`
	Hard       int64  `json:"hard" flag:"quota-hard" help:"the ResourceQuota's hard limit"`
	ObjectSize int    `json:"objectSize,omitempty" flag:"object-size" help:"bytes of filler in each object, so writes cost what real objects cost"`
}

// Default fills the zero fields with their defaults.
func (c *Settings) Default(*spec.Spec) {
	c.Resource = cmp.Or(c.Resource, ResourceConfigMaps)
	c.Hard = cmp.Or(c.Hard, 50)
}

// Validate checks the defaulted settings.
func (c *Settings) Validate(_ *spec.Spec, p *field.Path) field.ErrorList {
	errs := spec.OneOf(p.Child("resource"), c.Resource, []string{ResourceConfigMaps, ResourceGPU}, "quota-resource")
	if c.Hard < 1 {
		errs = append(errs, field.Invalid(p.Child("hard"), c.Hard, "use at least 1 (--quota-hard)"))
	}
	if bad := scenario.ValidObjectSize(p.Child("objectSize"), c.ObjectSize); bad != nil {
		errs = append(errs, bad...)
	} else if c.ObjectSize > 0 && c.Resource != ResourceConfigMaps {
		errs = append(errs, field.Forbidden(p.Child("objectSize"), "is the filler of the ConfigMaps created under count/configmaps; the Pods have none: drop --object-size"))
	}
	return errs
}

// Describe is the run in a few words, e.g. "8 writers creating ConfigMaps
// under a ResourceQuota of count/configmaps=50".
func (c *Settings) Describe(s *spec.Spec) string {
	d := fmt.Sprintf("%s creating %s under a ResourceQuota of %s=%d", words.Plural(s.Workers(), "writer"), kindFor(c.Resource).plural, c.Resource, c.Hard)
	if c.ObjectSize > 0 {
		d += fmt.Sprintf(", %d B filler", c.ObjectSize)
	}
	return d
}
