package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Encode returns r as the indented JSON of result.json, with APIVersion and
// Kind filled in.
func Encode(r *Result) ([]byte, error) {
	c := *r
	c.APIVersion, c.Kind = APIVersion, KindResult
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	return append(b, '\n'), nil
}

// OlderAPIVersion is the Result version before nearest-rank percentiles:
// Decode reads it, with Summary.Percentiles PercentilesRoundedRank.
const OlderAPIVersion = "kb-bench.io/v1alpha2"

// PreFiguresAPIVersion is the Result version before Figures: Decode reads
// it, with its scenario figures in Details.
const PreFiguresAPIVersion = "kb-bench.io/v1alpha4"

// PreIdleAPIVersion is the Result version before Cost.ApiserverIdle:
// Decode reads it, as it is.
const PreIdleAPIVersion = "kb-bench.io/v1alpha3"

// Decode reads a Result document of this or an older version: apiVersion
// and kind first, then the body strictly, then its figures (Validate).
func Decode(rd io.Reader) (*Result, error) {
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a kb-bench result (invalid JSON): %w", err)
	}
	if head.Kind != KindResult {
		return nil, fmt.Errorf("kind is %q, not %q: this is not a kb-bench result document", head.Kind, KindResult)
	}
	if !slices.Contains([]string{APIVersion, PreFiguresAPIVersion, PreIdleAPIVersion, OlderAPIVersion}, head.APIVersion) {
		if newer, _ := newerVersion(head.APIVersion); newer {
			return nil, fmt.Errorf("apiVersion %s is newer than this kb-bench reads (%s): upgrade kb-bench to read it", head.APIVersion, APIVersion)
		}
		return nil, fmt.Errorf("apiVersion %q is not supported: this kb-bench reads %s, %s, %s and %s", head.APIVersion, APIVersion, PreFiguresAPIVersion, PreIdleAPIVersion, OlderAPIVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding the %s result: %w", head.APIVersion, err)
	}
	if head.APIVersion != APIVersion && len(r.Figures) > 0 {
		return nil, fmt.Errorf("decoding the %s result: figures is not a %s field: remove it, or set apiVersion %s", head.APIVersion, head.APIVersion, APIVersion)
	}
	if head.APIVersion != APIVersion && head.APIVersion != PreFiguresAPIVersion && r.Cost != nil && r.Cost.ApiserverIdle != nil {
		return nil, fmt.Errorf("decoding the %s result: cost.apiserverIdle is not a %s field: remove it, or set apiVersion %s", head.APIVersion, head.APIVersion, APIVersion)
	}
	if head.APIVersion == OlderAPIVersion {
		if r.Summary.Percentiles != "" {
			return nil, fmt.Errorf("decoding the %s result: summary.percentiles is not a %s field: remove it, or set apiVersion %s if the figures are nearest rank", head.APIVersion, head.APIVersion, APIVersion)
		}
		r.Summary.Percentiles = PercentilesRoundedRank
	}
	// Unknown when the checks say so, as Summarize decides: a document
	// written before an unmeasured count was told from a measured 0
	// says 0.
	if LostUpdatesOf(r.Checks) == nil {
		r.Summary.LostUpdates = nil
	}
	if head.APIVersion == PreFiguresAPIVersion && len(r.Details) > 0 {
		figures, err := detailsFigures(r.Details)
		if err != nil {
			return nil, fmt.Errorf("decoding the %s result: details: %w", head.APIVersion, err)
		}
		r.Figures = figures
		r.Warnings = append(r.Warnings, "the scenario's figures were read from the details of this "+PreFiguresAPIVersion+
			" result: their units are not known (a duration is in nanoseconds); its text is in details (show --format json)")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// detailsFigures converts a v1alpha4 result's Details once, at read time,
// without the scenario's code: each number 0 or more and each bool is a
// figure named by its path (failoverTime.p50: failoverTimeP50), a count
// (its unit is not known) or a bool. An array's index, or an object's key
// that is no name, is a label. Strings and negative numbers stay in
// Details only.
func detailsFigures(details json.RawMessage) ([]Figure, error) {
	dec := json.NewDecoder(bytes.NewReader(details))
	var out []Figure
	var walk func(name, path string, labels map[string]string) error
	walk = func(name, path string, labels map[string]string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		f := Figure{Name: name, Labels: labels, Unit: UnitCount, Help: "details" + path + " of a " + PreFiguresAPIVersion + " result (its unit is not known)"}
		switch t := tok.(type) {
		case json.Delim:
			for i := 0; dec.More() && err == nil; i++ {
				if t == '[' {
					err = walk(name, fmt.Sprintf("%s[%d]", path, i), withLabel(labels, "index", strconv.Itoa(i)))
					continue
				}
				k, _ := dec.Token() // a key: Details is valid JSON
				switch key, _ := k.(string); {
				case !detailsKey.MatchString(key):
					err = walk(name, path+"."+key, withLabel(labels, "key", key))
				case name == "":
					err = walk(strings.ToLower(key[:1])+key[1:], path+"."+key, labels)
				default:
					err = walk(name+strings.ToUpper(key[:1])+key[1:], path+"."+key, labels)
				}
			}
			if err == nil {
				_, err = dec.Token() // the closing ] or }
			}
			return err
		case float64:
			f.Value = t
		case bool:
			f.Value, f.Unit = map[bool]float64{true: 1}[t], UnitBool
		default: // a string or null
			return nil
		}
		if f.Value >= 0 && name != "" && !slices.ContainsFunc(out, func(g Figure) bool { return g.Key() == f.Key() }) {
			out = append(out, f)
		}
		return nil
	}
	return out, walk("", "", nil)
}

// withLabel is labels and one more, named kind (kind2, kind3... when
// labels has 1, 2... already).
func withLabel(labels map[string]string, kind, value string) map[string]string {
	if len(labels) > 0 {
		kind += strconv.Itoa(len(labels) + 1)
	}
	l := map[string]string{kind: value}
	maps.Copy(l, labels)
	return l
}

// detailsKey is a Details object key that is part of a figure's name.
var detailsKey = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*$`)

// newerVersion reports whether apiVersion v ("kb-bench.io/v1beta2") is
// newer than APIVersion in Kubernetes version order (v1alpha1 < v1beta1 <
// v1 < v2alpha1); ok is false when v is not a kb-bench.io version.
func newerVersion(v string) (newer, ok bool) {
	key, ok := versionKey(v)
	current, _ := versionKey(APIVersion)
	return ok && slices.Compare(key, current) > 0, ok
}

// versionKey orders "kb-bench.io/vMAJOR[alpha|betaN]" as (major, stage, n).
func versionKey(apiVersion string) ([]int, bool) {
	group, v, found := strings.Cut(apiVersion, "/")
	if !found || group != strings.Split(APIVersion, "/")[0] || !strings.HasPrefix(v, "v") {
		return nil, false
	}
	major, stage, n := v[1:], 2, "0"
	for i, name := range []string{"alpha", "beta"} {
		if before, after, found := strings.Cut(major, name); found {
			major, stage, n = before, i, after
			break
		}
	}
	mj, err1 := strconv.Atoi(major)
	nn, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	return []int{mj, stage, nn}, true
}

// readableVersion says why a document of apiVersion v (a set's or a
// sweep's) cannot be read; nil when it can (this version or an older one).
func readableVersion(v string) error {
	if newer, ok := newerVersion(v); !ok || newer {
		return fmt.Errorf("apiVersion %q, which this kb-bench (%s) cannot read: use a newer kb-bench", v, APIVersion)
	}
	return nil
}
