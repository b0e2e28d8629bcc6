package bench

import (
	"cmp"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/profiles"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Request is what to run, as a user gives it: a profile (or none), the
// settings given by name on top of it, and how many samples of each
// configuration.
type Request struct {
	// File is a profile YAML file, Profile a shipped profile's name; at
	// most one of them.
	File, Profile string
	// Overrides are the settings given by name, in the order given; each
	// replaces the profile's. A matrix setting given several values makes
	// one configuration (Cell) per value, of every combination.
	Overrides []Override
	// Count is how many samples of each configuration run (1 to 1000; 0
	// means 1, or DefaultABCount for an A/B run).
	Count int
	// Baseline, when set, makes the run an A/B: a baseline configuration
	// run beside the requested one (the candidate), their samples
	// alternating on one target, so that the machine's drift hits both
	// alike and a gate judges the change, not the drift.
	Baseline *Baseline
}

// Baseline is the baseline side of an A/B run: the request's own
// settings, from File rather than the request's profile when given, with
// Overrides on top ("control-plane-bin=/main/bin").
type Baseline struct {
	File      string
	Overrides []Override
}

// Override is one setting given by name (a Setting's Name, as run's flag
// says it: "writers", "strategy", a scenario's "objects"), with one value
// or, for a matrix setting, several. A value is of the setting's type or
// converts to it ("ssa" for a spec.Strategy, 8 for an int).
type Override struct {
	Name   string
	Values []any
}

// Set is an Override of name to values.
func Set(name string, values ...any) Override { return Override{Name: name, Values: values} }

// String is the override as a flag gives it: "writers=1,2,4".
func (o Override) String() string {
	values := make([]string, len(o.Values))
	for i, v := range o.Values {
		values[i] = fmt.Sprint(v)
	}
	return o.Name + "=" + strings.Join(values, ",")
}

// Plan is what a run does: its configurations (cells), each sampled Count
// times, the samples interleaved in rounds (sample 1 of every cell, then
// sample 2 of every cell, ...), each round in an order drawn at random, so
// that neither drift nor load that comes and goes favours a cell (see
// interleave).
//
// The cells share the first cell's target, except in an A/B run whose
// sides differ in their local control plane (FreshTargets).
type Plan struct {
	Cells []Cell
	Count int
	// Source says where the settings came from, for messages: "flags",
	// "profile hot-key", a profile file's path.
	Source string
	// Thresholds are the profile's own gate ("p99 < 50ms"), if it has one.
	Thresholds []string
	// Notes are what the user should know of how the plan was resolved
	// (a run shows them before its first sample).
	Notes []string
	// PrivateControlPlane is set when the settings ask for a particular
	// local control plane (its storage, binaries or controller manager):
	// the run starts one of its own rather than use 'kb-bench local up's.
	PrivateControlPlane bool
	// Sides is set on an A/B run (Request.Baseline): Cells[0] is the
	// baseline, Cells[1] the candidate, and a gate judges one against
	// the other.
	Sides bool
	// order is the samples' order, drawn once (Samples).
	order []Sample
}

// Cell is one configuration of a plan: a resolved and validated spec and,
// in a matrix, the values that make it one.
type Cell struct {
	// Label names the cell by its matrix values ("strategy=ssa writers=8");
	// "" in a plan of one cell.
	Label string
	Spec  spec.Spec
	// Values are the matrix settings' values of the cell, in the order of
	// Label.
	Values []CellValue
	// Workload is the spec in words, as its results say it.
	Workload string

	resolved *workload.Resolved // by Resolve: what the engine runs
}

// resolve is the cell's spec resolved: by Resolve, or now for a cell made
// or changed by hand. where says whose settings they are, for errors.
func (c Cell) resolve(where string) (*workload.Resolved, error) {
	if c.resolved != nil && reflect.DeepEqual(c.resolved.Spec, c.Spec) {
		return c.resolved, nil
	}
	r, errs := workload.Resolve(c.Spec)
	if len(errs) > 0 {
		return nil, spec.Input(fmt.Errorf("invalid settings %s:\n%s", where, spec.Describe(errs)))
	}
	return r, nil
}

// CellValue is one matrix setting's value in a cell.
type CellValue struct {
	Name  string
	Value any
}

// Sample is one sample of a plan: the index of its cell and its number
// (from 1).
type Sample struct {
	Cell, Index int
}

// Samples are the plan's samples in the order they run (see interleave),
// drawn on the first call and the same on every other.
func (p *Plan) Samples() []Sample {
	if p.order == nil {
		p.order = interleave(len(p.Cells), p.Count, rand.Perm)
	}
	return p.order
}

// interleave is the order in which count samples of each of cells run:
// in rounds, every cell's first sample, then every cell's second, and so
// on, each round in the order perm gives (rand.Perm: at random).
//
// A random order within each round is what makes an A/B run's pairs (its
// rounds) a fair test whatever the machine does: with no real difference,
// which side of a pair met a slow moment is a coin toss, pair by pair, so
// the signed-rank test's false alarms stay at its level. A fixed order (A
// B, B A, ... cancels a steady drift) does not: load that comes and goes
// over a few seconds hits B B, then A A, two neighbouring pairs lean the
// same way, and the test, counting them as two, fails A/A runs far more
// often than its level (README, "How often the gate cries wolf").
func interleave(cells, count int, perm func(int) []int) []Sample {
	var out []Sample
	for i := 1; i <= count; i++ {
		for _, c := range perm(cells) {
			out = append(out, Sample{Cell: c, Index: i})
		}
	}
	return out
}

// FreshTargets reports whether the cells' targets differ (an A/B run
// whose sides' local control planes do: their binaries, storage or
// shape): every sample then runs on a fresh control plane of its own
// cell's.
func (p *Plan) FreshTargets() bool {
	return slices.ContainsFunc(p.Cells[1:], func(c Cell) bool { return c.Spec.Target != p.Cells[0].Spec.Target })
}

// Matrix reports whether the plan has several cells.
func (p *Plan) Matrix() bool { return len(p.Cells) > 1 }

// maxCount bounds the samples of a cell.
const maxCount = 1000

// DefaultABCount is how many samples a side an A/B run takes unless told:
// the count at which the default gate's false alarms and power were
// measured on a noisy 2-core machine (README, "How often the gate cries
// wolf"). One sample a side cannot show any difference significant.
const DefaultABCount = 8

// Resolve turns a request into a plan: the profile, then the overrides,
// then for every cell the defaults and the validation of its scenario
// (workload.Resolve), once. Whatever is wrong with the request is bad
// input (spec.IsInput) saying what to change.
func Resolve(ctx context.Context, r Request) (*Plan, error) {
	if r.Baseline != nil {
		return resolveSides(ctx, r)
	}
	r.Count = cmp.Or(r.Count, 1)
	if r.Count < 1 || r.Count > maxCount {
		return nil, spec.Input(fmt.Errorf("--count %d: use 1 to %d samples", r.Count, maxCount))
	}
	settings, err := Settings()
	if err != nil {
		return nil, err
	}
	given := map[string]*Setting{}
	for _, o := range r.Overrides {
		s := find(settings, o.Name)
		if s == nil {
			return nil, spec.Input(fmt.Errorf("%q is not a setting kb-bench knows (see 'kb-bench run --help')", o.Name))
		}
		if len(o.Values) == 0 || len(o.Values) > 1 && !s.Matrix {
			return nil, spec.Input(fmt.Errorf("--%s takes one value, got %d", o.Name, len(o.Values)))
		}
		given[o.Name] = s
	}
	p := &Plan{Count: r.Count, Source: "flags"}
	base, err := p.base(ctx, r, given)
	if err != nil {
		return nil, err
	}
	p.Cells = []Cell{{Spec: base}}
	for _, o := range r.Overrides {
		if len(o.Values) < 2 {
			continue
		}
		var next []Cell
		for _, c := range p.Cells {
			for _, v := range o.Values {
				s := c.Spec
				s.Settings = maps.Clone(c.Spec.Settings)
				if err := given[o.Name].set(&s, v); err != nil {
					return nil, err
				}
				next = append(next, Cell{
					Label:  strings.TrimSpace(c.Label + " " + o.Name + "=" + fmt.Sprint(v)),
					Spec:   s,
					Values: append(slices.Clone(c.Values), CellValue{o.Name, v}),
				})
			}
		}
		p.Cells = next
	}
	for i := range p.Cells {
		c := &p.Cells[i]
		where := "from " + p.Source
		if c.Label != "" {
			where += " (" + c.Label + ")"
		}
		res, err := c.resolve(where)
		if err != nil {
			return nil, err
		}
		c.Spec, c.resolved, c.Workload = res.Spec, res, res.Workload()
		if err := zeroOverridden(r.Overrides, given, *c); err != nil {
			return nil, err
		}
	}
	if base.Target.KillAPIServer > 0 && (r.Count > 1 || len(p.Cells) > 1) {
		return nil, spec.Input(errors.New("--kill-apiserver kills an apiserver of the run's control plane, which the next sample or point would find dead: run one sample of one configuration (--count 1, one value per setting)"))
	}
	return p, nil
}

// resolveSides resolves an A/B request: the candidate as asked, and the
// baseline (the same settings, from the baseline's profile when it names
// one, with its overrides on top), one configuration each.
func resolveSides(ctx context.Context, r Request) (*Plan, error) {
	r.Count = cmp.Or(r.Count, DefaultABCount)
	for _, o := range r.Overrides {
		if len(o.Values) > 1 {
			return nil, spec.Input(fmt.Errorf("--%s: an A/B run compares two configurations, the baseline and the candidate: give each setting one value", o.Name))
		}
	}
	given := map[string]Override{}
	for _, o := range r.Baseline.Overrides {
		if len(o.Values) != 1 {
			return nil, spec.Input(fmt.Errorf("--baseline-with %s: give the baseline one value", o.Name))
		}
		if first, twice := given[o.Name]; twice {
			return nil, spec.Input(fmt.Errorf("--baseline-with %s and --baseline-with %s set %s twice: give each setting once", first, o, o.Name))
		}
		given[o.Name] = o
	}
	candidate := r
	candidate.Baseline = nil
	cp, err := Resolve(ctx, candidate)
	if err != nil {
		return nil, err
	}
	base := Request{File: r.Baseline.File, Overrides: append(slices.Clone(r.Overrides), r.Baseline.Overrides...), Count: r.Count}
	if base.File == "" {
		base.File, base.Profile = r.File, r.Profile
	}
	bp, err := Resolve(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("the baseline: %w", err)
	}
	b, c := bp.Cells[0], cp.Cells[0]
	if bs, cs := b.Spec.Scenario, c.Spec.Scenario; bs != cs {
		return nil, spec.Input(fmt.Errorf("the baseline runs scenario %s, the candidate %s: an A/B run compares one scenario's figures, and their operations are different things, so throughput, latency and conflicts would not compare under one name; run the two on their own and look at both with 'kb-bench compare'", bs, cs))
	}
	b.Label, b.Values = "baseline", []CellValue{{"side", "baseline"}}
	c.Label, c.Values = "candidate", []CellValue{{"side", "candidate"}}
	p := &Plan{Cells: []Cell{b, c}, Count: cp.Count, Source: cp.Source, Thresholds: cp.Thresholds, Sides: true,
		PrivateControlPlane: cp.PrivateControlPlane || bp.PrivateControlPlane}
	if len(bp.Thresholds) > 0 && !slices.Equal(bp.Thresholds, cp.Thresholds) {
		p.Notes = append(p.Notes, fmt.Sprintf("the baseline's profile %s has thresholds of its own (%s): they are not used; a gate judges the candidate against the baseline, with --gate FILE or the candidate's profile's thresholds",
			bp.Source, strings.Join(bp.Thresholds, ", ")))
	}
	if bt, ct := b.Spec.Target, c.Spec.Target; bt != ct {
		if bt.Kind != spec.TargetLocal || ct.Kind != spec.TargetLocal {
			return nil, spec.Input(fmt.Errorf("the baseline runs on target %s, the candidate on %s: an A/B run alternates its samples on one target; only the sides' local control planes (--control-plane-bin, --storage, --controller-manager, --apiservers, --etcd-latency) may differ", bt.Kind, ct.Kind))
		}
		p.PrivateControlPlane = true
	}
	return p, nil
}

// checkProfile checks a profile's spec with the engine, which knows the
// scenarios' settings.
func checkProfile(s spec.Spec) field.ErrorList {
	_, errs := workload.Resolve(s)
	return errs
}

// base is the profile with the overrides' first values applied, before
// defaults.
func (p *Plan) base(ctx context.Context, r Request, given map[string]*Setting) (base spec.Spec, err error) {
	var prof *profiles.Profile
	switch {
	case r.File != "" && r.Profile != "":
		return base, spec.Input(errors.New("-f and --profile both given: choose one profile"))
	case r.File != "":
		prof, err = profiles.Load(ctx, r.File, checkProfile)
		p.Source = r.File
	case r.Profile != "":
		prof, err = profiles.Shipped(r.Profile, checkProfile)
		p.Source = "profile " + r.Profile
	}
	if err != nil {
		return base, err
	}
	if prof != nil {
		base, p.Thresholds = prof.Spec, prof.Thresholds
	}
	has := func(name string) bool { return given[name] != nil }
	// A profile may choose local storage, but only the command line may
	// point kb-bench at an existing cluster: a kubeconfig or context in
	// the profile must be given on the command line too, or a shared
	// profile could pick another context of the user's kubeconfig.
	t := base.Target
	if (t.Kubeconfig != "" && !has("kubeconfig")) || (t.Context != "" && !has("context")) ||
		(t.Kind != "" && t.Kind != spec.TargetLocal && !has("kubeconfig") && !has("context") && !has("target")) {
		return base, spec.Input(fmt.Errorf("%s names an existing cluster (target %q, kubeconfig %q, context %q): kb-bench sends load only to a cluster named on the command line; pass --kubeconfig PATH and --context NAME, or --target",
			p.Source, t.Kind, t.Kubeconfig, t.Context))
	}
	// The shared settings first, then the scenario's (which depend on the
	// scenario the shared ones name).
	for _, scenarioSettings := range []bool{false, true} {
		var errs []string
		for _, o := range r.Overrides {
			s := given[o.Name]
			if (s.Scenarios != nil) != scenarioSettings {
				continue
			}
			if name := cmp.Or(base.Scenario, workload.DefaultScenario); s.Scenarios != nil && !slices.Contains(s.Scenarios, name) {
				errs = append(errs, fmt.Sprintf("--%s is a setting of scenario %s, not %s: drop it, or add --scenario %s",
					o.Name, strings.Join(s.Scenarios, " and "), name, s.Scenarios[0]))
				continue
			}
			if err := s.set(&base, o.Values[0]); err != nil {
				return base, err
			}
		}
		if len(errs) > 0 {
			return base, spec.Input(errors.New(strings.Join(errs, "\n")))
		}
	}
	if has("kubeconfig") || has("context") {
		switch {
		case !has("target"):
			base.Target.Kind = spec.TargetKubeconfig
		case base.Target.Kind != spec.TargetKubeconfig:
			return base, spec.Input(fmt.Errorf("--kubeconfig and --context name a cluster, but --target is %s: drop --target, or drop --kubeconfig and --context", base.Target.Kind))
		}
	}
	// Asked-for storage or binaries need a control plane that has them, not
	// whatever `kb-bench local up` is running (the defaults would hide this).
	// So does etcd latency: its proxy runs in this process.
	// And a fault that kills one of its apiservers: never the user's.
	p.PrivateControlPlane = base.Target.Storage != "" || base.Target.ControlPlaneBin != "" || base.Target.ControllerManager ||
		base.Target.EtcdLatency.Duration > 0 || base.Target.KillAPIServer > 0
	return base, nil
}

// zeroOverridden refuses a setting given its zero value where the cell's
// resolved spec has a default in its place: zero means "the default" in a
// Spec, so an explicit --writers 0 or --duration 0 would silently run
// something else.
func zeroOverridden(overrides []Override, given map[string]*Setting, c Cell) error {
	for _, o := range overrides {
		s := given[o.Name]
		if s.Type.Kind() == reflect.Bool {
			continue
		}
		value := o.Values[0]
		if i := slices.IndexFunc(c.Values, func(v CellValue) bool { return v.Name == o.Name }); i >= 0 {
			value = c.Values[i].Value
		}
		if !reflect.ValueOf(value).IsZero() {
			continue
		}
		got := s.get(c.Spec)
		if got == nil || reflect.ValueOf(got).IsZero() {
			continue
		}
		if b, ok := got.(*spec.Backoff); ok {
			got = b.String()
		}
		return spec.Input(fmt.Errorf("--%s %v would mean its default (%v) here: give the value you want", o.Name, value, got))
	}
	return nil
}

// Setting is one setting of a run that can be given by name (a flag of
// run, sweep and rbac): a field of spec.Spec with a `flag` tag, or a field
// of a scenario's settings. Its `help` tag says what it is.
type Setting struct {
	Name, Help string
	// Type is the setting's Go type; Default its default where the spec
	// has one for every scenario (the zero value where there is none).
	Type    reflect.Type
	Default any
	// Scenarios are the scenarios whose own setting it is; nil for the
	// settings of spec.Spec, which every scenario shares.
	Scenarios []string
	// Matrix settings take several values: one configuration each.
	Matrix bool

	index []int  // the field's path in spec.Spec; nil for a scenario's
	json  string // a scenario setting's name in Spec.Settings
}

// ParseOverride reads "name=value": a setting by its flag's name and one
// value of it, as --baseline-with gives it. Errors are bad input.
func ParseOverride(text string) (Override, error) {
	name, value, ok := strings.Cut(text, "=")
	name = strings.TrimPrefix(strings.TrimSpace(name), "--")
	if !ok || name == "" {
		return Override{}, spec.Input(fmt.Errorf("%q: give SETTING=VALUE, a setting as run's flag names it, e.g. control-plane-bin=/main/bin or writers=8", text))
	}
	settings, err := Settings()
	if err != nil {
		return Override{}, err
	}
	s := find(settings, name)
	if s == nil {
		return Override{}, spec.Input(fmt.Errorf("%q: %q is not a setting kb-bench knows (see 'kb-bench run --help')", text, name))
	}
	v, err := s.Parse(strings.TrimSpace(value))
	if err != nil {
		return Override{}, spec.Input(fmt.Errorf("%q: %w", text, err))
	}
	return Set(name, v), nil
}

// matrixSettings take a list of values, one configuration each.
var matrixSettings = []string{"strategy", "writers", "patch-type", "fields", "objects", "rate", "clients", "read", "watchers"}

// Settings lists every setting a run takes by name: spec.Spec's, then
// each registered scenario's own (a setting two scenarios share is listed
// once, with both).
func Settings() ([]Setting, error) {
	var out []Setting
	defaults := spec.Spec{}
	defaults.Defaults(spec.Traits{Strategies: true, Driven: true})
	defaults.Client.QPS = 0 // shown as "no client-side limit" in its help
	defaults.Strategy = ""  // the default only where the scenario has strategies
	// walk declares the settings of struct v: spec.Spec's, with those of
	// the structs it holds (scen ""), or scenario scen's.
	var walk func(v reflect.Value, index []int, scen string) error
	walk = func(v reflect.Value, index []int, scen string) error {
		for i, sf := range slices.Collect(v.Type().Fields()) {
			at := append(slices.Clone(index), i)
			s := Setting{Name: sf.Tag.Get("flag"), Help: sf.Tag.Get("help"), Type: sf.Type, Default: v.Field(i).Interface(), index: at}
			switch old := find(out, s.Name); {
			case s.Name == "" && scen == "" && sf.Type.Kind() == reflect.Struct && sf.Type != reflect.TypeFor[spec.Duration]():
				if err := walk(v.Field(i), at, scen); err != nil {
					return err
				}
			case s.Name == "":
			case scen != "" && old != nil && old.index == nil && old.Type == sf.Type:
				old.Scenarios = append(old.Scenarios, scen) // the same setting in another scenario
			case old != nil:
				return fmt.Errorf("setting --%s is declared twice (a bug in kb-bench: please report it)", s.Name)
			default:
				if scen != "" {
					s.index, s.Scenarios, s.json = nil, []string{scen}, scenario.JSONName(sf)
				}
				s.Matrix = slices.Contains(matrixSettings, s.Name)
				out = append(out, s)
			}
		}
		return nil
	}
	if err := walk(reflect.ValueOf(&defaults).Elem(), nil, ""); err != nil {
		return nil, err
	}
	for _, def := range workload.Scenarios() {
		settings := def.NewSettings()
		settings.Default(&defaults)
		if err := walk(reflect.ValueOf(settings).Elem(), nil, def.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// find is the setting called name in settings; nil when there is none.
func find(settings []Setting, name string) *Setting {
	if i := slices.IndexFunc(settings, func(s Setting) bool { return s.Name == name }); i >= 0 {
		return &settings[i]
	}
	return nil
}

// set sets the setting on sp to v, converted to its type.
func (s *Setting) set(sp *spec.Spec, v any) error {
	if text, ok := v.(string); ok && s.Type.Kind() != reflect.String {
		// A value written as a profile or a flag writes it: "10s".
		var err error
		if v, err = s.Parse(text); err != nil {
			return spec.Input(fmt.Errorf("--%s %s: %w", s.Name, text, err))
		}
	}
	rv := reflect.ValueOf(v)
	switch {
	case !rv.IsValid():
		return spec.Input(fmt.Errorf("--%s: no value", s.Name))
	case rv.Type() != s.Type && alike(rv.Kind(), s.Type.Kind()):
		rv = rv.Convert(s.Type)
	case rv.Type() != s.Type:
		return spec.Input(fmt.Errorf("--%s takes values of type %s, not %v (%T)", s.Name, s.Type, v, v))
	}
	if s.index != nil {
		reflect.ValueOf(sp).Elem().FieldByIndex(s.index).Set(rv)
		return nil
	}
	// A scenario's settings are plain JSON values in the spec, as a
	// profile has them.
	b, err := json.Marshal(rv.Interface())
	if err != nil {
		return fmt.Errorf("--%s: %w", s.Name, err)
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return fmt.Errorf("--%s: %w", s.Name, err)
	}
	if sp.Settings == nil {
		sp.Settings = map[string]any{}
	}
	sp.Settings[s.json] = plain
	return nil
}

// alike reports whether a value of kind a converts to kind b without
// losing what it says: an int to an int64 or a float, a string to a named
// string type (never a float to an int, nor a number to a string).
func alike(a, b reflect.Kind) bool {
	class := func(k reflect.Kind) int {
		switch k {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return 1
		case reflect.Float32, reflect.Float64:
			return 2
		case reflect.String, reflect.Bool:
			return 3 + int(k)
		}
		return -1
	}
	return class(a) >= 0 && (class(a) == class(b) || class(a) == 1 && class(b) == 2)
}

// Parse reads a value of the setting written as a flag or a profile
// writes it ("8", "10s", "default-backoff", "ssa"), of its type.
func (s *Setting) Parse(text string) (any, error) {
	v := reflect.New(s.Type).Elem()
	u, ok := v.Addr().Interface().(encoding.TextUnmarshaler)
	if s.Type.Kind() == reflect.Pointer {
		v.Set(reflect.New(s.Type.Elem())) // *T reads itself: T's UnmarshalText
		u, ok = v.Interface().(encoding.TextUnmarshaler)
	}
	if ok {
		if err := u.UnmarshalText([]byte(text)); err != nil {
			return nil, err
		}
		return v.Interface(), nil
	}
	switch s.Type.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", text)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", text)
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		v.SetFloat(x)
	default:
		return nil, fmt.Errorf("settings of type %s are not supported (a bug in kb-bench: please report it)", s.Type)
	}
	return v.Interface(), nil
}

// get is the setting's value in sp (nil for a scenario setting sp does
// not hold).
func (s *Setting) get(sp spec.Spec) any {
	if s.index != nil {
		return reflect.ValueOf(sp).FieldByIndex(s.index).Interface()
	}
	return sp.Settings[s.json]
}

// Scenario is a scenario that 'run --scenario' takes: its name, what it
// does, and its own flags.
type Scenario struct {
	Name, Description string
	Flags             []string
}

// Scenarios lists the scenarios kb-bench runs, in the registry's order.
func Scenarios() []Scenario {
	var list []Scenario
	for _, def := range workload.Scenarios() {
		sc := Scenario{Name: def.Name, Description: def.Description}
		for _, f := range slices.Collect(reflect.TypeOf(def.NewSettings()).Elem().Fields()) {
			if name := f.Tag.Get("flag"); name != "" {
				sc.Flags = append(sc.Flags, "--"+name)
			}
		}
		list = append(list, sc)
	}
	return list
}
