package counter

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

func TestMergePatchBody(t *testing.T) {
	tests := []struct {
		name  string
		field fieldRef
		value int64
		rv    string
		want  string
	}{
		{"no precondition", cm("counter"), 42, "", `{"data":{"counter":"42"}}`},
		{"with resourceVersion", cm("counter"), 1, "12345", `{"metadata":{"resourceVersion":"12345"},"data":{"counter":"1"}}`},
		{"own field", cm("w-7"), 0, "", `{"data":{"w-7":"0"}}`},
		{"odd resourceVersion is escaped", cm("counter"), 3, `a"b\c`, `{"metadata":{"resourceVersion":"a\"b\\c"},"data":{"counter":"3"}}`},
		{"a number in a custom resource's status", num("status", "count"), 7, "", `{"status":{"count":7}}`},
		{"deep, with resourceVersion", num("spec", "a", "b"), 2, "9", `{"metadata":{"resourceVersion":"9"},"spec":{"a":{"b":2}}}`},
		{"an annotation shares metadata with the resourceVersion", fieldRef{path: []string{"metadata", "annotations", "example.com/n"}, str: true}, 4, "9",
			`{"metadata":{"resourceVersion":"9","annotations":{"example.com/n":"4"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendMergePatch(nil, tt.field, tt.value, tt.rv))
			if got != tt.want {
				t.Errorf("body = %s, want %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("body %s is not valid JSON", got)
			}
		})
	}
}

// A JSON patch body is a compare-and-swap: applied to a document holding
// the old value it sets the new one; applied to anything else it fails.
func TestJSONPatchBodyIsCompareAndSwap(t *testing.T) {
	tests := []struct {
		name    string
		field   fieldRef
		doc     string
		old     int64
		new     int64
		want    string
		wantErr bool
	}{
		{"old value matches", cm("counter"), `{"data":{"counter":"5"}}`, 5, 6, `{"data":{"counter":"6"}}`, false},
		{"someone moved it on", cm("counter"), `{"data":{"counter":"7"}}`, 5, 6, "", true},
		{"field is gone", cm("counter"), `{"data":{}}`, 5, 6, "", true},
		{"own field", cm("w-3"), `{"data":{"w-3":"0","w-4":"9"}}`, 0, 1, `{"data":{"w-3":"1","w-4":"9"}}`, false},
		{"pointer escaping", cm("a/b~c"), `{"data":{"a/b~c":"1"}}`, 1, 2, `{"data":{"a/b~c":"2"}}`, false},
		{"a number in a custom resource's status", num("status", "count"), `{"status":{"count":5}}`, 5, 6, `{"status":{"count":6}}`, false},
		{"a number is not its decimal string", num("status", "count"), `{"status":{"count":"5"}}`, 5, 6, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := appendJSONPatch(nil, tt.field, tt.old, tt.new)
			patch, err := jsonpatch.DecodePatch(body)
			if err != nil {
				t.Fatalf("body %s does not decode as a JSON patch: %v", body, err)
			}
			out, err := patch.Apply([]byte(tt.doc))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("patch %s applied to %s, want it refused", body, tt.doc)
				}
				return
			}
			if err != nil {
				t.Fatalf("patch %s on %s: %v", body, tt.doc, err)
			}
			if !jsonpatch.Equal(out, []byte(tt.want)) {
				t.Errorf("patched = %s, want %s", out, tt.want)
			}
		})
	}
}

// cm is a ConfigMap's data key as a field; num a number at path.
func cm(key string) fieldRef      { return configMaps{}.fieldOf(key) }
func num(path ...string) fieldRef { return fieldRef{path: path} }
