package app

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kb-bench/kb-bench/bench"
	"github.com/kb-bench/kb-bench/spec"
)

// specFlags are the run flags by name: one per bench.Setting (a
// spec.Spec field or a registered scenario's setting), its default in
// --help that setting's default. Only the flags the user set become
// overrides of the profile's settings.
type specFlags map[string]*flagValue

// register adds a flag per setting to fs.
func (f *specFlags) register(fs *pflag.FlagSet) error {
	settings, err := bench.Settings()
	if err != nil {
		return err
	}
	*f = specFlags{}
	for _, s := range settings {
		if fs.Lookup(s.Name) != nil {
			return fmt.Errorf("flag --%s is declared twice (a bug in kb-bench: please report it)", s.Name)
		}
		v := &flagValue{setting: s}
		help := s.Help
		if s.Scenarios != nil {
			help = s.Scenarios[0] + ": " + help
		}
		if s.Matrix {
			help += "; a comma-separated list runs each (a matrix, compared at the end)"
		}
		(*f)[s.Name] = v
		pf := fs.VarPF(v, s.Name, "", help)
		if s.Type.Kind() == reflect.Bool {
			pf.NoOptDefVal = "true"
		}
	}
	return nil
}

// overrides are the flags the user set, in the order given, as the
// settings they override.
func (f specFlags) overrides(fs *pflag.FlagSet) []bench.Override {
	var out []bench.Override
	fs.Visit(func(pf *pflag.Flag) {
		if v, ok := f[pf.Name]; ok {
			out = append(out, bench.Override{Name: pf.Name, Values: v.values})
		}
	})
	return out
}

// flagValue is a pflag.Value of a setting: what was given, parsed as the
// setting parses it (bench.Setting.Parse); a matrix setting also takes a
// comma-separated list.
type flagValue struct {
	setting bench.Setting
	values  []any // given: one, or a matrix setting's list
}

// String is the value given, or the setting's default; "" for a zero
// value (so --help shows no default where there is none).
func (f *flagValue) String() string {
	v := f.setting.Default
	if len(f.values) > 0 {
		v = f.values[0]
	}
	if v == nil || reflect.ValueOf(v).IsZero() {
		return ""
	}
	return fmt.Sprint(v)
}

// Type names the value's kind in --help: "ints" where a comma-separated
// list of ints is taken, as pflag names its own lists.
func (f *flagValue) Type() string {
	kind := f.setting.Type.Kind().String()
	switch t := f.setting.Type; {
	case t == reflect.TypeFor[spec.Duration]():
		kind = "duration"
	case t == reflect.TypeFor[*spec.Backoff]():
		kind = "backoff"
	case t.Kind() == reflect.Float64:
		kind = "float"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		kind = "int"
	}
	if f.setting.Matrix {
		return kind + "s"
	}
	return kind
}

// Set parses text; a matrix setting's "a,b,c" is a list.
func (f *flagValue) Set(text string) error {
	parts := []string{text}
	if f.setting.Matrix {
		parts = strings.Split(text, ",")
	}
	f.values = nil
	for _, part := range parts {
		v, err := f.setting.Parse(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		f.values = append(f.values, v)
	}
	return nil
}
