package scenario

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Decode reads raw (a Spec's Settings) into settings, a pointer to the
// scenario's settings struct, strictly: a key that is not one of its
// fields, or a value of the wrong type, is an error at its path below p.
func Decode(raw map[string]any, settings Settings, p *field.Path) field.ErrorList {
	v := reflect.ValueOf(settings).Elem()
	byName := map[string]reflect.Value{}
	var names []string
	for i, f := range slices.Collect(v.Type().Fields()) {
		name := JSONName(f)
		if name == "" {
			continue
		}
		byName[name] = v.Field(i)
		names = append(names, name)
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		fv, ok := byName[k]
		if !ok {
			detail := "this scenario has no setting of that name"
			if len(names) > 0 {
				detail += ": use " + strings.Join(names, ", ")
			}
			errs = append(errs, field.Forbidden(p.Child(k), detail))
			continue
		}
		b, err := json.Marshal(raw[k])
		if err == nil {
			err = json.Unmarshal(b, fv.Addr().Interface())
		}
		if err != nil {
			errs = append(errs, field.Invalid(p.Child(k), raw[k], typeHint(fv.Type(), err)))
		}
	}
	return errs
}

// typeHint says what a value of t looks like, for a value that did not decode.
func typeHint(t reflect.Type, err error) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "must be a whole number"
	case reflect.Float64, reflect.Float32:
		return "must be a number"
	case reflect.Bool:
		return "must be true or false"
	case reflect.String:
		return "must be a string"
	}
	return err.Error()
}

// Encode returns settings as plain data (JSON values) for a Spec's
// Settings, so that the result records the resolved settings.
func Encode(settings Settings) (map[string]any, error) {
	b, err := json.Marshal(settings)
	if err != nil {
		return nil, fmt.Errorf("encoding the scenario's settings: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encoding the scenario's settings: %w", err)
	}
	return m, nil
}

// JSONName is the name struct field f has in JSON ("" for none).
func JSONName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

// Seed derives a run's random seeds from its id, so a run's random choices
// can be replayed.
func Seed(runID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(runID))
	return h.Sum64()
}

// MaxObjectSize bounds a scenario's filler (--object-size): room under
// etcd's and the apiserver's 1.5 MiB request limit and a ConfigMap's 1 MiB
// data limit.
const MaxObjectSize = 900 * 1024

// ValidObjectSize checks a filler of size bytes, at p.
func ValidObjectSize(p *field.Path, size int) field.ErrorList {
	if size < 0 || size > MaxObjectSize {
		return field.ErrorList{field.Invalid(p, size, fmt.Sprintf("use 0 to %d bytes (--object-size): a ConfigMap holds at most 1 MiB", MaxObjectSize))}
	}
	return nil
}
