package workload

import (
	"fmt"

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

// lookup returns the scenario called name in registry.
func lookup(registry []scenario.Definition, name string) (scenario.Definition, bool) {
	for _, d := range registry {
		if d.Name == name {
			return d, true
		}
	}
	return scenario.Definition{}, false
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
	def, settings, errs := resolve(Scenarios(), &s)
	return &Resolved{Spec: s, Def: def, Settings: settings}, errs
}

// Workload is the resolved spec in words, as its Result says it.
func (r *Resolved) Workload() string {
	return results.Describe(r.Spec, r.Settings.Describe(&r.Spec), r.Def.Traits().Driven)
}

func resolve(registry []scenario.Definition, s *spec.Spec) (scenario.Definition, scenario.Settings, field.ErrorList) {
	if s.Scenario == "" {
		s.Scenario = DefaultScenario
	}
	def, ok := lookup(registry, s.Scenario)
	if !ok {
		var names []string
		for _, d := range registry {
			names = append(names, d.Name)
		}
		errs := spec.OneOf(field.NewPath("scenario"), s.Scenario, names, "scenario")
		return def, nil, errs
	}
	s.Defaults(def.Traits())
	errs := s.Validate(def.Traits())
	settings := def.NewSettings()
	p := field.NewPath("settings")
	if derrs := scenario.Decode(s.Settings, settings, p); len(derrs) > 0 {
		return def, nil, append(errs, derrs...)
	}
	settings.Default(s)
	errs = append(errs, settings.Validate(s, p)...)
	m, err := scenario.Encode(settings)
	if err != nil {
		return def, nil, append(errs, field.InternalError(p, fmt.Errorf("%w (a bug in kb-bench: please report it)", err)))
	}
	s.Settings = m
	return def, settings, errs
}
