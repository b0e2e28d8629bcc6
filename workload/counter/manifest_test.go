package counter

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/spec"
)

// Bad input about the run's own object is refused before the run, at the
// setting's path, saying what is wrong; good input resolves its field.
func TestObjectSettings(t *testing.T) {
	widget, err := os.ReadFile("testdata/widget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd, _, _ := strings.Cut(string(widget), "---\n")
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 0\nstatus:\n  observedGeneration: 0\n"
	lease := "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l}\nspec: {holderIdentity: a}\n"
	tests := []struct {
		name     string
		set      Settings
		strategy spec.Strategy
		patch    spec.PatchType
		wantPath string // "" for valid
		want     string // in the error's detail
		wantStr  bool   // the field is a decimal string
	}{
		{"a CR's status with its CRD", Settings{Manifest: string(widget), FieldPath: ".status.count", Subresource: "status"}, "", "", "", "", false},
		{"a CR's spec", Settings{Manifest: string(widget), FieldPath: ".spec.size"}, "", "", "", "", false},
		{"an annotation", Settings{Manifest: lease, FieldPath: `.metadata.annotations["example.com/n"]`}, "", "", "", "", true},
		{"a Deployment's status", Settings{Manifest: deployment, FieldPath: ".status.observedGeneration", Subresource: "status"}, "", "", "", "", false},
		{"a file", Settings{Manifest: "testdata/widget.yaml", FieldPath: ".status.count", Subresource: "status"}, "", "", "", "", false},
		{"a file that is not there", Settings{Manifest: "testdata/nothing.yaml", FieldPath: ".status.count"}, "", "", "settings.manifest", "cannot be read", false},
		{"YAML that does not parse", Settings{Manifest: "kind: [\nx\n", FieldPath: ".status.count"}, "", "", "settings.manifest", "does not parse", false},
		{"no kind", Settings{Manifest: "apiVersion: v1\nmetadata: {}\n", FieldPath: ".status.count"}, "", "", "settings.manifest", "no apiVersion or kind", false},
		{"a CRD alone", Settings{Manifest: crd, FieldPath: ".status.count"}, "", "", "settings.manifest", "has no object", false},
		{"two objects", Settings{Manifest: lease + "---\n" + deployment, FieldPath: ".spec.replicas"}, "", "", "settings.manifest", "two objects", false},
		{"a CRD of another kind", Settings{Manifest: crd + "---\n" + lease, FieldPath: ".spec.replicas"}, "", "", "settings.manifest", "not the object's", false},
		{"a cluster-scoped CRD", Settings{Manifest: strings.Replace(string(widget), "scope: Namespaced", "scope: Cluster", 1), FieldPath: ".spec.size"}, "", "", "settings.manifest", "cluster-scoped", false},
		{"no field path", Settings{Manifest: string(widget)}, "", "", "settings.fieldPath", "name the field", false},
		{"a field path without a dot", Settings{Manifest: string(widget), FieldPath: "status.count"}, "", "", "settings.fieldPath", "must start with a dot", false},
		{"a field the schema lacks", Settings{Manifest: string(widget), FieldPath: ".status.nothing", Subresource: "status"}, "", "", "settings.fieldPath", "neither in the object nor in its CustomResourceDefinition's schema", false},
		{"a string field", Settings{Manifest: string(widget), FieldPath: ".status.phase", Subresource: "status"}, "", "", "", "", true},
		{"a field that holds text", Settings{Manifest: string(widget), FieldPath: ".spec.name"}, "", "", "settings.fieldPath", `holds "a"`, false},
		{"a built-in's field not in the object", Settings{Manifest: lease, FieldPath: ".spec.leaseDurationSeconds"}, "", "", "settings.fieldPath", "give it a starting value", false},
		{"metadata beyond annotations", Settings{Manifest: lease, FieldPath: ".metadata.generation"}, "", "", "settings.fieldPath", "only annotations and labels", false},
		{"a subresource that is not status", Settings{Manifest: string(widget), FieldPath: ".status.count", Subresource: "scale"}, "", "", "settings.subresource", "supported values", false},
		{"status of a CRD without it", Settings{Manifest: strings.Replace(string(widget), "subresources: {status: {}}", "", 1), FieldPath: ".status.count", Subresource: "status"}, "", "", "settings.subresource", "no status subresource", false},
		{"status through the main resource", Settings{Manifest: string(widget), FieldPath: ".status.count"}, "", "", "settings.subresource", "pass --subresource status", false},
		{"spec through status", Settings{Manifest: string(widget), FieldPath: ".spec.size", Subresource: "status"}, "", "", "settings.subresource", "only .status", false},
		{"strategic merge on a CR", Settings{Manifest: string(widget), FieldPath: ".status.count", Subresource: "status"}, spec.StrategyPatch, spec.PatchStrategic, "patchType", "no strategic merge", false},
		{"disjoint fields", Settings{Manifest: string(widget), FieldPath: ".status.count", Subresource: "status", Fields: FieldsDisjoint}, "", "", "settings.fields", "drop --fields disjoint", false},
		{"install-crd without a CRD", Settings{Manifest: lease, FieldPath: ".metadata.annotations.n", InstallCRD: true}, "", "", "settings.installCRD", "no CustomResourceDefinition", false},
		{"a field path without a manifest", Settings{FieldPath: ".status.count"}, "", "", "settings.fieldPath", "give --manifest", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &spec.Spec{Writers: 1, Strategy: tt.strategy, PatchType: tt.patch}
			set := tt.set
			set.Default(s)
			errs := set.Validate(s, field.NewPath("settings"))
			if tt.wantPath == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs.ToAggregate())
				}
				m, err := parseManifest(set.Manifest)
				if err != nil {
					t.Fatal(err)
				}
				path, _ := parseFieldPath(set.FieldPath)
				if f, _ := m.resolveField(path); f.str != tt.wantStr {
					t.Errorf("%s is a decimal string: %v, want %v", f, f.str, tt.wantStr)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tt.wantPath && strings.Contains(e.Detail, tt.want) {
					return
				}
			}
			t.Fatalf("errors %v, want one at %s saying %q", errs.ToAggregate(), tt.wantPath, tt.want)
		})
	}
}

func TestFieldPath(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{".status.count", []string{"status", "count"}},
		{`.metadata.annotations["example.com/n"]`, []string{"metadata", "annotations", "example.com/n"}},
		{`.spec["a.b"].c`, []string{"spec", "a.b", "c"}},
		{".status", nil},
		{".status..count", nil},
		{`.metadata.annotations["x`, nil},
	}
	for _, tt := range tests {
		got, err := parseFieldPath(tt.in)
		if (err != nil) != (tt.want == nil) || strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("parseFieldPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			continue
		}
		if err == nil && (fieldRef{path: got}).String() != tt.in {
			t.Errorf("%q prints back as %s", tt.in, fieldRef{path: got})
		}
	}
}

// A writer reads the field as the object holds it: a JSON number, a
// decimal string, or absent (0); anything else is another client's.
func TestResourceVersionOf(t *testing.T) {
	tests := []struct {
		name    string
		obj     map[string]any
		str     bool
		want    int64
		wantErr bool
	}{
		{"a number", map[string]any{"status": map[string]any{"count": int64(7)}}, false, 7, false},
		{"a JSON float", map[string]any{"status": map[string]any{"count": float64(8)}}, false, 8, false},
		{"a decimal string", map[string]any{"status": map[string]any{"count": "9"}}, true, 9, false},
		{"absent", map[string]any{"status": map[string]any{}}, false, 0, false},
		{"text", map[string]any{"status": map[string]any{"count": "x"}}, true, 0, true},
		{"a list", map[string]any{"status": map[string]any{"count": []any{}}}, false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &resource{field: fieldRef{path: []string{"status", "count"}, str: tt.str}}
			obj := &unstructured.Unstructured{Object: tt.obj}
			obj.SetResourceVersion("42")
			v, err := r.cached(obj, "")
			if (err != nil) != tt.wantErr || v.value != tt.want || (err == nil && v.rv != "42") {
				t.Fatalf("version %+v, %v; want value %d (error %v)", v, err, tt.want, tt.wantErr)
			}
			if err == nil && v.obj == any(obj) {
				t.Errorf("the cached object itself was handed out, not a copy the writer may change")
			}
		})
	}
}
