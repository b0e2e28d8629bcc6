package workload

import (
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
	r := &Resolved{Spec: s}
	errs := r.resolve()
	return r, errs
}

// Workload is the resolved spec in words, as its Result says it.
func (r *Resolved) Workload() string {
	return results.Describe(r.Spec, r.Settings.Describe(&r.Spec), r.Def.Traits().Driven)
}

func (r *Resolved) resolve() field.ErrorList {
	s := &r.Spec
	if s.Scenario == "" {
		s.Scenario = DefaultScenario
	}
	registry := Scenarios()
	i := slices.IndexFunc(registry, func(d scenario.Definition) bool { return d.Name == s.Scenario })
	if i < 0 {
		var names []string
		for _, d := range registry {
			names = append(names, d.Name)
		}
		return spec.OneOf(field.NewPath("scenario"), s.Scenario, names, "scenario")
	}
	r.Def = registry[i]
	s.Defaults(r.Def.Traits())
	errs := s.Validate(r.Def.Traits())
	settings := r.Def.NewSettings()
	p := field.NewPath("settings")
	if derrs := scenario.Decode(s.Settings, settings, p); len(derrs) > 0 {
		return append(errs, derrs...)
	}
	settings.Default(s)
	errs = append(errs, settings.Validate(s, p)...)
	m, err := scenario.Encode(settings)
	if err != nil {
		return append(errs, field.InternalError(p, fmt.Errorf("%w (a bug in kb-bench: please report it)", err)))
	}
	s.Settings, r.Settings = m, settings
	return errs
}
