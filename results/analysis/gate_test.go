package analysis_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		text    string
		want    analysis.Threshold
		wantErr string
	}{
		{"p99 < 50ms", analysis.Threshold{Metric: "p99", Unit: results.UnitDuration, Op: "<", Value: float64(50 * time.Millisecond)}, ""},
		{"writeThroughput > 100/s", analysis.Threshold{Metric: "writeThroughput", Unit: results.UnitRate, Op: ">", Value: 100}, ""},
		{"throughput >= 0", analysis.Threshold{Metric: "throughput", Unit: results.UnitRate, Op: ">=", Value: 0}, ""},
		{"conflictRate < 50%", analysis.Threshold{Metric: "conflictRate", Unit: results.UnitPercent, Op: "<", Value: 0.5}, ""},
		{"conflictRate <= 100%", analysis.Threshold{Metric: "conflictRate", Unit: results.UnitPercent, Op: "<=", Value: 1}, ""},
		{"lostUpdates == 0", analysis.Threshold{Metric: "lostUpdates", Unit: results.UnitCount, Op: "==", Value: 0}, ""},
		{"serverMatch == true", analysis.Threshold{Metric: "serverMatch", Unit: results.UnitBool, Op: "==", Value: 1}, ""},
		{"serverMatch != false", analysis.Threshold{Metric: "serverMatch", Unit: results.UnitBool, Op: "!=", Value: 0}, ""},
		{"p99 <= baseline +10%", analysis.Threshold{Metric: "p99", Unit: results.UnitDuration, Op: "<=", Value: 0.1, Relative: true}, ""},
		{"throughput >= baseline -5%", analysis.Threshold{Metric: "throughput", Unit: results.UnitRate, Op: ">=", Value: -0.05, Relative: true}, ""},
		{"lostUpdates <= baseline", analysis.Threshold{Metric: "lostUpdates", Unit: results.UnitCount, Op: "<=", Relative: true}, ""},
		{"Latency < 5ms", analysis.Threshold{}, `metric "Latency" is not known`},
		// A scenario's figure: its unit, and so its value, is the samples'.
		{`failoverTime{quantile="0.5"} < 5s`, analysis.Threshold{Metric: `failoverTime{quantile="0.5"}`, Op: "<"}, ""},
		{"rejected <= baseline +10%", analysis.Threshold{Metric: "rejected", Op: "<=", Value: 0.1, Relative: true}, ""},
		{"rejected < lots", analysis.Threshold{}, `"lots" is not a value such as 50ms`},
		{"p99 < fast", analysis.Threshold{}, `"fast" is not a duration`},
		{"serverMatch == baseline", analysis.Threshold{}, "true or false, not relative"},
		{"p99 about 5ms", analysis.Threshold{}, "write METRIC OP VALUE"},
		// Nonsense is refused, in the metric's own unit and range.
		{"conflictRate < NaN%", analysis.Threshold{}, `"NaN" is not a number`},
		{"conflictRate < Inf%", analysis.Threshold{}, `"Inf" is not a number`},
		{"conflictRate < 50", analysis.Threshold{}, "write a rate as a percentage, e.g. 50%"},
		{"conflictRate < 0.5", analysis.Threshold{}, "write a rate as a percentage"},
		{"conflictRate < 150%", analysis.Threshold{}, "a rate is 0% to 100%"},
		{"conflictRate > -1%", analysis.Threshold{}, "a rate is 0% to 100%"},
		{"p99 < -1ms", analysis.Threshold{}, "a latency limit is above 0"},
		{"p99 < 0s", analysis.Threshold{}, "a latency limit is above 0"},
		{"p99 < 9999999999h", analysis.Threshold{}, "is not a duration"},
		{"serverMatch < true", analysis.Threshold{}, "compare it with == or !="},
		{"serverMatch >= false", analysis.Threshold{}, "compare it with == or !="},
		{"throughput > -1/s", analysis.Threshold{}, "a throughput is 0/s or more"},
		{"throughput > Infinity", analysis.Threshold{}, "is not a number"},
		{"throughput > 1e999", analysis.Threshold{}, "is not a number"},
		{"lostUpdates < -1", analysis.Threshold{}, "a count is 0 or more"},
		{"lostUpdates < nan", analysis.Threshold{}, "is not a number"},
		{"throughput >= baseline -100%", analysis.Threshold{}, "zero or less"},
		{"p99 <= baseline +1.2.3%", analysis.Threshold{}, "is not a percentage"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := analysis.ParseThreshold(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			tt.want.Text = tt.text
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// A typo in an operator is called one, and every bad line of a gate is
// listed at once.
func TestGateTypos(t *testing.T) {
	_, err := analysis.NewGate([]string{"p99 <== 5ms", "p99 < 5ms", "throughput >> 10/s", "P98 < 1s"})
	if err == nil {
		t.Fatal("a gate of typos parsed")
	}
	for _, want := range []string{`"<==" is not a comparison`, `">>" is not a comparison`, `metric "P98" is not known`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseGate(t *testing.T) {
	ok := "apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- p99 < 50ms\n"
	if g, err := analysis.ParseGate("gate.yaml", []byte(ok)); err != nil || len(g.Thresholds) != 1 {
		t.Fatalf("%+v, %v", g, err)
	}
	for _, bad := range []string{
		"apiVersion: kb-bench.io/v1alpha1\nkind: Profile\nthresholds:\n- p99 < 50ms\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthreshold:\n- p99 < 50ms\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds: []\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- p99 < soon\n",
		// A second document is not silently ignored.
		ok + "---\n" + ok,
		ok + "---\napiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- lostUpdates < -1\n",
	} {
		if _, err := analysis.ParseGate("gate.yaml", []byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "gate.yaml: ") {
			t.Errorf("%q: err = %v, want one naming the file", bad, err)
		}
	}
}

// A file of many bad thresholds (or one huge one) is answered with a few
// short errors and a count, not a copy of the file.
func TestGateErrorsAreBounded(t *testing.T) {
	huge := "p99 < " + strings.Repeat("9", 1<<20)
	var lines []string
	for range 1000 {
		lines = append(lines, huge)
	}
	_, err := analysis.NewGate(lines)
	if err == nil {
		t.Fatal("a gate of bad thresholds parsed")
	}
	msg := err.Error()
	if n := strings.Count(msg, "\n") + 1; n != 10+1 || !strings.Contains(msg, "and 990 more bad thresholds") {
		t.Errorf("%d lines, want the first 10 and a count:\n%.2000s", n, msg)
	}
	if !strings.Contains(msg, "is 1048582 bytes long") || len(msg) > 5000 {
		t.Errorf("the errors take %d bytes for a file of bad lines", len(msg))
	}
}

// A relative threshold fails only when the difference is significant; an
// absolute one fails on the candidate's median alone.
func TestJudge(t *testing.T) {
	set := func(p99s ...int64) []*results.Result {
		var rs []*results.Result
		for _, p := range p99s {
			rs = append(rs, resultstest.Sample(100, p))
		}
		return rs
	}
	g := &analysis.Gate{}
	for _, l := range []string{"p99 <= baseline +10%", "p99 < 30ms", "serverMatch == true"} {
		th, err := analysis.ParseThreshold(l)
		if err != nil {
			t.Fatal(err)
		}
		g.Thresholds = append(g.Thresholds, th)
	}
	base := set(20, 21, 19, 20, 22)
	tests := []struct {
		name      string
		candidate []*results.Result
		passed    []bool
		why       string
	}{
		{"same", set(20, 21, 20, 19, 22), []bool{true, true, true}, "holds"},
		{"slower, significantly", set(26, 27, 25, 28, 26), []bool{false, true, true}, "the difference is significant (p="},
		// Too few samples to test: the medians decide, and it says so.
		{"slower, one sample", set(26), []bool{false, true, true}, "NOT tested for significance, so the medians alone decide: 5 vs 1 samples"},
		{"as fast, one sample", set(20), []bool{true, true, true}, "holds (not tested for significance"},
		{"far slower", set(40, 41, 42, 40, 43), []bool{false, false, true}, "does not hold"},
	}
	// Every tested verdict says what its samples cannot tell from noise.
	tests[0].why = "with 5 samples a side, changes under 2.9% cannot be told from noise here"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := analysis.Judge(g, base, tt.candidate)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := text.WriteVerdicts(&out, vs, "text"); err != nil {
				t.Fatal(err)
			}
			for i, v := range vs {
				if v.Passed != tt.passed[i] {
					t.Errorf("%s: passed %v, want %v (%s)", v.Text, v.Passed, tt.passed[i], v.Why)
				}
			}
			if analysis.Passed(vs) != !strings.Contains(out.String(), "FAIL") || !strings.Contains(out.String(), tt.why) {
				t.Errorf("verdicts:\n%s", out.String())
			}
		})
	}
	if _, err := analysis.Judge(g, nil, base); err == nil || !strings.Contains(err.Error(), "pass --baseline") || g.NeedsBaseline() == nil {
		t.Errorf("relative threshold without a baseline: %v", err)
	}
	if g := analysis.DefaultGate(false); len(g.Thresholds) != 1 || g.Thresholds[0].Metric != "serverMatch" {
		t.Errorf("default gate without baseline: %+v", g)
	}
}

// A change beyond a relative threshold and significant by Mann-Whitney
// still passes when it is within what the medians of identical runs
// differ by, given the spread of the samples: on a noisy machine such a
// shift is what chance makes; past it the change fails.
func TestJudgeWeighsTheNoise(t *testing.T) {
	g, err := analysis.NewGate([]string{"throughput >= baseline -10%"})
	if err != nil {
		t.Fatal(err)
	}
	side := func(tput ...float64) []*results.Result {
		var rs []*results.Result
		for _, v := range tput {
			rs = append(rs, resultstest.Sample(v, 20))
		}
		return rs
	}
	for _, tt := range []struct {
		name            string
		base, candidate []*results.Result
		passed          bool
		why             string
	}{
		// Median 102 -> 90 (-11.8%), p=0.016; interquartile ranges 49 and
		// 10: medians of identical runs differ by about 17.3 (17.0%).
		{"within the noise", side(100, 101, 102, 150, 160), side(80, 85, 90, 95, 100.5), true,
			"within the noise of the samples; with 5 samples a side, changes under 17.0% cannot be told from noise here"},
		// Median 100 -> 70 (-30%), p=0.016; ranges 20 and 4: noise 7.0.
		{"beyond the noise", side(78, 90, 100, 110, 120), side(65, 68, 70, 72, 79), false, "significant (p=0.016) and beyond the noise"},
	} {
		vs, err := analysis.Judge(g, tt.base, tt.candidate)
		if err != nil {
			t.Fatal(err)
		}
		if vs[0].Passed != tt.passed || !strings.Contains(vs[0].Why, tt.why) {
			t.Errorf("%s: passed %v, want %v: %s", tt.name, vs[0].Passed, tt.passed, vs[0].Why)
		}
	}
}

// The shipped CI example's gate loads.
// A candidate that was interrupted, lost its target or could not make a
// check fails the gate even when every threshold holds on its figures.
func TestJudgeFailsAnIncompleteRun(t *testing.T) {
	g, err := analysis.NewGate([]string{"lostUpdates == 0"})
	if err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(r *results.Result){
		"interrupted": func(r *results.Result) { r.Interrupted = true },
		"target lost": func(r *results.Result) { r.TargetLost = "the apiserver stopped answering" },
		"check not made": func(r *results.Result) {
			r.Checks = []results.Check{{Name: "objects read back", Passed: false, Detail: "connection refused"}}
		},
	} {
		r := resultstest.Sample(100, 20)
		spoil(r)
		vs, err := analysis.Judge(g, nil, []*results.Result{resultstest.Sample(100, 20), r})
		if err != nil {
			t.Fatal(err)
		}
		if analysis.Passed(vs) || vs[0].Metric != "complete" || !strings.Contains(vs[0].Why, "sample 2") {
			t.Errorf("%s: verdicts %+v, want a failed complete-run verdict for sample 2", name, vs)
		}
	}
	if vs, _ := analysis.Judge(g, nil, []*results.Result{resultstest.Sample(100, 20)}); !analysis.Passed(vs) || len(vs) != 1 {
		t.Errorf("a complete run: %+v", vs)
	}
}

func TestExampleGateLoads(t *testing.T) {
	data, err := os.ReadFile("../../examples/ci/gate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g, err := analysis.ParseGate("examples/ci/gate.yaml", data); err != nil || len(g.Thresholds) != 6 {
		t.Errorf("examples/ci/gate.yaml: %+v, %v", g, err)
	}
}

// tenfold is r ten times slower: throughput divided by ten, every latency
// percentile multiplied by ten (the reproduction).
func tenfold(r *results.Result) *results.Result {
	c := *r
	c.Summary.Throughput /= 10
	c.Summary.WriteThroughput /= 10
	l := &c.Summary.Latency
	l.P50, l.P90, l.P99, l.P999, l.Max, l.Mean = 10*l.P50, 10*l.P90, 10*l.P99, 10*l.P999, 10*l.Max, 10*l.Mean
	return &c
}

// A real tenfold regression fails the default gate and the example's
// whatever the number of samples: tested for significance where the
// samples allow it, judged on the medians (and saying so) where they are
// too few for any difference to be significant (1 vs 1, 3 vs 3).
func TestTenfoldRegressionFails(t *testing.T) {
	data, err := os.ReadFile("../../examples/ci/gate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example, err := analysis.ParseGate("examples/ci/gate.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 5} {
		var base, slow []*results.Result
		for i := range n {
			r := resultstest.Sample(500+float64(i), 20+int64(i))
			r.Summary.WriteThroughput = r.Summary.Throughput
			base = append(base, r)
			slow = append(slow, tenfold(r))
		}
		for name, g := range map[string]*analysis.Gate{"default": analysis.DefaultGate(true), "example": example} {
			t.Run(fmt.Sprintf("%s %dv%d", name, n, n), func(t *testing.T) {
				vs, err := analysis.Judge(g, base, slow)
				if err != nil {
					t.Fatal(err)
				}
				if analysis.Passed(vs) {
					t.Fatalf("a tenfold regression passed: %+v", vs)
				}
				for _, v := range vs {
					if v.Metric != "p99" || !v.Relative {
						continue
					}
					tested, _ := analysis.Testable(n, n)
					switch {
					case v.Passed:
						t.Errorf("%s passed: %s", v.Text, v.Why)
					case v.Untested == tested:
						t.Errorf("%s: untested %v with %d vs %d samples: %s", v.Text, v.Untested, n, n, v.Why)
					case !tested && !strings.Contains(v.Why, "NOT tested for significance") && !strings.Contains(v.Why, "--count 4"):
						t.Errorf("%s does not say it was not tested and what to do: %s", v.Text, v.Why)
					case tested && !strings.Contains(v.Why, "significant (p=0.008)"):
						t.Errorf("%s: %s", v.Text, v.Why)
					}
				}
			})
		}
	}
}

// Whatever a thresholds file holds, ParseGate does not panic, and every
// threshold it accepts has a known metric, its unit, an operator the unit
// allows and a finite value in the unit's range (a scenario's figure: no
// unit, no value, until judged), and reads back the same from its text.
func FuzzParseGate(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- p99 < 50ms\n- conflictRate < 50%\n- serverMatch == true\n- throughput >= baseline -10%\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- conflictRate < NaN%\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds: [\"lostUpdates <= baseline\", \"writeThroughput > 1e3/s\"]\n---\nkind: Gate\n",
		"p99 <= baseline +10%",
		`failoverTime{quantile="0.5"} < 2s`, "a<0", "a> ",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		check := func(th analysis.Threshold) {
			switch {
			case th.Unit == "" && (slices.Contains(analysis.MetricNames(), th.Metric) || !th.Relative && th.Value != 0):
				// A scenario's figure: its unit, and its value, are read when judged.
				t.Fatalf("%q: metric %q of no unit", th.Text, th.Metric)
			case math.IsNaN(th.Value) || math.IsInf(th.Value, 0):
				t.Fatalf("%q: value %v", th.Text, th.Value)
			case th.Unit == results.UnitBool && (th.Relative || th.Op != "==" && th.Op != "!="):
				t.Fatalf("%q: a boolean compared with %s", th.Text, th.Op)
			case th.Relative && th.Value <= -1:
				t.Fatalf("%q: baseline moved by %v", th.Text, th.Value)
			case !th.Relative && th.Unit == results.UnitPercent && (th.Value < 0 || th.Value > 1):
				t.Fatalf("%q: rate %v", th.Text, th.Value)
			case !th.Relative && th.Unit == results.UnitDuration && th.Value <= 0:
				t.Fatalf("%q: latency %v", th.Text, th.Value)
			case !th.Relative && th.Value < 0:
				t.Fatalf("%q: value %v", th.Text, th.Value)
			}
			again, err := analysis.ParseThreshold(th.Text)
			if err != nil || again != th {
				t.Fatalf("%q reads back as %+v, %v; was %+v", th.Text, again, err, th)
			}
		}
		if th, err := analysis.ParseThreshold(data); err == nil {
			check(th)
		}
		g, err := analysis.ParseGate("fuzz.yaml", []byte(data))
		if err != nil {
			if g != nil {
				t.Fatalf("a gate and an error: %+v, %v", g, err)
			}
			return
		}
		if len(g.Thresholds) == 0 {
			t.Fatal("a gate with no threshold")
		}
		for _, th := range g.Thresholds {
			check(th)
		}
	})
}

// side is samples of the counter workload with these throughputs (ops/s)
// and p99s (ms), in pairs; each p50 is a fifth of its p99.
func side(figs ...float64) []*results.Result {
	var rs []*results.Result
	for i := 0; i+1 < len(figs); i += 2 {
		r := resultstest.Sample(figs[i], int64(figs[i+1]))
		r.RunID = fmt.Sprintf("run-%d-%g", i/2+1, figs[i])
		r.Summary.Latency.P50 = r.Summary.Latency.P99 / 5
		rs = append(rs, r)
	}
	return rs
}

// scaled is rs with every throughput times tput and every latency times
// lat.
func scaled(rs []*results.Result, tput, lat float64) []*results.Result {
	var out []*results.Result
	for _, r := range rs {
		c := *r
		c.RunID += "-scaled"
		c.Summary.Throughput *= tput
		c.Summary.Latency.P50 = time.Duration(float64(c.Summary.Latency.P50) * lat)
		c.Summary.Latency.P99 = time.Duration(float64(c.Summary.Latency.P99) * lat)
		out = append(out, &c)
	}
	return out
}

// Who carries the burden of proof depends on what a threshold asks: a
// guard against regression gives the candidate the benefit of the doubt
// (an A/A pair passes it, a significant regression fails it); a threshold
// that asks for a change passes only when the change is significant (an
// A/A pair FAILS it, whichever way its medians fall); an absolute one is
// the candidate's median. Each shape in each direction, on sets of five
// samples with the spread of a busy machine.
func TestJudgeBurdenOfProofByShape(t *testing.T) {
	// An A/A pair: two sets of one spec, throughput about 510/s and p99
	// about 20ms, each side's medians a little better than the other's
	// somewhere.
	base := side(512, 20, 498, 21, 530, 19, 505, 22, 521, 20)
	aa := side(509, 21, 526, 20, 501, 19, 515, 20, 497, 22)
	better := scaled(base, 1.5, 0.04) // +50% throughput, latency / 25
	worse := scaled(base, 0.7, 1.2)   // -30% throughput, latency +20%
	tests := []struct {
		threshold string
		shape     analysis.Shape
		words     string
		// passes against A/A, an improvement, a regression
		aa, better, worse bool
	}{
		{"throughput > 400/s", analysis.ShapeAbsolute, "the candidate's median decides", true, true, false},
		{"p99 < 21ms", analysis.ShapeAbsolute, "the candidate's median decides", true, true, false},
		{"throughput >= baseline", analysis.ShapeGuard, "guards against a regression", true, true, false},
		{"p99 <= baseline", analysis.ShapeGuard, "guards against a regression", true, true, false},
		{"throughput >= baseline -10%", analysis.ShapeGuard, "guards against a regression", true, true, false},
		{"p99 <= baseline +10%", analysis.ShapeGuard, "guards against a regression", true, true, false},
		{"throughput == baseline", analysis.ShapeGuard, "guards against a regression", true, false, false},
		// A guard the other way: latency must not fall (an improvement
		// fails it, significantly).
		{"p99 >= baseline", analysis.ShapeGuard, "guards against a regression", true, false, true},
		{"throughput > baseline", analysis.ShapeChange, "asks for an improvement (passes only when it is significant)", false, true, false},
		{"throughput >= baseline +20%", analysis.ShapeChange, "asks for an improvement", false, true, false},
		{"throughput >= baseline +1000%", analysis.ShapeChange, "asks for an improvement", false, false, false},
		{"p99 < baseline", analysis.ShapeChange, "asks for an improvement", false, true, false},
		{"p50 <= baseline -50%", analysis.ShapeChange, "asks for an improvement", false, true, false},
		{"p99 < baseline -90%", analysis.ShapeChange, "asks for an improvement", false, true, false},
		{"throughput != baseline", analysis.ShapeChange, "asks for a change", false, true, true},
		// Asking for a change the metric counts as worse is still asking.
		{"p99 > baseline +10%", analysis.ShapeChange, "asks for a rise", false, false, true},
		{"throughput < baseline -20%", analysis.ShapeChange, "asks for a fall", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.threshold, func(t *testing.T) {
			g, err := analysis.NewGate([]string{tt.threshold})
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Thresholds[0].Shape(); got != tt.shape {
				t.Fatalf("shape %s, want %s", got, tt.shape)
			}
			for _, c := range []struct {
				name string
				cand []*results.Result
				want bool
			}{{"A/A", aa, tt.aa}, {"improved", better, tt.better}, {"regressed", worse, tt.worse}} {
				vs, err := analysis.Judge(g, base, c.cand)
				if err != nil {
					t.Fatal(err)
				}
				v := vs[len(vs)-1]
				if v.Passed != c.want || v.Shape != tt.shape || !strings.Contains(v.Why, tt.words) {
					t.Errorf("%s: passed %v (want %v), shape %s: %s", c.name, v.Passed, c.want, v.Shape, v.Why)
				}
			}
		})
	}
}

// The cases: an A/A pair whose candidate's medians happen to meet
// a threshold asking for an improvement fails it, saying the difference
// is not significant; with too few samples to test, it fails too.
func TestImprovementIsNotGivenTheBenefitOfTheDoubt(t *testing.T) {
	base := side(512, 20, 498, 21, 530, 19, 505, 22, 521, 20)
	aa := side(520, 20, 526, 19, 511, 19, 515, 20, 531, 22) // medians: 515 vs 512, p99 20 vs 20
	g, err := analysis.NewGate([]string{"throughput > baseline", "p99 <= baseline -0%"})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := analysis.Judge(g, base, aa)
	if err != nil {
		t.Fatal(err)
	}
	if vs[0].Passed || !strings.Contains(vs[0].Why, "holds on the medians, but the difference is not significant") {
		t.Errorf("an A/A pair passed %q: %s", vs[0].Text, vs[0].Why)
	}
	// "-0%" asks for nothing: a guard.
	if !vs[1].Passed || vs[1].Shape != analysis.ShapeGuard {
		t.Errorf("%q: %+v", vs[1].Text, vs[1])
	}
	g, _ = analysis.NewGate([]string{"throughput >= baseline +20%"})
	vs, _ = analysis.Judge(g, base[:3], scaled(base[:3], 1.5, 1))
	if vs[0].Passed || !vs[0].Untested || !strings.Contains(vs[0].Why, "NOT tested for significance, so the change is not shown") {
		t.Errorf("an untestable improvement passed: %+v", vs[0])
	}
}

// A sample that did not measure what it was asked to is left out of the
// medians and tests on either side, and named: a 0-operation sample saved
// by a Ctrl-C between samples does not halve the candidate's median (and
// fails the gate), and a baseline sample interrupted midway does not
// lower the baseline's (the verdicts say they judged 4 of 5).
func TestJudgeLeavesIncompleteSamplesOut(t *testing.T) {
	g, err := analysis.NewGate([]string{"throughput >= baseline -10%", "throughput > 400/s"})
	if err != nil {
		t.Fatal(err)
	}
	base := side(512, 20, 498, 21, 530, 19, 505, 22, 521, 20)
	cand := side(509, 21, 526, 20, 501, 19, 515, 20, 497, 22)
	empty := &results.Result{RunID: "ctrl-c", Interrupted: true, Workload: cand[0].Workload}
	halfBase := resultstest.Sample(250, 40)
	halfBase.RunID, halfBase.Interrupted = "cut-short", true

	t.Run("candidate", func(t *testing.T) {
		vs, err := analysis.Judge(g, base, append(slices.Clone(cand), empty, empty, empty))
		if err != nil {
			t.Fatal(err)
		}
		if analysis.Passed(vs) {
			t.Errorf("a gate over interrupted candidate samples passed: %+v", vs)
		}
		for _, v := range vs {
			switch {
			case v.Metric == "complete":
				if v.Passed || v.Side != "candidate" || !strings.Contains(v.Why, "(ctrl-c) was interrupted") {
					t.Errorf("completeness verdict: %+v", v)
				}
			case *v.Candidate != 509 || !v.Passed || !strings.Contains(v.Why, "judged on 5 of 8 candidate samples"):
				t.Errorf("%s: candidate median %v, want 509 from the 5 complete samples: %s", v.Text, *v.Candidate, v.Why)
			}
		}
	})
	t.Run("baseline", func(t *testing.T) {
		vs, err := analysis.Judge(g, append(slices.Clone(base), halfBase), cand)
		if err != nil {
			t.Fatal(err)
		}
		if !analysis.Passed(vs) || vs[0].Metric != "complete" || vs[0].Side != "baseline" || !strings.Contains(vs[0].Why, "(cut-short) was interrupted") {
			t.Fatalf("verdicts %+v", vs)
		}
		if v := vs[1]; *v.Baseline != 512 || !strings.Contains(v.Why, "judged on 5 of 6 baseline samples") {
			t.Errorf("%s: baseline median %v, want 512 from the 5 complete samples: %s", v.Text, *v.Baseline, v.Why)
		}
		var out bytes.Buffer
		if err := text.WriteVerdicts(&out, vs, "text"); err != nil || !strings.Contains(out.String(), "complete baseline") {
			t.Errorf("the text verdicts do not name the baseline sample left out (%v):\n%s", err, out.String())
		}
	})
	t.Run("no complete baseline", func(t *testing.T) {
		vs, _ := analysis.Judge(g, []*results.Result{halfBase}, cand)
		if analysis.Passed(vs) || !strings.Contains(vs[1].Why, "no baseline sample is complete") {
			t.Errorf("verdicts %+v", vs)
		}
	})
	t.Run("compare", func(t *testing.T) {
		c, err := analysis.Compare([]results.Side{{Label: "base", Results: append(slices.Clone(base), halfBase)}, {Label: "cand", Results: append(slices.Clone(cand), empty)}})
		if err != nil {
			t.Fatal(err)
		}
		if c.Sides[0].Samples != 5 || c.Sides[1].Samples != 5 || len(c.LeftOut) != 2 || c.Rows[0].Cells[0].Median != 512 || c.Rows[0].Cells[1].Median != 509 {
			t.Errorf("comparison %+v, rows %+v", c, c.Rows[0])
		}
	})
}

// A threshold over a figure a sample did not measure fails, saying so,
// and shows the figure as unknown: lost updates whose check could not be
// made are not 0 lost updates.
func TestJudgeUnmeasuredLostUpdatesFail(t *testing.T) {
	g, err := analysis.NewGate([]string{"lostUpdates <= baseline", "lostUpdates == 0"})
	if err != nil {
		t.Fatal(err)
	}
	base := side(512, 20, 498, 21, 530, 19, 505, 22, 521, 20)
	cand := side(509, 21, 526, 20, 501, 19, 515, 20, 497, 22)
	// A check made, counting nothing, then the same run with no check.
	cand[2].Checks = []results.Check{{Name: "counter kb-bench-0", Passed: true}, {Name: "objects read back", Detail: "connection refused"}}
	cand[2].Summary.LostUpdates = results.LostUpdatesOf(cand[2].Checks)
	// Its incompleteness fails the gate; so does each threshold, with the
	// incomplete sample left out, here on the baseline side.
	vs, err := analysis.Judge(g, cand, base)
	if err != nil {
		t.Fatal(err)
	}
	if !analysis.Passed(vs) {
		t.Errorf("a gate whose unmeasured baseline sample was left out failed: %+v", vs)
	}
	// A result that was never checked at all (its checks were lost with
	// its target) is complete by the other rules, and still unmeasured.
	unchecked := side(509, 21)[0]
	unchecked.Checks, unchecked.Summary.LostUpdates = nil, nil
	vs, err = analysis.Judge(g, base, []*results.Result{unchecked})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := text.WriteVerdicts(&out, vs, "text"); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Passed || v.Candidate != nil || !strings.Contains(v.Why, "lostUpdates was not measured") || !strings.Contains(v.Why, "not checked") {
			t.Errorf("%s: %+v", v.Text, v)
		}
	}
	// The apiserver died mid-sample: the run is incomplete, and its
	// threshold still says what was not measured.
	lost := side(509, 21)[0]
	lost.TargetLost = "the apiserver stopped answering"
	lost.Checks = []results.Check{{Name: "objects read back", Detail: "connection refused"}}
	lost.Summary.LostUpdates = results.LostUpdatesOf(lost.Checks)
	vs, _ = analysis.Judge(g, base, []*results.Result{lost})
	if analysis.Passed(vs) || !strings.Contains(vs[1].Why, "did not count its lost updates (1 of 1 checks could not be made): lostUpdates was not measured") {
		t.Errorf("verdicts on a sample whose target was lost: %+v", vs)
	}
	if strings.Count(out.String(), "unknown") != 2 {
		t.Errorf("verdicts show an unmeasured figure as a number:\n%s", out.String())
	}
}

// The hint for an unknown metric lists every metric a threshold may name,
// from the one list of them, so it cannot drift from it, and the figures
// the samples hold: a threshold naming a figure no sample holds fails.
func TestUnknownMetricHintListsEveryMetric(t *testing.T) {
	g, err := analysis.NewGate([]string{"cpu < 1ms"})
	if err != nil {
		t.Fatal(err)
	}
	r := resultstest.Sample(100, 20)
	r.Figures = []results.Figure{{Name: "rejected", Unit: results.UnitCount, Help: "h"}, {Name: "failoverTime", Labels: map[string]string{"quantile": "0.5"}, Unit: results.UnitDuration, Help: "h"}}
	vs, err := analysis.Judge(g, nil, []*results.Result{r})
	if err != nil {
		t.Fatal(err)
	}
	if analysis.Passed(vs) {
		t.Fatalf("a threshold on a figure no sample holds passed: %+v", vs)
	}
	for _, m := range append(analysis.MetricNames(), "apiserverCPUPerWrite", "etcdCPUPerWrite", "rejected", `failoverTime{quantile="0.5"}`, `metric "cpu" is not known`) {
		if !strings.Contains(vs[0].Why, m) {
			t.Errorf("the hint lacks %s: %v", m, vs[0].Why)
		}
	}
}

// withFigure is rs, each with the figure f of value v in turn.
func withFigure(f results.Figure, rs []*results.Result, v ...float64) []*results.Result {
	for i, r := range rs {
		f.Value = v[i]
		r.Figures = append(r.Figures, f)
	}
	return rs
}

// A gate fails a run on a scenario's figure as on a built-in metric: an
// absolute threshold on its median, in its unit; a relative one only when
// the difference is significant; a sample without it fails the threshold
// and says which.
func TestJudgeScenarioFigure(t *testing.T) {
	failover := results.Figure{Name: "failoverTime", Labels: map[string]string{"quantile": "0.5"}, Unit: results.UnitDuration, Better: results.BetterLower, Help: "h"}
	rejected := results.Figure{Name: "rejected", Unit: results.UnitCount, Better: results.BetterLower, Sum: true, Help: "h"}
	g, err := analysis.NewGate([]string{`failoverTime{quantile="0.5"} < 2s`, "rejected <= baseline +10%"})
	if err != nil {
		t.Fatal(err)
	}
	s := float64(time.Second)
	samples := func() []*results.Result { return side(100, 20, 101, 21, 99, 20, 100, 22, 102, 19) }
	mk := func(failovers []float64, rejections ...float64) []*results.Result {
		return withFigure(rejected, withFigure(failover, scaled(samples(), 1, 1), failovers...), rejections...)
	}
	base := withFigure(rejected, withFigure(failover, samples(), s, s, s, s, s), 10, 11, 10, 9, 10)
	tests := []struct {
		name      string
		candidate []*results.Result
		passed    []bool
		why       []string
	}{
		{"same", mk([]float64{s, 1.1 * s, s, 0.9 * s, s}, 10, 10, 11, 10, 9), []bool{true, true}, []string{"1.00s < 2.00s holds", "holds"}},
		{"slow failover, more rejections", mk([]float64{3 * s, 3 * s, 3 * s, 3 * s, 3 * s}, 30, 31, 29, 30, 32), []bool{false, false},
			[]string{"3.00s < 2.00s does not hold", "30 <= 11 does not hold, and the difference is significant"}},
		{"no figure", scaled(samples(), 1, 1), []bool{false, false},
			[]string{"candidate sample run-1-100-scaled has no figure failoverTime{quantile=\"0.5\"}", "has no figure rejected"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := analysis.Judge(g, base, tt.candidate)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vs {
				if v.Passed != tt.passed[i] || !strings.Contains(v.Why, tt.why[i]) {
					t.Errorf("%s: passed %v, want %v: %s (want %q)", v.Text, v.Passed, tt.passed[i], v.Why, tt.why[i])
				}
			}
		})
	}
}

// A comparison shows each scenario figure a sample holds as a row, named
// by its Key, in its unit, better the figure's way; a side whose samples
// lack it shows it unknown.
func TestCompareShowsFigures(t *testing.T) {
	failover := results.Figure{Name: "failoverTime", Labels: map[string]string{"quantile": "0.5"}, Unit: results.UnitDuration, Better: results.BetterLower, Help: "h"}
	s := float64(time.Second)
	samples := func() []*results.Result { return side(100, 20, 101, 21, 99, 20, 100, 22, 102, 19) }
	a := withFigure(failover, samples(), s, s, s, 1.1*s, 0.9*s)
	b := withFigure(failover, scaled(samples(), 1, 1), 0.5*s, 0.5*s, 0.4*s, 0.5*s, 0.6*s)
	hard := results.Figure{Name: "hard", Unit: results.UnitCount, Help: "a setting: no way is better"}
	a, b = withFigure(hard, a, 50, 50, 50, 50, 50), withFigure(hard, b, 80, 80, 80, 80, 80)
	c, err := analysis.Compare([]results.Side{{Label: "a", Results: a}, {Label: "b", Results: b}, {Label: "c", Results: scaled(samples(), 1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(c.Rows, func(r analysis.ComparedRow) bool { return r.Metric == `failoverTime{quantile="0.5"}` })
	if i < 0 {
		t.Fatalf("no row for the figure: %+v", c.Rows)
	}
	row := c.Rows[i]
	if row.Unit != "ms" || row.Cells[0].Median != 1000 || row.Cells[1].Median != 500 || !row.Cells[1].Significant || !row.Cells[1].Better || row.Cells[2].Unknown == "" {
		t.Errorf("figure row: %+v", row)
	}
	if i := slices.IndexFunc(c.Rows, func(r analysis.ComparedRow) bool { return r.Metric == "hard" }); i < 0 || !c.Rows[i].Neutral || !c.Rows[i].Cells[1].Significant || c.Rows[i].Cells[1].Better {
		t.Errorf("a figure with no direction: %+v", c.Rows)
	}
}
