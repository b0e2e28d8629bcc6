package analysis_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// withCost is a result of writes successful writes whose window cost the
// apiserver apiserver seconds of CPU and etcd etcd seconds (negative: not
// read).
func withCost(id string, writes int64, apiserver, etcd float64) *results.Result {
	r := &results.Result{RunID: id, Summary: results.Summary{Seconds: 10, Ops: writes * 2, Writes: writes}}
	r.Cost = &results.Cost{Apiserver: results.ProcessCost{Available: true, CPUSeconds: apiserver}}
	if etcd >= 0 {
		r.Cost.Etcd = results.ProcessCost{Available: true, CPUSeconds: etcd}
	} else {
		r.Cost.Etcd = results.ProcessCost{Reason: "not readable"}
	}
	return r
}

func TestGateOnCost(t *testing.T) {
	// 1000 writes a sample: 2 ms of apiserver CPU per write at baseline,
	// 4 ms in the regressed candidate; etcd 0.5 ms throughout.
	var base, same, worse []*results.Result
	for i, jitter := range []float64{-0.05, 0, 0.05, -0.02, 0.02} {
		id := string(rune('a' + i))
		base = append(base, withCost("base-"+id, 1000, 2+jitter, 0.5))
		same = append(same, withCost("same-"+id, 1000, 2-jitter, 0.5))
		worse = append(worse, withCost("worse-"+id, 1000, 4+jitter, 0.5))
	}
	g, err := analysis.NewGate([]string{"apiserverCPUPerWrite <= baseline +10%", "etcdCPUPerWrite < 1ms"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		base, cand []*results.Result
		pass       []bool
		why        string
	}{
		{"A/A passes", base, same, []bool{true, true}, "holds"},
		{"twice the CPU per write fails", base, worse, []bool{false, true}, "significant"},
		{"a result without a cost cannot pass", base, []*results.Result{{RunID: "old", Summary: results.Summary{Ops: 5, Writes: 5}}}, []bool{false, false}, "from before kb-bench measured it"},
		{"etcd not read cannot pass", base, []*results.Result{withCost("kind", 1000, 2, -1)}, []bool{true, false}, "no etcd CPU: not readable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := analysis.Judge(g, tc.base, tc.cand)
			if err != nil {
				t.Fatal(err)
			}
			var whys []string
			for i, v := range vs {
				whys = append(whys, v.Why)
				if v.Passed != tc.pass[i] {
					t.Errorf("%s: passed %v, want %v (%s)", v.Text, v.Passed, tc.pass[i], v.Why)
				}
			}
			if all := strings.Join(whys, "\n"); !strings.Contains(all, tc.why) {
				t.Errorf("verdicts say %q, want %q in them", all, tc.why)
			}
		})
	}
}

func TestCompareShowsCostOnlyWhenEverySampleHasIt(t *testing.T) {
	rows := func(sides ...results.Side) []string {
		c, err := analysis.Compare(sides)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range c.Rows {
			names = append(names, r.Metric)
		}
		return names
	}
	a := results.Side{Label: "a", Results: []*results.Result{withCost("a", 1000, 2, 0.5)}}
	b := results.Side{Label: "b", Results: []*results.Result{withCost("b", 1000, 4, -1)}}
	old := results.Side{Label: "old", Results: []*results.Result{{RunID: "old"}}}
	for _, tc := range []struct {
		name  string
		sides []results.Side
		want  []string
		not   []string
	}{
		{"both read", []results.Side{a, a}, []string{"apiserver CPU/write", "etcd CPU/write"}, nil},
		{"etcd read on one side", []results.Side{a, b}, []string{"apiserver CPU/write"}, []string{"etcd CPU/write"}},
		{"an old result", []results.Side{a, old}, nil, []string{"apiserver CPU/write", "etcd CPU/write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(rows(tc.sides...), ",")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("rows %s, want %s", got, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("rows %s, want no %s", got, w)
				}
			}
		})
	}
}

// The apiserver's background CPU is what it used between the scrape an
// idle interval before the window's first edge and the edge's own: it
// is left out when that scrape was not read.
func TestNewCostReadsTheBackground(t *testing.T) {
	edge := func(cpu float64) analysis.CostEdge {
		return analysis.CostEdge{Server: metrics.ServerSample{Process: metrics.ProcessSample{Has: true, CPUSeconds: cpu}},
			Etcd: metrics.ProcessSample{Has: true}, Client: metrics.ProcessSample{Has: true}}
	}
	before, after := edge(10.5), edge(12)
	before.Idle = &analysis.IdleEdge{Process: metrics.ProcessSample{Has: true, CPUSeconds: 10.47}, Seconds: 1.01}
	c := analysis.NewCost(before, after, nil)
	if i := c.ApiserverIdle; i == nil || i.Seconds != 1.01 || math.Abs(i.CPUSeconds-0.03) > 1e-9 || c.Apiserver.CPUSeconds != 1.5 {
		t.Errorf("cost %+v, idle %+v: want 0.03 s of background over 1.01 s, 1.5 s in the window", c, c.ApiserverIdle)
	}
	before.Idle.Process.Has = false
	if c := analysis.NewCost(before, after, nil); c.ApiserverIdle != nil {
		t.Errorf("idle scrape without process figures: %+v", c.ApiserverIdle)
	}
}

// On a slow or loaded machine, few writes share the apiserver's
// background CPU and its CPU per write swells: here the baseline (100
// writes in 10 s, 0.1 cores of background) shows 12ms a write against
// the candidate's 4ms, though each of the candidate's writes cost the
// apiserver half as much again (3ms against 2ms). The gross figure
// passes the gate; the net one, the background left out, fails it.
func TestNetCPUPerWriteLeavesTheBackgroundOut(t *testing.T) {
	sample := func(id string, writes int64, perWrite, jitter float64) *results.Result {
		r := withCost(id, writes, 1+float64(writes)*perWrite+jitter, 0.5)
		r.Cost.ApiserverIdle = &results.IdleCPU{Seconds: 1, CPUSeconds: 0.1}
		return r
	}
	var base, cand []*results.Result
	for i, j := range []float64{-0.01, 0, 0.01, -0.02, 0.02} {
		id := string(rune('a' + i))
		base = append(base, sample("base-"+id, 100, 0.002, j))
		cand = append(cand, sample("cand-"+id, 1000, 0.003, j))
	}
	g, err := analysis.NewGate([]string{"apiserverCPUPerWrite <= baseline +10%", "apiserverNetCPUPerWrite <= baseline +10%"})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := analysis.Judge(g, base, cand)
	if err != nil {
		t.Fatal(err)
	}
	if !vs[0].Passed || vs[1].Passed || math.Abs(*vs[1].Candidate-float64(3*time.Millisecond)) > 1e3 || math.Abs(*vs[1].Baseline-float64(2*time.Millisecond)) > 1e3 {
		t.Errorf("gross %v (%s), net %v (%s): want the gross to pass and the net, 3ms against 2ms, to fail", vs[0].Passed, vs[0].Why, vs[1].Passed, vs[1].Why)
	}
	old := withCost("old", 100, 1, 0.5)
	if vs, _ := analysis.Judge(g, base, []*results.Result{old}); vs[1].Passed || !strings.Contains(vs[1].Why, "no background CPU") {
		t.Errorf("a result without the background: %+v", vs[1])
	}
}
