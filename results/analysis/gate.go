package analysis

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// The apiVersion and kind of a thresholds file.
const (
	GateAPIVersion = "kb-bench.io/v1alpha1"
	KindGate       = "Gate"
)

// Threshold is one parsed line of a gate: "p99 < 50ms", "serverMatch ==
// true", "p99 <= baseline +10%". Its Value is in the metric's Unit.
type Threshold struct {
	Text   string       `json:"threshold"`
	Metric string       `json:"metric"`
	Unit   results.Unit `json:"unit,omitempty"`
	Op     string       `json:"op"`
	Value  float64      `json:"value"`
	// Relative thresholds compare with the baseline's median moved by
	// Value (a fraction: 0.1 is +10%).
	Relative bool `json:"relative,omitempty"`
}

// maxThresholdLen bounds a threshold's text, far above any real one.
const maxThresholdLen = 200

var thresholdRE = regexp.MustCompile(`^\s*([A-Za-z0-9]+(?:\{[^{}]*\})?)\s*(<=|>=|==|!=|<|>)\s*(.+?)\s*$`)
var relativeRE = regexp.MustCompile(`^baseline\s*(?:([+-])\s*([0-9.]+)\s*%)?$`)

// figureKeyRE is what a scenario figure's Key looks like.
var figureKeyRE = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*(\{.*\})?$`)

// ParseThreshold reads one threshold, its value in the metric's unit and
// that unit's range (see the Unit constants); never NaN or infinite. A
// metric that is not built in names a scenario's figure by its Key
// (failoverTime{quantile="0.5"}): its unit is the samples', so Judge
// reads its value (Unit is "" until then).
func ParseThreshold(text string) (Threshold, error) { return parseThreshold(text, nil) }

// parseThreshold is ParseThreshold knowing the samples rs, whose figures
// the metric may name (nil: not known yet).
func parseThreshold(text string, rs []*results.Result) (Threshold, error) {
	q := shortQuote(text)
	if len(text) > maxThresholdLen {
		return Threshold{}, fmt.Errorf("threshold %s is %d bytes long: a threshold is one short line such as \"p99 < 50ms\"", q, len(text))
	}
	m := thresholdRE.FindStringSubmatch(text)
	if m == nil {
		return Threshold{}, fmt.Errorf("threshold %s: write METRIC OP VALUE, e.g. \"p99 < 50ms\" or \"p99 <= baseline +10%%\"", q)
	}
	t := Threshold{Text: strings.TrimSpace(text), Metric: m[1], Op: m[2]}
	if strings.ContainsAny(m[3][:1], "<>=!") {
		return t, fmt.Errorf("threshold %s: %q is not a comparison: use <, <=, >, >=, == or !=", q, m[2]+m[3][:1])
	}
	gm, ok := figureNamed(t.Metric, rs)
	switch {
	case !ok && !figureKeyRE.MatchString(t.Metric):
		return t, fmt.Errorf("threshold %s: metric %s is not known: use %s, or a scenario's figure (name{label=\"value\"})", q, shortQuote(t.Metric), strings.Join(MetricNames(), ", "))
	case !ok && rs != nil:
		var held []string
		for _, m := range metricsOf(rs)[len(figures):] {
			held = append(held, m.metric)
		}
		return t, fmt.Errorf("threshold %s: metric %s is not known: no sample holds a figure of that name; the built-in metrics are %s; the samples' figures are %s",
			q, shortQuote(t.Metric), strings.Join(MetricNames(), ", "), cmp.Or(strings.Join(held, ", "), "none"))
	case !ok:
		gm.unit = "" // a scenario's figure: its value is read when judged
	}
	t.Unit = gm.unit
	if gm.unit == results.UnitBool && t.Op != "==" && t.Op != "!=" {
		return t, fmt.Errorf("threshold %s: %s is true or false: compare it with == or !=", q, t.Metric)
	}
	if r := relativeRE.FindStringSubmatch(m[3]); r != nil {
		if gm.unit == results.UnitBool {
			return t, fmt.Errorf("threshold %s: %s is true or false, not relative to a baseline", q, t.Metric)
		}
		t.Relative = true
		if r[2] != "" {
			pct, err := strconv.ParseFloat(r[2], 64)
			if err != nil || math.IsInf(pct, 0) {
				return t, fmt.Errorf("threshold %s: %s is not a percentage", q, shortQuote(r[2]))
			}
			if r[1] == "-" {
				if pct >= 100 {
					return t, fmt.Errorf("threshold %s: baseline -%s%% is zero or less: move the baseline by less than 100%%", q, r[2])
				}
				pct = -pct
			}
			t.Value = pct / 100
		}
		return t, nil
	}
	if t.Unit == "" { // read when judged, in the figure's unit: one of them
		if !slices.ContainsFunc(results.Units, func(u results.Unit) bool { _, err := parseGateValue(u, m[3]); return err == nil }) {
			return t, fmt.Errorf("threshold %s: %s is not a value such as 50ms, 100/s, 50%%, 3 or true", q, shortQuote(m[3]))
		}
		return t, nil
	}
	v, err := parseGateValue(gm.unit, m[3])
	if err != nil {
		return t, fmt.Errorf("threshold %s: %w", q, err)
	}
	t.Value = v
	return t, nil
}

// shortQuote quotes s for a message, cut short when long: an error about
// a huge line need not repeat it.
func shortQuote(s string) string {
	const most = 80
	n := 0
	for i := range s {
		if n == most {
			return strconv.Quote(s[:i]) + fmt.Sprintf(" (and %d more bytes)", len(s)-i)
		}
		n++
	}
	return strconv.Quote(s)
}

// parseGateValue reads a value of a unit, in its range: "50ms", "100/s",
// "50%", "3", "true".
func parseGateValue(u results.Unit, s string) (float64, error) {
	q := shortQuote(s)
	switch u {
	case results.UnitDuration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%s is not a duration such as 50ms", q)
		}
		if d <= 0 {
			return 0, fmt.Errorf("%s: a latency limit is above 0, e.g. 50ms", q)
		}
		return float64(d), nil
	case results.UnitBool:
		if v, ok := map[string]float64{"true": 1, "false": 0}[s]; ok {
			return v, nil
		}
		return 0, fmt.Errorf("%s is not true or false", q)
	case results.UnitPercent:
		p, ok := strings.CutSuffix(s, "%")
		if !ok {
			return 0, fmt.Errorf("%s: write a rate as a percentage, e.g. 50%% (a bare number could mean 0.5 or 50)", q)
		}
		v, err := number(q, p, 100, "a rate is 0% to 100%")
		return v / 100, err
	case results.UnitRate:
		return number(q, strings.TrimSuffix(s, "/s"), math.MaxFloat64, "a throughput is 0/s or more")
	}
	return number(q, s, math.MaxFloat64, "a count is 0 or more")
}

// number reads s, the number of the value q, as a finite number from 0 to
// most; outside says what the range is.
func number(q, s string, most float64, outside string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s is not a number", shortQuote(s))
	}
	if v < 0 || v > most {
		return 0, fmt.Errorf("%s: %s", q, outside)
	}
	return v, nil
}

// Gate is a thresholds file.
type Gate struct {
	Thresholds []Threshold
}

// ParseGate reads a thresholds file, strictly (one document, no unknown
// field):
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
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: holds more than one document (after ---): a gate is one document; put every threshold in its list", source)
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

// maxGateErrors is how many bad thresholds NewGate lists; it counts the rest.
const maxGateErrors = 10

// NewGate parses thresholds (a profile's own, or a Gate file's), listing
// the bad ones at once (the first few, and how many more).
func NewGate(lines []string) (*Gate, error) {
	g := &Gate{}
	var errs []error
	for _, text := range lines {
		t, err := ParseThreshold(text)
		if err != nil {
			errs = append(errs, err)
		}
		g.Thresholds = append(g.Thresholds, t)
	}
	if len(errs) > maxGateErrors {
		errs = append(errs[:maxGateErrors], fmt.Errorf("and %d more bad thresholds", len(errs)-maxGateErrors))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return g, nil
}

// NeedsBaseline says, when g holds a threshold relative to a baseline,
// which one and that a baseline must be given; nil when none is.
func (g *Gate) NeedsBaseline() error {
	if i := slices.IndexFunc(g.Thresholds, func(t Threshold) bool { return t.Relative }); i >= 0 {
		return fmt.Errorf("threshold %q is relative to a baseline: pass --baseline (the result, or directory of samples, to compare with)", g.Thresholds[i].Text)
	}
	return nil
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

// Shape is what a threshold asks of the candidate, which decides who
// carries the burden of proof when the samples are noisy.
type Shape string

// The shapes of a threshold.
const (
	// ShapeAbsolute is a threshold on a value ("p99 < 50ms"): the
	// candidate's median decides, with no test.
	ShapeAbsolute Shape = "absolute"
	// ShapeGuard is a relative threshold that the baseline itself meets
	// ("lostUpdates <= baseline", "p99 <= baseline +10%", ==): it guards
	// against a regression, and the candidate has the benefit of the
	// doubt: it fails only when the difference is significant.
	ShapeGuard Shape = "guard"
	// ShapeChange is a relative threshold that asks the candidate to move
	// away from the baseline ("throughput > baseline", "p50 <= baseline
	// -50%", !=). An A/A pair's medians meet it by chance half the time,
	// so the burden of proof is on the candidate: it passes only when the
	// medians meet it and the difference is significant.
	ShapeChange Shape = "change"
)

// Shape says what t asks of the candidate (see the Shape constants).
func (t Threshold) Shape() Shape {
	switch {
	case !t.Relative:
		return ShapeAbsolute
	case t.Op == "!=",
		t.Op == ">" && t.Value >= 0, t.Op == ">=" && t.Value > 0,
		t.Op == "<" && t.Value <= 0, t.Op == "<=" && t.Value < 0:
		return ShapeChange
	}
	return ShapeGuard
}

// burdenWords say, in a verdict, who carries the burden of proof of a
// threshold of gm's: "asks for an improvement (passes only when it is
// significant)".
func burdenWords(t Threshold, gm figure) string {
	switch t.Shape() {
	case ShapeAbsolute:
		return "absolute (the candidate's median decides)"
	case ShapeGuard:
		return "guards against a regression (fails only when it is significant)"
	}
	change := "a change"
	if t.Op != "!=" {
		higher := t.Op == ">" || t.Op == ">="
		change = map[bool]string{true: "a rise", false: "a fall"}[higher]
		if gm.better != "" && higher == (gm.better == results.BetterHigher) {
			change = "an improvement"
		}
	}
	return "asks for " + change + " (passes only when it is significant)"
}

// Verdict is one threshold judged: the figures and why.
type Verdict struct {
	Threshold
	// Shape says who carries the burden of proof (see the Shape constants).
	Shape Shape `json:"shape,omitempty"`
	// Baseline and Candidate are the medians of the complete samples of
	// each side; nil where not measured or, for Baseline, an absolute
	// threshold.
	Baseline  *float64 `json:"baseline,omitempty"`
	Candidate *float64 `json:"candidate,omitempty"`
	// P is the p-value of a relative threshold's difference, by Test.
	P *float64 `json:"p,omitempty"`
	// Test is set when P is the signed-rank test's over interleaved pairs
	// (see chooseTest); else P is Mann-Whitney U's.
	Test *Test `json:"test,omitempty"`
	// Noise is the change a relative threshold's samples cannot tell from
	// noise (in the metric's unit): a change within it is not significant.
	Noise *float64 `json:"noise,omitempty"`
	// Untested is set on a relative threshold whose samples are too few
	// for any difference to be significant: the medians alone decided it
	// (a guard), or it failed (a threshold asking for a change).
	Untested bool `json:"untested,omitempty"`
	// Side is, for the completeness verdicts (Metric "complete"), the side
	// whose samples they are about: "baseline" or "candidate".
	Side   string `json:"side,omitempty"`
	Passed bool   `json:"passed"`
	Why    string `json:"why"`
}

// Judge evaluates g on the candidate's samples (their median), against
// the baseline's when given (nil: relative thresholds are bad input).
// Who carries the burden of proof depends on the threshold's Shape; a
// guard whose samples are too few to test is decided by the medians (a
// gate never passes a regression only because it cannot test it).
//
// A sample that did not measure what it was asked to (it was
// interrupted, its target stopped answering, a check could not be made,
// or it measured no operation) is left out of the medians and tests on
// either side, and named: on the candidate's side it fails the gate
// whatever the thresholds say (its figures are not the run's); on the
// baseline's, the verdicts say they judged fewer samples.
func Judge(g *Gate, baseline, candidate []*results.Result) ([]Verdict, error) {
	if len(baseline) == 0 {
		if err := g.NeedsBaseline(); err != nil {
			return nil, err
		}
	}
	if err := sameRun("the baseline", baseline, "the candidate", candidate); err != nil {
		return nil, err
	}
	var out []Verdict
	cand, candLeft := completeOnly(candidate)
	base, baseLeft := completeOnly(baseline)
	// Interleaved pairs of complete samples only: a pair that lost a
	// sample is no pair (see InterleavedPairs).
	pairs := InterleavedPairs(base, cand)
	for _, l := range candLeft {
		out = append(out, Verdict{Threshold: Threshold{Text: "complete run", Metric: "complete", Op: "=="}, Side: "candidate",
			Why: fmt.Sprintf("candidate %s: its figures are not the run's, and are left out of the medians", l)})
	}
	for _, l := range baseLeft {
		out = append(out, Verdict{Threshold: Threshold{Text: "complete baseline", Metric: "complete", Op: "=="}, Side: "baseline", Passed: true,
			Why: fmt.Sprintf("baseline %s: left out of the medians and tests, so the relative thresholds judge %d of %d baseline samples", l, len(base), len(baseline))})
	}
	fewer := ""
	if len(candLeft) > 0 {
		fewer = fmt.Sprintf("; judged on %d of %d candidate samples (the incomplete left out)", len(cand), len(candidate))
	}
	for _, t := range g.Thresholds {
		if t.Unit == "" { // a scenario's figure, read in the samples' unit
			var err error
			if t, err = parseThreshold(t.Text, slices.Concat(candidate, baseline)); err != nil {
				out = append(out, Verdict{Threshold: t, Shape: t.Shape(), Why: err.Error()})
				continue
			}
		}
		gm, _ := figureNamed(t.Metric, candidate, baseline)
		v := Verdict{Threshold: t, Shape: t.Shape()}
		words := burdenWords(t, gm)
		if why := missingIn(gm, t.Relative, base, cand, baseline, candidate); why != "" {
			v.Candidate, v.Baseline = medianOf(gm, cand), medianOf(gm, base)
			if !t.Relative {
				v.Baseline = nil
			}
			v.Why = why + "; " + words + fewer
			out = append(out, v)
			continue
		}
		cv, bv := values(cand, gm.value), values(base, gm.value)
		v.Candidate = new(median(cv))
		limit := t.Value
		if t.Relative {
			b := median(bv)
			v.Baseline = &b
			limit = b * (1 + t.Value)
		}
		held := compareOp(*v.Candidate, t.Op, limit)
		holds := fmt.Sprintf("%s %s %s", gm.unit.Format(*v.Candidate), t.Op, gm.unit.Format(limit))
		v.Passed = held
		v.Why = holds + map[bool]string{true: " holds", false: " does not hold"}[held]
		if t.Relative {
			d := significant(bv, cv, pairs)
			v.P, v.Untested, v.Noise = &d.p, !d.tested, &d.noise
			if d.test.Pairs > 0 {
				v.Test = &d.test
			}
			if v.Shape == ShapeChange {
				v.Passed, v.Why = judgeChange(held, holds, d, len(bv), len(cv))
			} else {
				v.Passed, v.Why = judgeGuard(held, holds, d, len(bv), len(cv))
			}
			if d.tested {
				v.Why += "; " + noiseWords(gm.unit, d, bv, cv)
			}
			if len(baseLeft) > 0 {
				v.Why += fmt.Sprintf("; judged on %d of %d baseline samples (the incomplete left out)", len(base), len(baseline))
			}
		}
		v.Why = words + ": " + v.Why + fewer + percentileNote(gm.percentile, t.Relative, base, cand)
		out = append(out, v)
	}
	return out, nil
}

// judgeGuard decides a guard against regression (ShapeGuard) from
// whether it held on the medians and the decision d.
func judgeGuard(held bool, holds string, d decision, nb, nc int) (bool, string) {
	switch {
	case held && d.tested:
		return true, holds + " holds"
	case held:
		return true, fmt.Sprintf("%s holds (not tested for significance: %d vs %d samples)", holds, nb, nc)
	case !d.tested:
		return false, fmt.Sprintf("%s does not hold; NOT tested for significance, so the medians alone decide: %s", holds, tooFew(nb, nc))
	case d.p > Alpha:
		return true, fmt.Sprintf("%s does not hold, but the difference is not significant (p=%.3f, %s)", holds, d.p, d.sampleWords(nb, nc))
	case !d.fails:
		return true, fmt.Sprintf("%s does not hold and p=%.3f%s, but the change is within the noise of the samples", holds, d.p, d.testWords())
	}
	return false, fmt.Sprintf("%s does not hold, and the difference is significant (p=%.3f%s) and beyond the noise of the samples", holds, d.p, d.testWords())
}

// judgeChange decides a threshold that asks for a change (ShapeChange).
func judgeChange(held bool, holds string, d decision, nb, nc int) (bool, string) {
	switch {
	case !held:
		return false, holds + " does not hold"
	case !d.tested:
		return false, fmt.Sprintf("%s holds on the medians, but NOT tested for significance, so the change is not shown: %s", holds, tooFew(nb, nc))
	case d.p > Alpha:
		return false, fmt.Sprintf("%s holds on the medians, but the difference is not significant (p=%.3f, %s): an A/A pair does as much by chance", holds, d.p, d.sampleWords(nb, nc))
	case !d.fails:
		return false, fmt.Sprintf("%s holds on the medians and p=%.3f%s, but the change is within the noise of the samples", holds, d.p, d.testWords())
	}
	return true, fmt.Sprintf("%s holds, and the difference is significant (p=%.3f%s) and beyond the noise of the samples", holds, d.p, d.testWords())
}

// medianOf is the median of the figure gm reads over rs, nil when rs is
// empty or a sample does not hold it.
func medianOf(gm figure, rs []*results.Result) *float64 {
	if len(rs) == 0 || gm.missing != nil && slices.ContainsFunc(rs, func(r *results.Result) bool { return gm.missing(r) != "" }) {
		return nil
	}
	return new(median(values(rs, gm.value)))
}

// completeOnly is the samples of rs that measured what they were asked
// to, and, naming each, those that did not (see incomplete).
func completeOnly(rs []*results.Result) (kept []*results.Result, left []string) {
	for i, r := range rs {
		if why := incomplete(r); why != "" {
			left = append(left, fmt.Sprintf("sample %d (%s) %s", i+1, r.RunID, why))
			continue
		}
		kept = append(kept, r)
	}
	return kept, left
}

// missingIn says which sample does not hold the figure gm reads, and why
// ("" when all do): the candidate's, and the baseline's for a relative
// threshold; of each side's complete samples, or all of them when it has
// none, so that a figure not measured is said to be so.
func missingIn(gm figure, relative bool, base, cand, baseline, candidate []*results.Result) string {
	check := func(side string, kept, all []*results.Result) string {
		rs := kept
		if len(kept) == 0 {
			rs = all
		}
		for _, r := range rs {
			if gm.missing == nil {
				break
			}
			if why := gm.missing(r); why != "" {
				return fmt.Sprintf("%s sample %s %s: %s was not measured, so the threshold cannot be judged", side, cmp.Or(r.RunID, "?"), why, gm.metric)
			}
		}
		if len(kept) == 0 {
			return "no " + side + " sample is complete: the threshold cannot be judged"
		}
		return ""
	}
	if why := check("candidate", cand, candidate); why != "" || !relative {
		return why
	}
	return check("baseline", base, baseline)
}

// decision is the statistical decision of a relative threshold.
type decision struct {
	fails bool
	// p is test's p-value; tested is false when the samples are too few
	// for any p to reach Alpha.
	p      float64
	test   Test
	tested bool
	// noise is how far apart the medians of two identical runs of these
	// sizes typically fall, in the metric's unit (see medianNoise).
	noise float64
}

// significant is the one place that decides a relative threshold that does
// not hold on the medians: it fails when the samples differ significantly
// (p <= Alpha) and their medians by more than the noise of the samples, so
// that a shift the spread of the samples could make, on a noisy machine,
// does not fail a gate by chance. Interleaved pairs are tested pair by
// pair, their noise from the pairs' differences: a moment the machine
// slowed both of a pair down does not hide a change. Samples too few for
// any difference to be significant fail, untested.
func significant(base, cand []float64, pairs *Pairs) decision {
	d := decision{test: chooseTest(pairs)}
	d.p = d.test.pValue(pairs, base, cand)
	if ok, _ := Testable(len(base), len(cand)); !ok {
		d.fails = true
		return d
	}
	d.tested = true
	d.noise = medianNoise(base, cand)
	if d.test.Pairs > 0 {
		d.noise = pairedNoise(pairs, base, cand)
	}
	d.fails = d.p <= Alpha && math.Abs(median(cand)-median(base)) > d.noise
	return d
}

// testWords names the test after a p-value when it is the signed-rank
// test; a p-value a verdict names no test of is Mann-Whitney U's.
func (d decision) testWords() string {
	if d.test.Pairs > 0 {
		return ", " + d.test.String()
	}
	return ""
}

// sampleWords are the samples d judged: "5 vs 5 samples", "Wilcoxon
// signed-rank test over 8 interleaved pairs".
func (d decision) sampleWords(nBase, nCand int) string {
	if d.test.Pairs > 0 {
		return d.test.String()
	}
	return fmt.Sprintf("%d vs %d samples", nBase, nCand)
}

// pairedNoise is the standard error of the median of the pairs'
// differences, read as medianNoise reads a side's.
func pairedNoise(p *Pairs, base, cand []float64) float64 {
	d := make([]float64, p.Len())
	for i := range d {
		d[i] = cand[p.Cand[i]] - base[p.Base[i]]
	}
	return 1.2533 * iqr(d) / 1.349 / math.Sqrt(float64(len(d)))
}

// medianNoise is the standard error of the difference of two samples'
// medians, from each side's interquartile range (IQR/1.349 is a normal
// spread's standard deviation; a median's standard error is 1.2533
// sd/sqrt(n)): what the medians of an A/A pair typically differ by.
func medianNoise(a, b []float64) float64 {
	sd := (iqr(a) + iqr(b)) / 2 / 1.349
	return 1.2533 * sd * math.Sqrt(1/float64(len(a))+1/float64(len(b)))
}

// iqr is the interquartile range of v, its quartiles by nearest rank as
// every percentile kb-bench reports.
func iqr(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := int64(len(s))
	return s[metrics.Rank(0.75, n)-1] - s[metrics.Rank(0.25, n)-1]
}

// noiseWords says the change d's samples cannot tell from noise, as a
// share of the baseline's median when it is not 0: "with 5 samples a
// side, changes under 6.1% cannot be told from noise here".
func noiseWords(u results.Unit, d decision, base, cand []float64) string {
	side := fmt.Sprintf("%d samples a side", len(base))
	switch {
	case d.test.Pairs > 0:
		side = words.Plural(d.test.Pairs, "interleaved pair")
	case len(base) != len(cand):
		side = fmt.Sprintf("%d and %d samples", len(base), len(cand))
	}
	if d.noise == 0 { // "changes under 0" says nothing
		return fmt.Sprintf("with %s, the samples showed no noise to tell a change from", side)
	}
	size := u.Format(d.noise)
	if mb := median(base); mb != 0 && d.noise > 0 {
		size = fmt.Sprintf("%.1f%%", 100*d.noise/math.Abs(mb))
	}
	return fmt.Sprintf("with %s, changes under %s cannot be told from noise here", side, size)
}

// Testable reports whether n1 samples against n2 can ever show a
// significant difference; when not, need is the count of samples a side
// that can.
func Testable(n1, n2 int) (ok bool, need int) {
	if minP(n1, n2) <= Alpha {
		return true, 0
	}
	for need = 2; minP(max(n1, need), max(n2, need)) > Alpha; need++ {
	}
	return false, need
}

// tooFew says why n1 against n2 samples cannot be tested, and how many can.
func tooFew(n1, n2 int) string {
	_, need := Testable(n1, n2)
	return fmt.Sprintf("%d vs %d samples can never show a significant difference (the smallest p-value they can give is %.3f > %g); run both sides with --count %d or more",
		n1, n2, minP(n1, n2), Alpha, need)
}

// HeldBy reports whether an absolute threshold holds for the median of
// rs, with the figure it was judged on ("p99 7.2s").
func (t Threshold) HeldBy(rs []*results.Result) (bool, string) {
	if t.Unit == "" { // a scenario's figure, read in the samples' unit
		var err error
		if t, err = parseThreshold(t.Text, rs); err != nil {
			return false, t.Metric + " not measured"
		}
	}
	gm, _ := figureNamed(t.Metric, rs)
	if why := missingIn(gm, false, nil, rs, nil, rs); why != "" {
		return false, t.Metric + " not measured"
	}
	v := median(values(rs, gm.value))
	return compareOp(v, t.Op, t.Value), t.Metric + " " + gm.unit.Format(v)
}

// incomplete says why r did not measure what it was asked to; "" when it did.
func incomplete(r *results.Result) string {
	switch {
	case r.Interrupted:
		return "was interrupted"
	case r.TargetLost != "":
		return "lost its target (" + r.TargetLost + ")"
	}
	for _, c := range r.Checks {
		if !c.Made() {
			return "has a check that could not be made (" + c.Name + ": " + c.Detail + ")"
		}
	}
	if r.Summary.Ops == 0 {
		return "measured no operation"
	}
	return ""
}

func values(rs []*results.Result, f func(*results.Result) float64) []float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return v
}

func compareOp(a float64, op string, b float64) bool {
	return map[string]bool{"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]
}

// Passed reports whether every verdict passed.
func Passed(vs []Verdict) bool {
	return !slices.ContainsFunc(vs, func(v Verdict) bool { return !v.Passed })
}
