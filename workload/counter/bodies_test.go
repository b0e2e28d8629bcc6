package counter

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

func TestMergePatchBody(t *testing.T) {
	tests := []struct {
		name  string
		key   string
		value int64
		rv    string
		want  string
	}{
		{"no precondition", "counter", 42, "", `{"data":{"counter":"42"}}`},
		{"with resourceVersion", "counter", 1, "12345", `{"metadata":{"resourceVersion":"12345"},"data":{"counter":"1"}}`},
		{"own field", "w-7", 0, "", `{"data":{"w-7":"0"}}`},
		{"odd resourceVersion is escaped", "counter", 3, `a"b\c`, `{"metadata":{"resourceVersion":"a\"b\\c"},"data":{"counter":"3"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendMergePatch(nil, tt.key, tt.value, tt.rv))
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
		key     string
		doc     string
		old     int64
		new     int64
		want    string
		wantErr bool
	}{
		{"old value matches", "counter", `{"data":{"counter":"5"}}`, 5, 6, `{"data":{"counter":"6"}}`, false},
		{"someone moved it on", "counter", `{"data":{"counter":"7"}}`, 5, 6, "", true},
		{"field is gone", "counter", `{"data":{}}`, 5, 6, "", true},
		{"own field", "w-3", `{"data":{"w-3":"0","w-4":"9"}}`, 0, 1, `{"data":{"w-3":"1","w-4":"9"}}`, false},
		{"pointer escaping", "a/b~c", `{"data":{"a/b~c":"1"}}`, 1, 2, `{"data":{"a/b~c":"2"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := appendJSONPatch(nil, tt.key, tt.old, tt.new)
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
