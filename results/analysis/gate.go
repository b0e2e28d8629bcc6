package analysis

import (
	"bytes"
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

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// The apiVersion and kind of a thresholds file.
const (
	GateAPIVersion = "kb-bench.io/v1alpha1"
	KindGate       = "Gate"
)

// Unit is what a gate metric measures: it decides how a threshold's value
// is written and which values make sense.
type Unit string

// The units of the gate metrics.
const (
	// UnitDuration is a latency, written "50ms"; a limit is above 0.
	UnitDuration Unit = "duration"
	// UnitRate is per second, written "100/s" (or "100"); 0 or more.
	UnitRate Unit = "rate"
	// UnitPercent is a share, written "50%" (a bare number is refused:
	// 0.5 and 50 would both be plausible); 0% to 100%.
	UnitPercent Unit = "percent"
	// UnitCount is a number of things, written "3"; 0 or more.
	UnitCount Unit = "count"
	// UnitBool is "true" or "false", compared with == or != only.
	UnitBool Unit = "bool"
)

// Threshold is one parsed line of a gate: "p99 < 50ms", "lostUpdates == 0",
// "serverMatch == true", "writeThroughput > 100/s", "p99 <= baseline +10%".
// Its Value is in the metric's Unit, checked for range when parsed:
// nanoseconds for a duration, a fraction (0.5) for a percentage, 1 or 0
// for true or false.
type Threshold struct {
	Text   string  `json:"threshold"`
	Metric string  `json:"metric"`
	Unit   Unit    `json:"unit,omitempty"`
	Op     string  `json:"op"`
	Value  float64 `json:"value"`
	// Relative thresholds compare with the baseline's median moved by
	// Value (a fraction: 0.1 is +10%).
	Relative bool `json:"relative,omitempty"`
}

// maxThresholdLen bounds a threshold's text, far above any real one.
const maxThresholdLen = 200

var thresholdRE = regexp.MustCompile(`^\s*([A-Za-z0-9]+)\s*(<=|>=|==|!=|<|>)\s*(.+?)\s*$`)
var relativeRE = regexp.MustCompile(`^baseline\s*(?:([+-])\s*([0-9.]+)\s*%)?$`)

// ParseThreshold reads one threshold, its value in the metric's unit and
// that unit's range (see the Unit constants); never NaN or infinite.
func ParseThreshold(text string) (Threshold, error) {
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
	gm, ok := figureNamed(t.Metric)
	if !ok {
		return t, fmt.Errorf("threshold %s: metric %s is not known: use throughput, writeThroughput, conflictRate, attemptsP99, gaveUp, lostUpdates, p50, p90, p99, p999, serverMatch", q, shortQuote(t.Metric))
	}
	t.Unit = gm.unit
	if gm.unit == UnitBool && t.Op != "==" && t.Op != "!=" {
		return t, fmt.Errorf("threshold %s: %s is true or false: compare it with == or !=", q, t.Metric)
	}
	if r := relativeRE.FindStringSubmatch(m[3]); r != nil {
		if gm.unit == UnitBool {
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
func parseGateValue(u Unit, s string) (float64, error) {
	q := shortQuote(s)
	switch u {
	case UnitDuration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%s is not a duration such as 50ms", q)
		}
		if d <= 0 {
			return 0, fmt.Errorf("%s: a latency limit is above 0, e.g. 50ms", q)
		}
		return float64(d), nil
	case UnitBool:
		switch s {
		case "true":
			return 1, nil
		case "false":
			return 0, nil
		}
		return 0, fmt.Errorf("%s is not true or false", q)
	case UnitPercent:
		p, ok := strings.CutSuffix(s, "%")
		if !ok {
			return 0, fmt.Errorf("%s: write a rate as a percentage, e.g. 50%% (a bare number could mean 0.5 or 50)", q)
		}
		v, err := number(q, p, 100, "a rate is 0% to 100%")
		return v / 100, err
	case UnitRate:
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

// maxGateErrors is how many bad thresholds NewGate lists; it counts the
// rest.
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

// Verdict is one threshold judged: the figures and why.
type Verdict struct {
	Threshold
	Baseline  *float64 `json:"baseline,omitempty"`
	Candidate float64  `json:"candidate"`
	// P is the p-value of a relative threshold's difference, by Test.
	P *float64 `json:"p,omitempty"`
	// Test is set when P is the signed-rank test's over interleaved pairs
	// (see chooseTest); else P is Mann-Whitney U's.
	Test *Test `json:"test,omitempty"`
	// Noise is the change a relative threshold's samples cannot tell from
	// noise (in the metric's unit): a change within it does not fail.
	Noise *float64 `json:"noise,omitempty"`
	// Untested is set on a relative threshold whose samples are too few
	// for any difference to be significant: the medians alone decided it.
	Untested bool   `json:"untested,omitempty"`
	Passed   bool   `json:"passed"`
	Why      string `json:"why"`
}

// Judge evaluates g on the candidate's samples (their median), against
// the baseline's when given (nil: relative thresholds are bad input).
//
// A relative threshold that does not hold on the medians is decided by
// significant: a gate never passes a regression only because it cannot
// test it.
//
// A candidate sample that did not measure what it was asked to (it was
// interrupted, its target stopped answering, or a check could not be
// made) fails the gate whatever the thresholds say: its figures are not
// the run's.
func Judge(g *Gate, baseline, candidate []*results.Result) ([]Verdict, error) {
	if len(baseline) == 0 {
		if err := g.NeedsBaseline(); err != nil {
			return nil, err
		}
	}
	var out []Verdict
	pairs := InterleavedPairs(baseline, candidate)
	for i, r := range candidate {
		if why := incomplete(r); why != "" {
			out = append(out, Verdict{Threshold: Threshold{Text: "complete run", Metric: "complete", Op: "=="},
				Why: fmt.Sprintf("sample %d (%s) %s: its figures are not the run's", i+1, r.RunID, why)})
		}
	}
	for _, t := range g.Thresholds {
		gm, _ := figureNamed(t.Metric)
		if why := missingIn(gm, t.Relative, baseline, candidate); why != "" {
			out = append(out, Verdict{Threshold: t, Why: why})
			continue
		}
		cand, base := values(candidate, gm.value), values(baseline, gm.value)
		v := Verdict{Threshold: t, Candidate: median(cand)}
		limit := t.Value
		if t.Relative {
			b := median(base)
			v.Baseline = &b
			limit = b * (1 + t.Value)
		}
		v.Passed = compareOp(v.Candidate, t.Op, limit)
		holds := fmt.Sprintf("%s %s %s", gm.unit.Format(v.Candidate), t.Op, gm.unit.Format(limit))
		v.Why = holds + map[bool]string{true: " holds", false: " does not hold"}[v.Passed]
		if t.Relative {
			d := significant(base, cand, pairs)
			v.P, v.Untested, v.Noise = &d.p, !d.tested, &d.noise
			if d.test.Pairs > 0 {
				v.Test = &d.test
			}
			switch {
			case v.Passed && d.tested:
			case v.Passed:
				v.Why = fmt.Sprintf("%s holds (not tested for significance: %d vs %d samples)", holds, len(base), len(cand))
			case !d.tested:
				v.Why = fmt.Sprintf("%s does not hold; NOT tested for significance, so the medians alone decide: %s", holds, tooFew(len(base), len(cand)))
			case d.p > Alpha:
				v.Passed = true
				v.Why = fmt.Sprintf("%s does not hold, but the difference is not significant (p=%.3f, %s)", holds, d.p, d.sampleWords(len(base), len(cand)))
			case !d.fails:
				v.Passed = true
				v.Why = fmt.Sprintf("%s does not hold and p=%.3f%s, but the change is within the noise of the samples", holds, d.p, d.testWords())
			default:
				v.Why = fmt.Sprintf("%s does not hold, and the difference is significant (p=%.3f%s) and beyond the noise of the samples", holds, d.p, d.testWords())
			}
			if d.tested {
				v.Why += "; " + noiseWords(gm.unit, d, base, cand)
			}
		}
		v.Why += percentileNote(gm.percentile, t.Relative, baseline, candidate)
		out = append(out, v)
	}
	return out, nil
}

// missingIn says which sample does not hold the figure gm reads, and
// why ("" when all do): the candidate's, and the baseline's for a
// relative threshold.
func missingIn(gm figure, relative bool, baseline, candidate []*results.Result) string {
	if gm.missing == nil {
		return ""
	}
	check := func(side string, rs []*results.Result) string {
		for i, r := range rs {
			if why := gm.missing(r); why != "" {
				return fmt.Sprintf("%s sample %d (%s) %s: the threshold cannot be judged", side, i+1, r.RunID, why)
			}
		}
		return ""
	}
	if why := check("candidate", candidate); why != "" || !relative {
		return why
	}
	return check("baseline", baseline)
}

// decision is the statistical decision of a relative threshold that does
// not hold on the medians.
type decision struct {
	// fails: the threshold fails.
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
// not hold on the medians: it fails when the baseline's and the
// candidate's samples differ significantly (p <= Alpha) and their medians
// differ by more than the noise of the samples, so that a shift the
// spread of the samples could make, on a noisy machine, does not fail a
// gate by chance. Samples that ran as interleaved pairs (pairs, see
// InterleavedPairs), enough of them, are tested pair by pair (the
// signed-rank test, the noise from the spread of the pairs' differences:
// a moment the machine slowed both of a pair down does not hide a
// change); others as two samples (Mann-Whitney U, the noise from the
// sides' spreads: medianNoise). When the samples are too few for any
// difference to be significant (the smallest p their sizes can give is
// above Alpha) the medians alone decide: the threshold fails, untested.
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
// test (", Wilcoxon signed-rank test over 8 interleaved pairs"); a p-value a
// verdict does not name the test of is Mann-Whitney U's.
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
// differences (candidate less baseline), from their interquartile range
// as medianNoise reads a side's: what the differences of identical pairs
// typically come to.
func pairedNoise(p *Pairs, base, cand []float64) float64 {
	d := make([]float64, p.Len())
	for i := range d {
		d[i] = cand[p.Cand[i]] - base[p.Base[i]]
	}
	return 1.2533 * iqr(d) / 1.349 / math.Sqrt(float64(len(d)))
}

// medianNoise is the standard error of the difference of two samples'
// medians, from the spread within them: each side's interquartile range
// (by nearest rank; with 5 samples the 4th smallest less the 2nd), their
// mean as the spread of one sample (IQR/1.349 is a normal spread's
// standard deviation), and a median's standard error, 1.2533 sd/sqrt(n).
// It is what the medians of identical runs of these sizes (an A/A pair)
// typically differ by.
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
func noiseWords(u Unit, d decision, base, cand []float64) string {
	size := u.Format(d.noise)
	if mb := median(base); mb != 0 && d.noise > 0 {
		size = fmt.Sprintf("%.1f%%", 100*d.noise/math.Abs(mb))
	}
	side := fmt.Sprintf("%d samples a side", len(base))
	switch {
	case d.test.Pairs > 0:
		side = results.Plural(d.test.Pairs, "interleaved pair")
	case len(base) != len(cand):
		side = fmt.Sprintf("%d and %d samples", len(base), len(cand))
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

// tooFew says why n1 against n2 samples cannot be tested, and how many
// can.
func tooFew(n1, n2 int) string {
	_, need := Testable(n1, n2)
	return fmt.Sprintf("%d vs %d samples can never show a significant difference (the smallest p-value they can give is %.3f > %g); run both sides with --count %d or more",
		n1, n2, minP(n1, n2), Alpha, need)
}

// HeldBy reports whether an absolute threshold holds for the median of
// rs, with the figure it was judged on ("p99 7.2s").
func (t Threshold) HeldBy(rs []*results.Result) (bool, string) {
	gm, _ := figureNamed(t.Metric)
	v := median(values(rs, gm.value))
	return compareOp(v, t.Op, t.Value), t.Metric + " " + gm.unit.Format(v)
}

// incomplete says why r did not measure what it was asked to; "" when it
// did.
func incomplete(r *results.Result) string {
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

// Format writes a value of the unit as a threshold or a verdict shows it:
// "50ms", "100.0/s", "12.3%", "true", "3".
func (u Unit) Format(v float64) string {
	switch u {
	case UnitDuration:
		return results.FormatDuration(time.Duration(v))
	case UnitRate:
		return fmt.Sprintf("%.1f/s", v)
	case UnitPercent:
		return results.Percent(v)
	case UnitBool:
		return strconv.FormatBool(v == 1)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Passed reports whether every verdict passed.
func Passed(vs []Verdict) bool {
	return !slices.ContainsFunc(vs, func(v Verdict) bool { return !v.Passed })
}
