package results

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// KindGate is the kind of a thresholds file.
const KindGate = "Gate"

// GateAPIVersion is the apiVersion of a thresholds file.
const GateAPIVersion = "kb-bench.io/v1alpha1"

// gateMetrics are the figures a threshold may name, with their unit kind:
// "duration", "rate", "fraction", "count" or "bool".
var gateMetrics = map[string]struct {
	kind  string
	value func(r *Result) float64
}{
	"throughput":      {"rate", func(r *Result) float64 { return r.Summary.Throughput }},
	"writeThroughput": {"rate", func(r *Result) float64 { return r.Summary.WriteThroughput }},
	"conflictRate":    {"fraction", func(r *Result) float64 { return r.Summary.ConflictRate }},
	"attemptsP99":     {"count", func(r *Result) float64 { return float64(r.Summary.AttemptsP99) }},
	"gaveUp":          {"count", func(r *Result) float64 { return float64(r.Summary.GaveUp) }},
	"lostUpdates":     {"count", func(r *Result) float64 { return float64(r.Summary.LostUpdates) }},
	"p50":             {"duration", func(r *Result) float64 { return float64(r.Summary.Latency.P50) }},
	"p90":             {"duration", func(r *Result) float64 { return float64(r.Summary.Latency.P90) }},
	"p99":             {"duration", func(r *Result) float64 { return float64(r.Summary.Latency.P99) }},
	"p999":            {"duration", func(r *Result) float64 { return float64(r.Summary.Latency.P999) }},
	"serverMatch": {"bool", func(r *Result) float64 {
		if r.Server != nil && r.Server.Available && r.Server.Match {
			return 1
		}
		return 0
	}},
}

// Threshold is one parsed line of a gate: "p99 < 50ms", "lostUpdates == 0",
// "serverMatch == true", "writeThroughput > 100/s", "p99 <= baseline +10%".
type Threshold struct {
	Text   string  `json:"threshold"`
	Metric string  `json:"metric"`
	Op     string  `json:"op"`
	Value  float64 `json:"value"`
	// Relative thresholds compare with the baseline's median moved by
	// Value (a fraction: 0.1 is +10%).
	Relative bool `json:"relative,omitempty"`
}

var thresholdRE = regexp.MustCompile(`^\s*([A-Za-z0-9]+)\s*(<=|>=|==|!=|<|>)\s*(.+?)\s*$`)
var relativeRE = regexp.MustCompile(`^baseline\s*(?:([+-])\s*([0-9.]+)\s*%)?$`)

// ParseThreshold reads one threshold.
func ParseThreshold(text string) (Threshold, error) {
	m := thresholdRE.FindStringSubmatch(text)
	if m == nil {
		return Threshold{}, fmt.Errorf("threshold %q: write METRIC OP VALUE, e.g. \"p99 < 50ms\" or \"p99 <= baseline +10%%\"", text)
	}
	t := Threshold{Text: strings.TrimSpace(text), Metric: m[1], Op: m[2]}
	if strings.ContainsAny(m[3][:1], "<>=!") {
		return t, fmt.Errorf("threshold %q: %q is not a comparison: use <, <=, >, >=, == or !=", text, m[2]+m[3][:1])
	}
	gm, ok := gateMetrics[t.Metric]
	if !ok {
		return t, fmt.Errorf("threshold %q: metric %q is not known: use %s", text, t.Metric, gateMetricNames())
	}
	if r := relativeRE.FindStringSubmatch(m[3]); r != nil {
		if gm.kind == "bool" {
			return t, fmt.Errorf("threshold %q: %s is true or false, not relative to a baseline", text, t.Metric)
		}
		t.Relative = true
		if r[2] != "" {
			pct, err := strconv.ParseFloat(r[2], 64)
			if err != nil {
				return t, fmt.Errorf("threshold %q: %q is not a percentage", text, r[2])
			}
			t.Value = pct / 100
			if r[1] == "-" {
				t.Value = -t.Value
			}
		}
		return t, nil
	}
	v, err := parseGateValue(gm.kind, m[3])
	if err != nil {
		return t, fmt.Errorf("threshold %q: %w", text, err)
	}
	t.Value = v
	return t, nil
}

func gateMetricNames() string {
	return "throughput, writeThroughput, conflictRate, attemptsP99, gaveUp, lostUpdates, p50, p90, p99, p999, serverMatch"
}

// parseGateValue reads a value of a metric's kind: "50ms", "100/s",
// "0.5" or "50%", "3", "true".
func parseGateValue(kind, s string) (float64, error) {
	switch kind {
	case "duration":
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 50ms", s)
		}
		return float64(d), nil
	case "bool":
		switch s {
		case "true":
			return 1, nil
		case "false":
			return 0, nil
		}
		return 0, fmt.Errorf("%q is not true or false", s)
	case "fraction":
		if p, ok := strings.CutSuffix(s, "%"); ok {
			v, err := strconv.ParseFloat(p, 64)
			return v / 100, err
		}
	case "rate":
		s = strings.TrimSuffix(s, "/s")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

// Gate is a thresholds file.
type Gate struct {
	Thresholds []Threshold
}

// ParseGate reads a thresholds file, strictly:
//
//	apiVersion: kb-bench.io/v1alpha1
//	kind: Gate
//	thresholds:
//	- p99 < 50ms
//	- p99 <= baseline +10%
func ParseGate(source string, data []byte) (*Gate, error) {
	var doc struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Thresholds []string `yaml:"thresholds"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w (a gate is apiVersion, kind and a list of thresholds)", source, err)
	}
	if doc.APIVersion != GateAPIVersion || doc.Kind != KindGate {
		return nil, fmt.Errorf("%s: a gate begins with \"apiVersion: %s\" and \"kind: %s\"", source, GateAPIVersion, KindGate)
	}
	if len(doc.Thresholds) == 0 {
		return nil, fmt.Errorf("%s: no thresholds: list them under thresholds:, e.g. - p99 < 50ms", source)
	}
	g, err := NewGate(doc.Thresholds)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return g, nil
}

// NewGate parses thresholds (a profile's own, or a Gate file's).
func NewGate(lines []string) (*Gate, error) {
	g := &Gate{}
	var errs []error
	for _, text := range lines {
		t, err := ParseThreshold(text)
		if err != nil {
			errs = append(errs, err) // every bad line at once
			continue
		}
		g.Thresholds = append(g.Thresholds, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return g, nil
}

// DefaultGate is the gate used without a thresholds file: against a
// baseline, no significant loss of throughput or rise of p99 beyond 10%,
// and the server cross-check must match.
func DefaultGate(withBaseline bool) *Gate {
	lines := []string{"serverMatch == true"}
	if withBaseline {
		lines = append(lines, "lostUpdates <= baseline", "throughput >= baseline -10%", "p99 <= baseline +10%")
	}
	g, _ := NewGate(lines) // fixed text: cannot fail
	return g
}

// Verdict is one threshold judged: the figures and why.
type Verdict struct {
	Threshold
	Baseline  *float64 `json:"baseline,omitempty"`
	Candidate float64  `json:"candidate"`
	// P is the Mann-Whitney p-value of a relative threshold's difference.
	P      *float64 `json:"p,omitempty"`
	Passed bool     `json:"passed"`
	Why    string   `json:"why"`
}

// Judge evaluates g on the candidate's samples (their median), against
// the baseline's when given (nil: relative thresholds are bad input).
//
// A candidate sample that did not measure what it was asked to (it was
// interrupted, its target stopped answering, or a check could not be
// made) fails the gate whatever the thresholds say: its figures are not
// the run's.
func Judge(g *Gate, baseline, candidate []*Result) ([]Verdict, error) {
	var out []Verdict
	for i, r := range candidate {
		if why := incomplete(r); why != "" {
			out = append(out, Verdict{Threshold: Threshold{Text: "complete run", Metric: "complete", Op: "=="},
				Why: fmt.Sprintf("sample %d (%s) %s: its figures are not the run's", i+1, r.RunID, why)})
		}
	}
	for _, t := range g.Thresholds {
		gm := gateMetrics[t.Metric]
		cand := values(candidate, gm.value)
		v := Verdict{Threshold: t, Candidate: median(cand)}
		limit := t.Value
		if t.Relative {
			if len(baseline) == 0 {
				return nil, fmt.Errorf("threshold %q is relative to a baseline: pass --baseline", t.Text)
			}
			base := values(baseline, gm.value)
			b := median(base)
			v.Baseline = &b
			limit = b * (1 + t.Value)
			p := MannWhitney(base, cand)
			v.P = &p
			v.Passed = compareOp(v.Candidate, t.Op, limit)
			holds := fmt.Sprintf("%s %s %s", formatGate(gm.kind, v.Candidate), t.Op, formatGate(gm.kind, limit))
			switch {
			case v.Passed:
				v.Why = holds + " holds"
			case p > Alpha:
				v.Passed = true
				v.Why = fmt.Sprintf("%s does not hold, but the difference is not significant (p=%.3f, %d vs %d samples)", holds, p, len(base), len(cand))
			default:
				v.Why = fmt.Sprintf("%s does not hold, and the difference is significant (p=%.3f)", holds, p)
			}
		} else {
			v.Passed = compareOp(v.Candidate, t.Op, limit)
			verb := "holds"
			if !v.Passed {
				verb = "does not hold"
			}
			v.Why = fmt.Sprintf("%s %s %s %s", formatGate(gm.kind, v.Candidate), t.Op, formatGate(gm.kind, limit), verb)
		}
		out = append(out, v)
	}
	return out, nil
}

// HeldBy reports whether an absolute threshold holds for the median of
// rs, with the figure it was judged on ("p99 7.2s").
func (t Threshold) HeldBy(rs []*Result) (bool, string) {
	gm := gateMetrics[t.Metric]
	v := median(values(rs, gm.value))
	return compareOp(v, t.Op, t.Value), t.Metric + " " + formatGate(gm.kind, v)
}

// incomplete says why r did not measure what it was asked to; "" when it
// did.
func incomplete(r *Result) string {
	switch {
	case r.Interrupted:
		return "was interrupted"
	case r.TargetLost != "":
		return "lost its target (" + r.TargetLost + ")"
	}
	for _, c := range r.Checks {
		if !c.Passed && c.Lost == 0 {
			return "has a check that could not be made (" + c.Name + ": " + c.Detail + ")"
		}
	}
	return ""
}

func values(rs []*Result, f func(*Result) float64) []float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return v
}

func compareOp(a float64, op string, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "==":
		return a == b
	}
	return a != b
}

func formatGate(kind string, v float64) string {
	switch kind {
	case "duration":
		return FormatDuration(time.Duration(v))
	case "rate":
		return fmt.Sprintf("%.1f/s", v)
	case "fraction":
		return percent(v)
	case "bool":
		return strconv.FormatBool(v == 1)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Passed reports whether every verdict passed.
func Passed(vs []Verdict) bool {
	for _, v := range vs {
		if !v.Passed {
			return false
		}
	}
	return true
}

// GateFormats are the formats WriteVerdicts writes.
var GateFormats = []string{"text", "markdown", "json", "junit"}

// WriteVerdicts writes the verdicts as text, markdown, json or JUnit XML
// (one test case a threshold, a failure for each that does not hold).
func WriteVerdicts(w io.Writer, vs []Verdict, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(vs)
	case "junit":
		return writeJUnit(w, vs)
	}
	rows := [][]string{{"threshold", "baseline", "candidate", "verdict", "why"}}
	for _, v := range vs {
		kind := gateMetrics[v.Metric].kind
		base := "-"
		if v.Baseline != nil {
			base = formatGate(kind, *v.Baseline)
		}
		verdict := "pass"
		if !v.Passed {
			verdict = "FAIL"
		}
		cand := formatGate(kind, v.Candidate)
		if v.Metric == "complete" {
			cand = "no"
		}
		rows = append(rows, []string{v.Text, base, cand, verdict, v.Why})
	}
	if format == "markdown" || format == "text" {
		return writeRows(w, rows, format == "markdown")
	}
	return fmt.Errorf("format %q is not known: use %s", format, strings.Join(GateFormats, ", "))
}

// writeJUnit writes the verdicts as a JUnit XML test suite.
func writeJUnit(w io.Writer, vs []Verdict) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		ClassName string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	suite := testsuite{Name: "kb-bench gate", Tests: len(vs)}
	for _, v := range vs {
		tc := testcase{Name: v.Text, ClassName: "kb-bench.gate", SystemOut: v.Why}
		if !v.Passed {
			suite.Failures++
			tc.Failure = &failure{Message: v.Why, Text: v.Why}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(suite); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
