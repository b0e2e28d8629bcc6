package app

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// specFlags are the run flags. Each is declared once, by the `flag` and
// `help` tags of a spec.Spec field or of a registered scenario's settings
// field; its default in --help is that field's default. Only the flags the
// user set are applied onto the spec a profile gave (pflag's Visit), so the
// resolved spec is the profile plus the command line, then the defaults.
type specFlags struct {
	flags map[string]*specFlag
}

// specFlag is one flag and where its value goes.
type specFlag struct {
	value *fieldValue
	// index is the field's path in spec.Spec; nil for a scenario setting.
	index []int
	// setting is the settings field's JSON name, and scenarios the
	// scenarios that declare it.
	setting   string
	scenarios []string
}

// register adds the flags of spec.Spec and of every registered scenario to
// fs.
func (f *specFlags) register(fs *pflag.FlagSet) error {
	f.flags = map[string]*specFlag{}
	defaults := spec.Spec{}
	defaults.Defaults(spec.Traits{Strategies: true, Driven: true})
	defaults.Client.QPS = 0 // shown as "no client-side limit" in its help
	defaults.Strategy = ""  // the default only where the scenario has strategies
	var walk func(v reflect.Value, index []int) error
	walk = func(v reflect.Value, index []int) error {
		for i, sf := range slices.Collect(v.Type().Fields()) {
			at := append(slices.Clone(index), i)
			name := sf.Tag.Get("flag")
			if name == "" {
				if sf.Type.Kind() == reflect.Struct && sf.Type != reflect.TypeFor[spec.Duration]() {
					if err := walk(v.Field(i), at); err != nil {
						return err
					}
				}
				continue
			}
			fl := &specFlag{value: newFieldValue(v.Field(i)), index: at}
			if err := f.add(fs, name, sf.Tag.Get("help"), fl); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(reflect.ValueOf(&defaults).Elem(), nil); err != nil {
		return err
	}
	for _, def := range workload.Scenarios() {
		settings := def.NewSettings()
		settings.Default(&defaults)
		v := reflect.ValueOf(settings).Elem()
		for i, sf := range slices.Collect(v.Type().Fields()) {
			name := sf.Tag.Get("flag")
			if name == "" {
				continue
			}
			if fl, ok := f.flags[name]; ok && fl.index == nil && fl.value.typ == sf.Type {
				fl.scenarios = append(fl.scenarios, def.Name) // the same setting in another scenario
				continue
			}
			fl := &specFlag{value: newFieldValue(v.Field(i)), setting: scenario.JSONName(sf), scenarios: []string{def.Name}}
			if err := f.add(fs, name, def.Name+": "+sf.Tag.Get("help"), fl); err != nil {
				return err
			}
		}
	}
	return nil
}

// matrixFlags take a list of values, one run (or set of samples) each.
var matrixFlags = []string{"strategy", "writers", "patch-type", "fields", "objects", "rate", "clients"}

func (f *specFlags) add(fs *pflag.FlagSet, name, help string, fl *specFlag) error {
	if _, dup := f.flags[name]; dup || fs.Lookup(name) != nil {
		return fmt.Errorf("flag --%s is declared twice (a bug in kb-bench: please report it)", name)
	}
	f.flags[name] = fl
	if slices.Contains(matrixFlags, name) {
		fl.value.matrix = true
		help += "; a comma-separated list runs each (a matrix, compared at the end)"
	}
	pf := fs.VarPF(fl.value, name, "", help)
	if fl.value.typ.Kind() == reflect.Bool {
		pf.NoOptDefVal = "true"
	}
	return nil
}

// axis is a matrix flag the user gave a list: one run per value.
type axis struct {
	name string
	flag *specFlag
}

// axes lists the matrix flags the user gave more than one value, in flag
// order.
func (f *specFlags) axes(fs *pflag.FlagSet) []axis {
	var out []axis
	fs.Visit(func(pf *pflag.Flag) {
		if fl, ok := f.flags[pf.Name]; ok && len(fl.value.list) > 1 {
			out = append(out, axis{pf.Name, fl})
		}
	})
	return out
}

// setOn sets the flag's field (or setting) of s to v.
func (fl *specFlag) setOn(s *spec.Spec, v reflect.Value) {
	if fl.index != nil {
		reflect.ValueOf(s).Elem().FieldByIndex(fl.index).Set(v)
		return
	}
	b, _ := json.Marshal(v.Interface())
	var plain any
	_ = json.Unmarshal(b, &plain)
	if s.Settings == nil {
		s.Settings = map[string]any{}
	}
	s.Settings[fl.setting] = plain
}

// apply copies every flag the user set onto base: spec fields first, then
// the settings of base's scenario; a setting of another scenario is an
// error.
func (f *specFlags) apply(fs *pflag.FlagSet, base *spec.Spec) error {
	var errs []string
	visit := func(settings bool) {
		fs.Visit(func(pf *pflag.Flag) {
			fl, ok := f.flags[pf.Name]
			if !ok || (fl.index == nil) != settings {
				return
			}
			if fl.index != nil {
				fl.setOn(base, fl.value.v)
				return
			}
			name := base.Scenario
			if name == "" {
				name = workload.DefaultScenario
			}
			if !slices.Contains(fl.scenarios, name) {
				errs = append(errs, fmt.Sprintf("--%s is a setting of scenario %s, not %s: drop it, or add --scenario %s",
					pf.Name, strings.Join(fl.scenarios, " and "), name, fl.scenarios[0]))
				return
			}
			fl.setOn(base, fl.value.v)
		})
	}
	visit(false)
	visit(true)
	if len(errs) > 0 {
		return spec.Input(fmt.Errorf("%s", strings.Join(errs, "\n")))
	}
	return nil
}

// zeroOverridden returns, for the first flag the user set to its zero value
// where the resolved spec has a default in its place, what to say: zero
// means "the default" in a Spec, so an explicit --writers 0 or --duration 0
// would silently run something else.
//
// given holds a matrix cell's own values, which stand for the flags' lists.
func (f *specFlags) zeroOverridden(fs *pflag.FlagSet, resolved *spec.Spec, given []axisValue) error {
	var err error
	fs.Visit(func(pf *pflag.Flag) {
		fl, ok := f.flags[pf.Name]
		if !ok || err != nil || fl.value.typ.Kind() == reflect.Bool {
			return
		}
		value := fl.value.v.Interface()
		for _, a := range given {
			if a.name == pf.Name {
				value = a.value
			}
		}
		if !reflect.ValueOf(value).IsZero() {
			return
		}
		var got any
		if fl.index != nil {
			v := reflect.ValueOf(resolved).Elem().FieldByIndex(fl.index)
			if v.IsZero() {
				return
			}
			got = v.Interface()
		} else if got = resolved.Settings[fl.setting]; got == nil || reflect.ValueOf(got).IsZero() {
			return
		}
		if b, ok := got.(*spec.Backoff); ok {
			got = b.String()
		}
		err = spec.Input(fmt.Errorf("--%s %v would mean its default (%v) here: give the value you want", pf.Name, value, got))
	})
	return err
}

// fieldValue is a pflag.Value over a field's type: it holds the flag's own
// value, parsed from the command line the way a profile reads the field.
type fieldValue struct {
	typ reflect.Type
	v   reflect.Value // addressable, of typ
	// matrix flags take a comma-separated list (a matrix of runs): list
	// holds every value, v the first.
	matrix bool
	list   []reflect.Value
}

func newFieldValue(initial reflect.Value) *fieldValue {
	v := reflect.New(initial.Type()).Elem()
	v.Set(initial)
	return &fieldValue{typ: initial.Type(), v: v}
}

// String is the value as given, "" for the zero value (so --help shows no
// default where there is none).
func (f *fieldValue) String() string {
	if f == nil || f.v.IsZero() {
		return ""
	}
	switch x := f.v.Interface().(type) {
	case spec.Duration:
		return x.String()
	case *spec.Backoff:
		return x.String()
	}
	return fmt.Sprint(f.v.Interface())
}

// Type names the value's kind in --help.
func (f *fieldValue) Type() string {
	switch f.typ {
	case reflect.TypeFor[spec.Duration]():
		return "duration"
	case reflect.TypeFor[*spec.Backoff]():
		return "backoff"
	}
	switch f.typ.Kind() {
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Int, reflect.Int64:
		return "int"
	}
	return f.typ.Kind().String()
}

// Set parses s into the value; a matrix flag also takes "a,b,c".
func (f *fieldValue) Set(s string) error {
	if f.matrix && strings.Contains(s, ",") {
		f.list = nil
		for _, part := range strings.Split(s, ",") {
			one := &fieldValue{typ: f.typ, v: reflect.New(f.typ).Elem()}
			if err := one.Set(strings.TrimSpace(part)); err != nil {
				return err
			}
			f.list = append(f.list, one.v)
		}
		f.v.Set(f.list[0])
		return nil
	}
	f.list = nil
	return f.set(s)
}

func (f *fieldValue) set(s string) error {
	if f.typ.Kind() == reflect.Pointer {
		p := reflect.New(f.typ.Elem())
		if u, ok := p.Interface().(encoding.TextUnmarshaler); ok {
			if err := u.UnmarshalText([]byte(s)); err != nil {
				return err
			}
			f.v.Set(p)
			return nil
		}
	}
	if u, ok := f.v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	switch f.typ.Kind() {
	case reflect.String:
		f.v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		f.v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		f.v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		f.v.SetFloat(x)
	default:
		return fmt.Errorf("flags of type %s are not supported (a bug in kb-bench: please report it)", f.typ)
	}
	return nil
}
