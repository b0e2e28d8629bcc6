package analysis

import (
	"strings"
	"testing"
)

// A verdicts document that is not one kb-bench wrote is refused, saying
// what is wrong.
func TestDecodeVerdictsRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"another kind":     {`{"apiVersion":"kb-bench.io/v1alpha1","kind":"Gate","verdicts":[]}`, `"Gate" document`},
		"no verdict":       {`{"apiVersion":"kb-bench.io/v1alpha1","kind":"GateVerdicts","verdicts":[]}`, "holds no verdict"},
		"no why":           {`{"apiVersion":"kb-bench.io/v1alpha1","kind":"GateVerdicts","verdicts":[{"threshold":"p99 < 1s","passed":true}]}`, "verdict 1"},
		"an unknown field": {`{"apiVersion":"kb-bench.io/v1alpha1","kind":"GateVerdicts","verdict":[]}`, "unknown field"},
	} {
		if _, err := DecodeVerdicts([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}
