package text

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/kb-bench/kb-bench/results/analysis"
)

// GateFormats are the formats WriteVerdicts writes.
var GateFormats = []string{"text", "markdown", "json", "junit"}

// WriteVerdicts writes the verdicts as text, markdown, json or JUnit XML
// (one test case a threshold, a failure for each that does not hold).
func WriteVerdicts(w io.Writer, vs []analysis.Verdict, format string) error {
	switch format {
	case "json":
		return writeJSON(w, vs)
	case "junit":
		return writeJUnit(w, vs)
	}
	rows := [][]string{{"threshold", "baseline", "candidate", "verdict", "why"}}
	for _, v := range vs {
		base, cand := verdictFigure(v, v.Baseline, v.Relative), verdictFigure(v, v.Candidate, true)
		if v.Metric == "complete" {
			base, cand = "-", "-"
			if v.Side == "baseline" {
				base = "no"
			} else {
				cand = "no"
			}
		}
		rows = append(rows, []string{v.Text, base, cand, map[bool]string{true: "pass", false: "FAIL"}[v.Passed], v.Why})
	}
	if format == "markdown" || format == "text" {
		return writeRows(w, rows, format == "markdown")
	}
	return fmt.Errorf("format %q is not known: use %s", format, strings.Join(GateFormats, ", "))
}

// verdictFigure is a verdict's median as its row shows it: "-" where
// the threshold has none, "unknown" where it was not measured.
func verdictFigure(v analysis.Verdict, median *float64, wanted bool) string {
	switch {
	case !wanted:
		return "-"
	case median == nil:
		return "unknown"
	}
	return v.Unit.Format(*median)
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJUnit writes the verdicts as a JUnit XML test suite.
func writeJUnit(w io.Writer, vs []analysis.Verdict) error {
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
