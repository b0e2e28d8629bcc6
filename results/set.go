package results

import (
	"encoding/json"
	"fmt"
)

// KindResultSet is the kind of a set.json document.
const KindResultSet = "ResultSet"

// ResultSet lists the samples of one run of several (run --count): each
// is a result directory below the set's.
type ResultSet struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	RunID      string `json:"runID"`
	// Label and Cell say which configuration of a matrix run the set is:
	// its label ("strategy=ssa writers=8") and its place among the
	// configurations, from 1, in the order they ran.
	Label string `json:"label,omitempty"`
	Cell  int    `json:"cell,omitempty"`
	// Samples are the directories of its samples, in the order they ran.
	Samples []string `json:"samples"`
}

// DecodeSet reads a set document: its kind, a version this kb-bench
// reads, and at least one sample, each a directory inside the set.
func DecodeSet(data []byte) (*ResultSet, error) {
	var set ResultSet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a result set: %w", err)
	}
	if set.Kind != KindResultSet {
		return nil, fmt.Errorf("kind is %q, not %q", set.Kind, KindResultSet)
	}
	if err := readableVersion(set.APIVersion); err != nil {
		return nil, err
	}
	if len(set.Samples) == 0 {
		return nil, fmt.Errorf("lists no samples: the run wrote none (was it stopped before its first sample ended?)")
	}
	return &set, nil
}
