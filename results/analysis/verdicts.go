package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// KindVerdicts is the kind of a gated run's verdicts.json, of apiVersion
// GateAPIVersion.
const KindVerdicts = "GateVerdicts"

// Verdicts is the document of a gated run's verdicts, saved beside its
// results so that what the run printed at its end can be printed again.
type Verdicts struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Verdicts   []Verdict `json:"verdicts"`
}

// NewVerdicts is the document of vs.
func NewVerdicts(vs []Verdict) *Verdicts {
	return &Verdicts{APIVersion: GateAPIVersion, Kind: KindVerdicts, Verdicts: vs}
}

// DecodeVerdicts reads a verdicts document, strictly (no unknown field):
// its kind and version, and at least one verdict, each naming its
// threshold and saying why.
func DecodeVerdicts(data []byte) (*Verdicts, error) {
	var d Verdicts
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not a verdicts document: %w", err)
	}
	if d.APIVersion != GateAPIVersion || d.Kind != KindVerdicts {
		return nil, fmt.Errorf("a %q document of apiVersion %q, not a %s of %s: this kb-bench cannot read it", d.Kind, d.APIVersion, KindVerdicts, GateAPIVersion)
	}
	if len(d.Verdicts) == 0 {
		return nil, errors.New("holds no verdict: a gate judges one threshold or more")
	}
	for i, v := range d.Verdicts {
		if v.Text == "" || v.Why == "" {
			return nil, fmt.Errorf("verdict %d names no threshold or says no why: every verdict has both", i+1)
		}
	}
	return &d, nil
}
