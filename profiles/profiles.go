// Package profiles loads benchmark profiles: YAML files that describe a run
// (every knob of spec.Spec plus a name and a one-line description), either
// written by users or shipped with kb-bench and embedded in the binary.
//
// A profile looks like this:
//
//	apiVersion: kb-bench.io/v1alpha1
//	kind: Profile
//	name: counter
//	description: One line saying what it measures.
//	spec:
//	  writers: 8
//	  strategy: update
//
// Loading reads apiVersion and kind first, then decodes strictly: an unknown
// or mistyped field is an error naming the file, the line and the field.
// The decoded Spec is kept raw (not defaulted) so that command-line flags can
// override it before the caller runs Defaults and Validate; the loader also
// checks a defaulted copy so a bad profile fails at load time. Every error
// it returns is a spec.Input error.
package profiles

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/spec"
)

// Document identity of a profile.
const (
	APIVersion = "kb-bench.io/v1alpha1"
	Kind       = "Profile"
)

// Profile is a named, described run specification.
type Profile struct {
	// Name identifies the profile (--profile NAME for shipped ones).
	Name string
	// Description says in one line what the profile measures.
	Description string
	// Spec is the specification as written: not defaulted, so flags can
	// still override it. Resolve the final value (a Resolver).
	Spec spec.Spec
	// Thresholds are the profile's own gate ("p99 < 50ms", see
	// analysis.ParseThreshold), judged after a run of it.
	Thresholds []string
}

// document is the YAML shape of a profile.
type document struct {
	APIVersion  string    `yaml:"apiVersion"`
	Kind        string    `yaml:"kind"`
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Spec        spec.Spec `yaml:"spec"`
	Thresholds  []string  `yaml:"thresholds"`
}

// A Resolver checks a profile's spec as a run resolves it, with the
// scenarios' own settings (package bench passes the engine's Resolve); the
// loader points each problem at its line. Nil checks only the shapes the
// profile's types give.
type Resolver func(spec.Spec) field.ErrorList

// Load reads the profile at path.
func Load(ctx context.Context, path string, resolve Resolver) (*Profile, error) {
	data, err := readfile.Read(ctx, path, readfile.Small, "the profile")
	if err != nil {
		return nil, spec.Input(fmt.Errorf("%w (check the path given to -f or --baseline-spec)", err))
	}
	return Parse(path, data, resolve)
}

// Parse reads a profile from data; source names it in error messages (a
// file name). A profile without a name takes the base name of source.
func Parse(source string, data []byte, resolve Resolver) (*Profile, error) {
	p, err := parse(source, data, resolve)
	return p, spec.Input(err)
}

func parse(source string, data []byte, resolve Resolver) (*Profile, error) {
	root, err := parseNode(source, data)
	if err != nil {
		return nil, err
	}
	if err := checkIdentity(source, root); err != nil {
		return nil, err
	}
	w := &walker{source: source}
	w.mapping(root, reflect.TypeFor[document](), "")
	if len(w.errs) > 0 {
		return nil, errors.Join(w.errs...)
	}

	// The walk above explains problems well; the strict decoder is the
	// authority on what the document holds.
	var doc document
	if err := decodeStrict(source, data, &doc); err != nil {
		return nil, err
	}
	doc.Name = cmp.Or(doc.Name, strings.TrimSuffix(filepath.Base(source), filepath.Ext(source)))

	// Check a defaulted copy. A second decode gives a copy that shares no
	// pointers or maps (Backoff, Settings) with the raw Spec.
	var check document
	if err := decodeStrict(source, data, &check); err != nil {
		return nil, err
	}
	if resolve != nil {
		if errs := resolve(check.Spec); len(errs) > 0 {
			return nil, locate(source, lookup(root, "spec"), errs)
		}
	}
	for i, text := range doc.Thresholds {
		if _, err := analysis.ParseThreshold(text); err != nil {
			return nil, fmt.Errorf("%s: thresholds[%d]: %w", source, i, err)
		}
	}
	return &Profile{Name: doc.Name, Description: doc.Description, Spec: doc.Spec, Thresholds: doc.Thresholds}, nil
}

// parseNode parses data into a node tree and returns the top-level mapping.
func parseNode(source string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node // left empty (no document) by an empty file
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(source, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlError(source, err)
	default:
		return nil, fmt.Errorf("%s:%d: a second YAML document starts here: put one profile per file", source, next.Line)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("%s: the profile is empty: it begins with \"apiVersion: %s\" and \"kind: %s\"", source, APIVersion, Kind)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: a profile is a mapping of fields (apiVersion, kind, name, description, spec), not %s",
			source, root.Line, describe(root))
	}
	return root, nil
}

// checkIdentity reads apiVersion and kind before anything else, so a file
// that is not a profile (or a future version of one) says so plainly.
func checkIdentity(source string, root *yaml.Node) error {
	begin := fmt.Sprintf("a profile begins with \"apiVersion: %s\" and \"kind: %s\"", APIVersion, Kind)
	apiVersion, kind := lookup(root, "apiVersion"), lookup(root, "kind")
	switch {
	case apiVersion == nil:
		return fmt.Errorf("%s: apiVersion is missing: %s", source, begin)
	case apiVersion.Kind != yaml.ScalarNode || apiVersion.Value != APIVersion:
		return fmt.Errorf("%s:%d: apiVersion is %s: this kb-bench reads %s profiles", source, apiVersion.Line, describe(apiVersion), APIVersion)
	case kind == nil:
		return fmt.Errorf("%s: kind is missing: %s", source, begin)
	case kind.Kind != yaml.ScalarNode || kind.Value != Kind:
		return fmt.Errorf("%s:%d: kind is %s, not %s: this file is not a profile", source, kind.Line, describe(kind), Kind)
	}
	return nil
}

// decodeStrict decodes data into out, refusing unknown fields.
func decodeStrict(source string, data []byte, out *document) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return yamlError(source, err)
	}
	return nil
}

// yamlError rewrites yaml.v3's "yaml: line 3: msg" as "source:3: msg", one
// line per problem.
func yamlError(source string, err error) error {
	yamlLine := regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	var msgs []string
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var errs []error
	for _, m := range msgs {
		if g := yamlLine.FindStringSubmatch(m); g != nil {
			errs = append(errs, fmt.Errorf("%s:%s: %s", source, g[1], g[2]))
		} else {
			errs = append(errs, fmt.Errorf("%s: %s", source, strings.TrimPrefix(m, "yaml: ")))
		}
	}
	return errors.Join(errs...)
}

// lookup returns the value node of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	_, v := lookupKey(m, key)
	return v
}

// lookupKey returns the key and value nodes of key in mapping m, or nils.
func lookupKey(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// locate prefixes each validation error with the profile's file and the
// line of the field it names (spec.writers, spec.settings.hard, ...).
func locate(source string, specMap *yaml.Node, errs field.ErrorList) error {
	out := make([]error, len(errs))
	for i, e := range errs {
		where := source
		if line := fieldLine(specMap, e.Field); line > 0 {
			where += ":" + strconv.Itoa(line)
		}
		out[i] = fmt.Errorf("%s: spec.%w", where, e)
	}
	return errors.Join(out...)
}

// fieldLine returns the line of the deepest key of the dotted path found
// under mapping m, or 0 when not even the first is there.
func fieldLine(m *yaml.Node, path string) int {
	line := 0
	for part := range strings.SplitSeq(path, ".") {
		k, v := lookupKey(m, part)
		if k == nil {
			break
		}
		line, m = k.Line, v
	}
	return line
}

// describe names a node's value for a message: "\"v2\"", "a mapping", "a list".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "empty"
	}
	return strconv.Quote(n.Value)
}
