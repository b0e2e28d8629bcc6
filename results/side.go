package results

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Side is one column of a comparison: the samples of one configuration.
type Side struct {
	// Label names the side (the path it was read from).
	Label string
	// Results are its samples, one result each.
	Results []*Result
	// Files are the documents ReadSide read it from (result.json and
	// set.json files): a caller writing what it makes of them must not
	// write over them.
	Files []string
}

// Samples checks that rs, one side's results read from where (a path
// each), are samples of one workload (the same Workload and resolved spec,
// but for keep), and counts a run once: a result whose run id an earlier
// one has (a copied directory) is left out, and a note says so.
func Samples(label string, rs []*Result, where []string) ([]*Result, []string, error) {
	name := func(i int) string {
		if i < len(where) {
			return where[i]
		}
		return fmt.Sprintf("sample %d", i+1)
	}
	var kept []*Result
	var ids []string              // run ids, in the order first seen
	seen := map[string][]string{} // run id -> where each copy was
	for i, r := range rs {
		if diff := workloadDiff(rs[0], r); diff != "" {
			return nil, nil, fmt.Errorf("%s: its samples are not of one workload: %s (run %s) %s %s (run %s): a side's samples repeat one workload; pass each workload as a side of its own",
				label, name(i), r.RunID, diff, name(0), rs[0].RunID)
		}
		if r.RunID != "" {
			if seen[r.RunID] = append(seen[r.RunID], name(i)); len(seen[r.RunID]) > 1 {
				continue
			}
			ids = append(ids, r.RunID)
		}
		kept = append(kept, r)
	}
	var notes []string
	for _, id := range ids {
		if at := seen[id]; len(at) > 1 {
			notes = append(notes, fmt.Sprintf("%s: run %s is there %d times (%s): it counts as one sample, not %d", label, id, len(at), strings.Join(at, ", "), len(at)))
		}
	}
	return kept, notes, nil
}

// workloadDiff says how b's workload differs from a's ("ran X, not Y as"),
// "" when they are one workload.
func workloadDiff(a, b *Result) string {
	if a.Workload != b.Workload {
		return fmt.Sprintf("ran %q, not %q as", b.Workload, a.Workload)
	}
	sa, sb := a.Spec, b.Spec
	sa.Keep, sb.Keep = false, false
	if reflect.DeepEqual(sa, sb) {
		return ""
	}
	var ja, jb any
	if roundTrip(sa, &ja) != nil || roundTrip(sb, &jb) != nil {
		return "ran a spec that cannot be compared with that of"
	}
	var diffs []string
	jsonDiff("spec", ja, jb, &diffs)
	if len(diffs) == 0 {
		return ""
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("%d more", len(diffs)-3))
	}
	return "ran other settings (" + strings.Join(diffs, ", ") + ") than"
}

// roundTrip is v as plain JSON values.
func roundTrip(v any, out *any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// jsonDiff lists where a and b differ, as "path: a vs b".
func jsonDiff(path string, a, b any, out *[]string) {
	ma, oka := a.(map[string]any)
	mb, okb := b.(map[string]any)
	if oka && okb {
		keys := maps.Clone(ma)
		maps.Copy(keys, mb)
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			jsonDiff(path+"."+k, ma[k], mb[k], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		show := func(v any) string {
			if v == nil {
				return "unset"
			}
			s, _ := json.Marshal(v)
			if len(s) > 40 {
				return string(s[:40]) + "..."
			}
			return string(s)
		}
		*out = append(*out, fmt.Sprintf("%s %s vs %s", path, show(b), show(a)))
	}
}
