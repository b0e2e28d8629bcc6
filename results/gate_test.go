package results

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		text    string
		want    Threshold
		wantErr string
	}{
		{"p99 < 50ms", Threshold{Metric: "p99", Op: "<", Value: float64(50 * time.Millisecond)}, ""},
		{"writeThroughput > 100/s", Threshold{Metric: "writeThroughput", Op: ">", Value: 100}, ""},
		{"conflictRate < 50%", Threshold{Metric: "conflictRate", Op: "<", Value: 0.5}, ""},
		{"conflictRate < 0.5", Threshold{Metric: "conflictRate", Op: "<", Value: 0.5}, ""},
		{"lostUpdates == 0", Threshold{Metric: "lostUpdates", Op: "==", Value: 0}, ""},
		{"serverMatch == true", Threshold{Metric: "serverMatch", Op: "==", Value: 1}, ""},
		{"p99 <= baseline +10%", Threshold{Metric: "p99", Op: "<=", Value: 0.1, Relative: true}, ""},
		{"throughput >= baseline -5%", Threshold{Metric: "throughput", Op: ">=", Value: -0.05, Relative: true}, ""},
		{"lostUpdates <= baseline", Threshold{Metric: "lostUpdates", Op: "<=", Relative: true}, ""},
		{"latency < 5ms", Threshold{}, `metric "latency" is not known`},
		{"p99 < fast", Threshold{}, `"fast" is not a duration`},
		{"serverMatch == baseline", Threshold{}, "true or false, not relative"},
		{"p99 about 5ms", Threshold{}, "write METRIC OP VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := ParseThreshold(tt.text)
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
	_, err := NewGate([]string{"p99 <== 5ms", "p99 < 5ms", "throughput >> 10/s", "p98 < 1s"})
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
	if g, err := ParseGate("gate.yaml", []byte(ok)); err != nil || len(g.Thresholds) != 1 {
		t.Fatalf("%+v, %v", g, err)
	}
	for _, bad := range []string{
		"apiVersion: kb-bench.io/v1alpha1\nkind: Profile\nthresholds:\n- p99 < 50ms\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthreshold:\n- p99 < 50ms\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds: []\n",
		"apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- p99 < soon\n",
	} {
		if _, err := ParseGate("gate.yaml", []byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "gate.yaml: ") {
			t.Errorf("%q: err = %v, want one naming the file", bad, err)
		}
	}
}

// A relative threshold fails only when the difference is significant; an
// absolute one fails on the candidate's median alone.
func TestJudge(t *testing.T) {
	set := func(p99s ...int64) []*Result {
		var rs []*Result
		for _, p := range p99s {
			rs = append(rs, sample(100, p))
		}
		return rs
	}
	g := &Gate{}
	for _, l := range []string{"p99 <= baseline +10%", "p99 < 30ms", "serverMatch == true"} {
		th, err := ParseThreshold(l)
		if err != nil {
			t.Fatal(err)
		}
		g.Thresholds = append(g.Thresholds, th)
	}
	base := set(20, 21, 19, 20, 22)
	tests := []struct {
		name      string
		candidate []*Result
		passed    []bool
		why       string
	}{
		{"same", set(20, 21, 20, 19, 22), []bool{true, true, true}, "holds"},
		{"slower, significantly", set(26, 27, 25, 28, 26), []bool{false, true, true}, "the difference is significant (p="},
		{"slower, one sample", set(26), []bool{true, true, true}, "not significant"},
		{"far slower", set(40, 41, 42, 40, 43), []bool{false, false, true}, "does not hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := Judge(g, base, tt.candidate)
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := WriteVerdicts(&text, vs, "text"); err != nil {
				t.Fatal(err)
			}
			for i, v := range vs {
				if v.Passed != tt.passed[i] {
					t.Errorf("%s: passed %v, want %v (%s)", v.Text, v.Passed, tt.passed[i], v.Why)
				}
			}
			if Passed(vs) != !strings.Contains(text.String(), "FAIL") || !strings.Contains(text.String(), tt.why) {
				t.Errorf("verdicts:\n%s", text.String())
			}
		})
	}
	if _, err := Judge(g, nil, base); err == nil || !strings.Contains(err.Error(), "pass --baseline") {
		t.Errorf("relative threshold without a baseline: %v", err)
	}
	if g := DefaultGate(false); len(g.Thresholds) != 1 || g.Thresholds[0].Metric != "serverMatch" {
		t.Errorf("default gate without baseline: %+v", g)
	}
}

// The shipped CI example's gate loads.
// A candidate that was interrupted, lost its target or could not make a
// check fails the gate even when every threshold holds on its figures.
func TestJudgeFailsAnIncompleteRun(t *testing.T) {
	g, err := NewGate([]string{"lostUpdates == 0"})
	if err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(r *Result){
		"interrupted": func(r *Result) { r.Interrupted = true },
		"target lost": func(r *Result) { r.TargetLost = "the apiserver stopped answering" },
		"check not made": func(r *Result) {
			r.Checks = []Check{{Name: "objects read back", Passed: false, Detail: "connection refused"}}
		},
	} {
		r := sample(100, 20)
		spoil(r)
		vs, err := Judge(g, nil, []*Result{sample(100, 20), r})
		if err != nil {
			t.Fatal(err)
		}
		if Passed(vs) || vs[0].Metric != "complete" || !strings.Contains(vs[0].Why, "sample 2") {
			t.Errorf("%s: verdicts %+v, want a failed complete-run verdict for sample 2", name, vs)
		}
	}
	if vs, _ := Judge(g, nil, []*Result{sample(100, 20)}); !Passed(vs) || len(vs) != 1 {
		t.Errorf("a complete run: %+v", vs)
	}
}

func TestExampleGateLoads(t *testing.T) {
	data, err := os.ReadFile("../examples/ci/gate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g, err := ParseGate("examples/ci/gate.yaml", data); err != nil || len(g.Thresholds) != 6 {
		t.Errorf("examples/ci/gate.yaml: %+v, %v", g, err)
	}
}
