package profiles

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// walker checks a node tree against the Go type it will decode into and
// explains each problem with its line: unknown fields (with a suggestion),
// fields set twice, and values of the wrong type. It does not follow aliases;
// the strict decoder that runs after it checks those.
type walker struct {
	source string
	errs   []error
}

func (w *walker) fail(n *yaml.Node, format string, a ...any) {
	w.errs = append(w.errs, fmt.Errorf("%s:%d: %s", w.source, n.Line, fmt.Sprintf(format, a...)))
}

// yamlField is one YAML field of a struct.
type yamlField struct {
	name string
	typ  reflect.Type
}

// fieldsOf lists the YAML fields of struct type t in declaration order.
func fieldsOf(t reflect.Type) []yamlField {
	var out []yamlField
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name) // yaml.v3's default
		}
		out = append(out, yamlField{name: name, typ: f.Type})
	}
	return out
}

// mapping checks mapping node m against struct type t at path ("" is the top).
func (w *walker) mapping(m *yaml.Node, t reflect.Type, path string) {
	fields := fieldsOf(t)
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.fail(k, "field names %s are plain words, not %s", where(path), describe(k))
			continue
		}
		if k.Value == "<<" { // a merge key; the decoder checks what it merges
			continue
		}
		if line, dup := seen[k.Value]; dup {
			w.fail(k, "field %q %s is set twice (first on line %d): keep one", k.Value, where(path), line)
			continue
		}
		seen[k.Value] = k.Line
		i := slices.IndexFunc(fields, func(f yamlField) bool { return f.name == k.Value })
		if i < 0 {
			w.fail(k, "unknown field %q %s %s", k.Value, where(path), hint(k.Value, fields))
			continue
		}
		w.value(k, v, fields[i].typ, strings.TrimPrefix(path+"."+fields[i].name, "."))
	}
}

// value checks node n, the value of key k, against type t for the field at
// path. Problems are reported on the key's line.
func (w *walker) value(k, n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	custom := isCustom(t)
	switch {
	case t.Kind() == reflect.Struct && !custom:
		if n.Kind != yaml.MappingNode {
			w.fail(k, "%s is a group of fields (%s), not %s", path, names(fieldsOf(t)), describe(n))
			return
		}
		w.mapping(n, t, path)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Map:
		// spec.settings: its keys are the scenario's to check (scenario.Decode).
	default:
		if n.Kind != yaml.ScalarNode {
			w.fail(k, "%s takes %s, not %s", path, expects(t), describe(n))
			return
		}
		err := n.Decode(reflect.New(t).Interface())
		switch {
		case err != nil && custom:
			w.fail(k, "%s: %v", path, err)
		case err != nil || fraction(n, t):
			w.fail(k, "%s is %s: use %s", path, describe(n), expects(t))
		}
	}
}

// fraction reports whether n is a number with a fractional part bound for
// an integer field, which yaml.v3 would silently truncate (1.5 -> 1).
func fraction(n *yaml.Node, t reflect.Type) bool {
	if n.ShortTag() != "!!float" || expects(t) != "a whole number" {
		return false
	}
	var f float64
	return n.Decode(&f) != nil || f != math.Trunc(f)
}

// isCustom reports whether t decodes itself from a scalar (spec.Duration).
func isCustom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) || p.Implements(reflect.TypeFor[yaml.Unmarshaler]())
}

// expects says in words what a scalar of type t looks like.
func expects(t reflect.Type) string {
	if isCustom(t) && t.Kind() == reflect.Struct {
		return "a duration such as \"10s\""
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a single value"
}

func where(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

func names(fields []yamlField) string {
	s := make([]string, len(fields))
	for i, f := range fields {
		s[i] = f.name
	}
	return strings.Join(s, ", ")
}

// hint suggests the field the user probably meant, or lists the fields.
func hint(name string, fields []yamlField) string {
	if s := suggest(name, fields); s != "" {
		return fmt.Sprintf("(did you mean %q?)", s)
	}
	return "(fields here: " + names(fields) + ")"
}

// suggest returns the known field closest to name: the same word in another
// spelling (think-time, think_time, ThinkTime for thinkTime) or one within a
// small edit distance; "" when nothing is close.
func suggest(name string, fields []yamlField) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s))
	}
	best, bestDist := "", 3
	if len(name) < 6 {
		bestDist = 2 // short names: only one edit away
	}
	for _, f := range fields {
		if norm(f.name) == norm(name) {
			return f.name
		}
		if d := distance(strings.ToLower(name), strings.ToLower(f.name)); d < bestDist {
			best, bestDist = f.name, d
		}
	}
	return best
}

// distance is the Levenshtein edit distance between a and b (bytes).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
