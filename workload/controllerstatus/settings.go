package controllerstatus

import (
	"cmp"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/spec"
)

// Settings are the controller-status scenario's own settings; each field's
// help tag, its flag's help, says what it is.
type Settings struct {
	Controllers          int `json:"controllers" flag:"controllers" help:"controllers, each keeping a status condition of its own"`
	ObjectsPerController int `json:"objectsPerController" flag:"objects-per-controller" help:"Pods each controller owns alone"`
	SharedObjects        int `json:"sharedObjects" flag:"shared-objects" help:"Pods every controller writes"`
}

// Default fills the zero fields with their defaults.
func (c *Settings) Default(*spec.Spec) {
	c.Controllers = cmp.Or(c.Controllers, 4)
	c.ObjectsPerController = cmp.Or(c.ObjectsPerController, 10)
	c.SharedObjects = cmp.Or(c.SharedObjects, 2)
}

// Validate checks the defaulted settings, and the shared settings that
// this scenario cannot honour.
func (c *Settings) Validate(s *spec.Spec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Controllers < 1 {
		errs = append(errs, field.Invalid(p.Child("controllers"), c.Controllers, "use at least 1 (--controllers)"))
	}
	if c.ObjectsPerController < 0 {
		errs = append(errs, field.Invalid(p.Child("objectsPerController"), c.ObjectsPerController, "use 0 or more (--objects-per-controller)"))
	}
	if c.SharedObjects < 0 {
		errs = append(errs, field.Invalid(p.Child("sharedObjects"), c.SharedObjects, "use 0 or more (--shared-objects)"))
	}
	if c.ObjectsPerController >= 0 && c.SharedObjects >= 0 && c.ObjectsPerController+c.SharedObjects < 1 {
		errs = append(errs, field.Required(p.Child("objectsPerController"), "the controllers need at least one Pod: set --objects-per-controller or --shared-objects"))
	}
	if s.Strategy == spec.StrategyPatch && s.PatchType == spec.PatchJSON {
		errs = append(errs, field.Invalid(field.NewPath("patchType"), s.PatchType,
			"controller-status patches a condition in a list keyed by type, which a json patch cannot address: use --patch-type merge or strategic"))
	}
	if s.Watchers > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("watchers"), "controller-status does not measure watch delay yet: drop --watchers (the counter scenario does)"))
	}
	if s.Rate > 0 && s.MaxInFlight != s.Writers {
		errs = append(errs, field.Forbidden(field.NewPath("maxInFlight"),
			"controller-status runs controllers x writers workers, each with Pods of its own, and they are the ones in flight: drop --max-in-flight"))
	}
	return errs
}

// Describe is the run in a few words, e.g. "4 controllers x 8 workers,
// 10 owned Pods each, 2 shared".
func (c *Settings) Describe(s *spec.Spec) string {
	return fmt.Sprintf("%s x %s, %d owned Pods each, %d shared",
		words.Plural(c.Controllers, "controller"), words.Plural(c.workers(s), "worker"), c.ObjectsPerController, c.SharedObjects)
}

// workers is how many workers each controller runs: Spec.Writers, or one
// per Pod when it has fewer Pods than that.
func (c *Settings) workers(s *spec.Spec) int {
	return min(s.Writers, c.ObjectsPerController+c.SharedObjects)
}
