package counter

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// A run's own object (--manifest): any kind the target serves, written
// through the dynamic client, with the CustomResourceDefinition that
// defines it when it comes with it.

// crdGroupKind is a CustomResourceDefinition's.
var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// manifest is a parsed --manifest: the object every writer shares, and
// its CRD when the manifest brings it (another YAML document).
type manifest struct {
	obj *unstructured.Unstructured
	crd *unstructured.Unstructured
}

// stdin is the process's stdin, read to the end once: every run of a
// matrix or an A/B that says --manifest - gets the same manifest.
var stdin = sync.OnceValues(func() (string, error) {
	b, err := io.ReadAll(os.Stdin)
	return string(b), err
})

// readManifest returns the manifest --manifest names: the text itself
// when it spans lines (a profile embeds it), else the file it names, or
// stdin for "-".
func readManifest(arg string, stdin func() (string, error)) (string, error) {
	switch {
	case strings.Contains(arg, "\n"):
		return arg, nil
	case arg == "-":
		return stdin()
	}
	b, err := os.ReadFile(arg)
	return string(b), err
}

// parseManifest parses YAML (or JSON) documents: one object, and at most
// one CRD, which must define the object's kind.
func parseManifest(text string) (*manifest, error) {
	d := yaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	m := &manifest{}
	for {
		var doc map[string]any
		if err := d.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("it does not parse as YAML or JSON: %w", err)
		}
		if doc == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: doc}
		gvk := u.GroupVersionKind()
		switch {
		case gvk.Kind == "" || gvk.Version == "":
			return nil, errors.New("a document has no apiVersion or kind: each needs both")
		case gvk.GroupKind() == crdGroupKind && m.crd != nil:
			return nil, errors.New("it has two CustomResourceDefinitions: give only the one of the object's kind")
		case gvk.GroupKind() == crdGroupKind:
			m.crd = u
		case m.obj != nil:
			return nil, fmt.Errorf("it has two objects (%s and %s): give the one object every writer shares, and its CustomResourceDefinition if it has one", m.obj.GetKind(), u.GetKind())
		default:
			m.obj = u
		}
	}
	if m.obj == nil {
		return nil, errors.New("it has no object: give the one object every writer shares")
	}
	if m.crd != nil {
		group, _, _ := unstructured.NestedString(m.crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(m.crd.Object, "spec", "names", "kind")
		if gk := m.obj.GroupVersionKind().GroupKind(); gk != (schema.GroupKind{Group: group, Kind: kind}) {
			return nil, fmt.Errorf("its CustomResourceDefinition defines %s.%s, not the object's %s", kind, group, gk)
		}
		if m.crdVersion() == nil {
			return nil, fmt.Errorf("its CustomResourceDefinition serves no version %s, the object's", m.obj.GroupVersionKind().Version)
		}
	}
	return m, nil
}

// crdVersion is the CRD's entry for the object's version, nil if none.
func (m *manifest) crdVersion() map[string]any {
	versions, _, _ := unstructured.NestedSlice(m.crd.Object, "spec", "versions")
	for _, v := range versions {
		if v, ok := v.(map[string]any); ok && v["name"] == m.obj.GroupVersionKind().Version {
			return v
		}
	}
	return nil
}

// crdHasStatus says the manifest's CRD gives the object's version a
// status subresource.
func (m *manifest) crdHasStatus() bool {
	_, found, _ := unstructured.NestedMap(m.crdVersion(), "subresources", "status")
	return found
}

// resource is the object's resource: its CRD's, or the kind's usual
// plural (what discovery confirms before the run).
func (m *manifest) resource() schema.GroupResource {
	gvk := m.obj.GroupVersionKind()
	if m.crd != nil {
		return schema.GroupResource{Group: gvk.Group, Resource: m.crdPlural()}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}

// crdPlural and crdNamespaced are the CRD's resource name and scope.
func (m *manifest) crdPlural() string {
	p, _, _ := unstructured.NestedString(m.crd.Object, "spec", "names", "plural")
	return p
}

func (m *manifest) crdNamespaced() bool {
	scope, _, _ := unstructured.NestedString(m.crd.Object, "spec", "scope")
	return scope != "Cluster"
}

// schemaType is the type the CRD's schema gives the field at path
// ("integer", "string"; "" when the schema leaves it open), and whether
// the schema has the field at all.
func (m *manifest) schemaType(path []string) (string, bool) {
	node, _, _ := unstructured.NestedMap(m.crdVersion(), "schema", "openAPIV3Schema")
	for _, p := range path {
		switch props, _, _ := unstructured.NestedMap(node, "properties"); {
		case props[p] != nil:
			node, _ = props[p].(map[string]any)
		case node["additionalProperties"] != nil:
			node, _ = node["additionalProperties"].(map[string]any)
		case node["x-kubernetes-preserve-unknown-fields"] == true:
			return "", true
		default:
			return "", false
		}
	}
	t, _ := node["type"].(string)
	return t, true
}

// resolveField finds what the field at path holds: a number or a decimal
// string, from its value in the object, else from the CRD's schema;
// labels and annotations hold strings.
func (m *manifest) resolveField(path []string) (fieldRef, error) {
	f := fieldRef{path: path}
	v, found, _ := unstructured.NestedFieldNoCopy(m.obj.Object, path...)
	switch v.(type) {
	case string:
		f.str = true
		_, err := strconv.ParseInt(v.(string), 10, 64)
		if err != nil {
			return f, fmt.Errorf("the object's %s holds %q: start it at a whole number, e.g. 0", f, v)
		}
		return f, nil
	case int64, float64:
		return f, nil
	}
	if found {
		return f, fmt.Errorf("the object's %s holds %v, not a number: name a field that holds a whole number", f, v)
	}
	if len(path) == 3 && path[0] == "metadata" && (path[1] == "annotations" || path[1] == "labels") {
		f.str = true
		return f, nil
	}
	if m.crd != nil {
		switch t, ok := m.schemaType(path); {
		case !ok:
			return f, fmt.Errorf("%s is neither in the object nor in its CustomResourceDefinition's schema: name a field the schema declares", f)
		case t == "integer" || t == "number":
			return f, nil
		case t == "string":
			f.str = true
			return f, nil
		case t != "":
			return f, fmt.Errorf("the schema makes %s a %s, not a number: name an integer field", f, t)
		}
	}
	return f, fmt.Errorf("%s is not in the object: give it a starting value in the manifest (e.g. 0), so kb-bench knows it is a number", f)
}

// parseFieldPath parses a field path: .status.count, .spec.replicas,
// .metadata.annotations.name or .metadata.annotations["example.com/n"].
func parseFieldPath(s string) ([]string, error) {
	var path []string
	for rest := s; rest != ""; {
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			name := rest[1 : 1+end]
			if !plainName(name) {
				return nil, fmt.Errorf("%q has an empty or odd name after a dot: write .status.count, or [\"a.b/c\"] for a key with dots or slashes", s)
			}
			path, rest = append(path, name), rest[1+end:]
		case '[':
			end := strings.Index(rest, "\"]")
			if end < 0 || len(rest) < 3 || rest[1] != '"' {
				return nil, fmt.Errorf("%q has an unclosed [: write [\"key\"]", s)
			}
			key, err := strconv.Unquote(rest[1 : end+1])
			if err != nil || key == "" {
				return nil, fmt.Errorf("%q has a key that is not a quoted string: write [\"key\"]", s)
			}
			path, rest = append(path, key), rest[end+2:]
		default:
			return nil, fmt.Errorf("%q must start with a dot, e.g. .status.count", s)
		}
	}
	if len(path) < 2 {
		return nil, fmt.Errorf("%q names no field inside the object: write e.g. .status.count", s)
	}
	return path, nil
}

// plainName reports whether p can follow a dot in a field path.
func plainName(p string) bool {
	return p != "" && !strings.ContainsAny(p, `.[]"/ `)
}
