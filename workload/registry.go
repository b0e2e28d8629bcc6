package workload

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/controllerstatus"
	"github.com/kb-bench/kb-bench/workload/counter"
	"github.com/kb-bench/kb-bench/workload/leaderelection"
	"github.com/kb-bench/kb-bench/workload/quota"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// DefaultScenario runs when a Spec names none.
const DefaultScenario = "counter"

// Scenarios is the registry: every scenario kb-bench runs, in the order
// 'kb-bench scenarios' lists them. Adding a scenario adds its line here
// (see package scenario).
func Scenarios() []scenario.Definition {
	return []scenario.Definition{
		counter.Definition,
		leaderelection.Definition,
		quota.Definition,
		controllerstatus.Definition,
	}
}

// Resolved is a spec resolved for its scenario (Resolve): its defaults
// filled in and validated, with its scenario and its scenario's decoded
// settings. It is what Run runs, so a run's spec is resolved once.
type Resolved struct {
	Spec     spec.Spec
	Def      scenario.Definition
	Settings scenario.Settings
}

// Resolve fills in a copy of s's defaults and validates it, for its
// scenario: the shared settings, then the scenario's own, which it
// decodes, defaults, validates and writes back into Spec.Settings, so that
// the result records what ran. The errors carry the path of each field as
// a profile's spec names it.
func Resolve(s spec.Spec) (*Resolved, field.ErrorList) {
	s.Scenario = cmp.Or(s.Scenario, DefaultScenario)
	r := &Resolved{Spec: s}
	registry := Scenarios()
	i := slices.IndexFunc(registry, func(d scenario.Definition) bool { return d.Name == s.Scenario })
	if i < 0 {
		var names []string
		for _, d := range registry {
			names = append(names, d.Name)
		}
		return r, spec.OneOf(field.NewPath("scenario"), s.Scenario, names, "scenario")
	}
	r.Def = registry[i]
	rs := &r.Spec
	rs.Defaults(r.Def.Traits())
	errs := rs.Validate(r.Def.Traits())
	settings := r.Def.NewSettings()
	p := field.NewPath("settings")
	if derrs := scenario.Decode(rs.Settings, settings, p); len(derrs) > 0 {
		return r, append(errs, derrs...)
	}
	settings.Default(rs)
	errs = append(errs, settings.Validate(rs, p)...)
	m, err := scenario.Encode(settings)
	if err != nil {
		return r, append(errs, field.InternalError(p, fmt.Errorf("%w (a bug in kb-bench: please report it)", err)))
	}
	rs.Settings, r.Settings = m, settings
	return r, errs
}

// Workload is the resolved spec in words, as its Result says it.
func (r *Resolved) Workload() string {
	return results.Describe(r.Spec, r.Settings.Describe(&r.Spec), r.Def.Traits().Driven)
}
