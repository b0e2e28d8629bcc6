package analysis_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
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
		{"p99 < 50ms", analysis.Threshold{Metric: "p99", Unit: analysis.UnitDuration, Op: "<", Value: float64(50 * time.Millisecond)}, ""},
		{"writeThroughput > 100/s", analysis.Threshold{Metric: "writeThroughput", Unit: analysis.UnitRate, Op: ">", Value: 100}, ""},
		{"throughput >= 0", analysis.Threshold{Metric: "throughput", Unit: analysis.UnitRate, Op: ">=", Value: 0}, ""},
		{"conflictRate < 50%", analysis.Threshold{Metric: "conflictRate", Unit: analysis.UnitPercent, Op: "<", Value: 0.5}, ""},
		{"conflictRate <= 100%", analysis.Threshold{Metric: "conflictRate", Unit: analysis.UnitPercent, Op: "<=", Value: 1}, ""},
		{"lostUpdates == 0", analysis.Threshold{Metric: "lostUpdates", Unit: analysis.UnitCount, Op: "==", Value: 0}, ""},
		{"serverMatch == true", analysis.Threshold{Metric: "serverMatch", Unit: analysis.UnitBool, Op: "==", Value: 1}, ""},
		{"serverMatch != false", analysis.Threshold{Metric: "serverMatch", Unit: analysis.UnitBool, Op: "!=", Value: 0}, ""},
		{"p99 <= baseline +10%", analysis.Threshold{Metric: "p99", Unit: analysis.UnitDuration, Op: "<=", Value: 0.1, Relative: true}, ""},
		{"throughput >= baseline -5%", analysis.Threshold{Metric: "throughput", Unit: analysis.UnitRate, Op: ">=", Value: -0.05, Relative: true}, ""},
		{"lostUpdates <= baseline", analysis.Threshold{Metric: "lostUpdates", Unit: analysis.UnitCount, Op: "<=", Relative: true}, ""},
		{"latency < 5ms", analysis.Threshold{}, `metric "latency" is not known`},
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
	_, err := analysis.NewGate([]string{"p99 <== 5ms", "p99 < 5ms", "throughput >> 10/s", "p98 < 1s"})
	if err == nil {
		t.Fatal("a gate of typos parsed")
	}
	for _, want := range []string{`"<==" is not a comparison`, `">>" is not a comparison`, `metric "p98" is not known`} {
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
// allows and a finite value in the unit's range, and reads back the same
// from its text.
func FuzzParseGate(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- p99 < 50ms\n- conflictRate < 50%\n- serverMatch == true\n- throughput >= baseline -10%\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- conflictRate < NaN%\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds: [\"lostUpdates <= baseline\", \"writeThroughput > 1e3/s\"]\n---\nkind: Gate\n",
		"p99 <= baseline +10%",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		check := func(th analysis.Threshold) {
			switch {
			case th.Unit == "":
				t.Fatalf("%q: metric %q of no unit", th.Text, th.Metric)
			case math.IsNaN(th.Value) || math.IsInf(th.Value, 0):
				t.Fatalf("%q: value %v", th.Text, th.Value)
			case th.Unit == analysis.UnitBool && (th.Relative || th.Op != "==" && th.Op != "!="):
				t.Fatalf("%q: a boolean compared with %s", th.Text, th.Op)
			case th.Relative && th.Value <= -1:
				t.Fatalf("%q: baseline moved by %v", th.Text, th.Value)
			case !th.Relative && th.Unit == analysis.UnitPercent && (th.Value < 0 || th.Value > 1):
				t.Fatalf("%q: rate %v", th.Text, th.Value)
			case !th.Relative && th.Unit == analysis.UnitDuration && th.Value <= 0:
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
