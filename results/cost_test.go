package results

import (
	"math"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

func TestCostFigures(t *testing.T) {
	s := Summary{Seconds: 2, Ops: 1000, Writes: 200, Conflicts: 800}
	c := &Cost{
		Apiserver: ProcessCost{Available: true, CPUSeconds: 1},
		Etcd:      ProcessCost{Reason: "not readable"},
		Client:    ProcessCost{Available: true, CPUSeconds: 0.5},
		Verbs: []VerbTime{
			{Verb: "GET", Resource: "configmaps", Requests: 1000, Seconds: 2},
			{Verb: "PUT", Resource: "configmaps", Requests: 1000, Seconds: 6, Conflicts: 800},
		},
		RequestSeconds: 10, // 2 s of it neither the run's GETs nor PUTs
	}
	f := c.Figures(s)
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"apiserver per op", f.Apiserver.PerOp, time.Millisecond},
		{"apiserver per successful write", f.Apiserver.PerWrite, 5 * time.Millisecond},
		{"apiserver cores", round3(f.Apiserver.Cores), 0.5},
		{"etcd not read", f.Etcd, PerUnit{}},
		{"client per op", f.Client.PerOp, 500 * time.Microsecond},
		{"write share of request time", round3(f.WriteShare), 0.6},
		{"no cost", (*Cost)(nil).Figures(s).Apiserver.Has, false},
		{"nothing to divide by", c.Figures(Summary{Seconds: 2}).Apiserver.PerWrite, time.Duration(0)},
		{"no background measured: no net figure", f.ApiserverNet.Has, false},
		// 0.1 cores of background over the 2 s window: 0.2 s of the 1 s.
		{"background cores", round3(withIdle(c, 0.05, 0.5).Figures(s).Background), 0.1},
		{"apiserver net per successful write", withIdle(c, 0.05, 0.5).Figures(s).ApiserverNet.PerWrite, 4 * time.Millisecond},
		{"gross beside it unchanged", withIdle(c, 0.05, 0.5).Figures(s).Apiserver.PerWrite, 5 * time.Millisecond},
		// A background above the window's CPU (the machine changed) nets 0.
		{"net never below 0", withIdle(c, 1, 1).Figures(s).ApiserverNet, PerUnit{Has: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// withIdle is c with an apiserver background of cpu seconds over an idle
// interval of seconds.
func withIdle(c *Cost, cpu, seconds float64) *Cost {
	d := *c
	d.ApiserverIdle = &IdleCPU{Seconds: seconds, CPUSeconds: cpu}
	return &d
}

func TestVerbTimeQuantile(t *testing.T) {
	v := VerbTime{Requests: 100, Buckets: []metrics.BucketCount{{UpperBound: 0.005, Count: 40}, {UpperBound: 0.025, Count: 90}, {UpperBound: 0.05, Count: 95}}}
	for _, tc := range []struct {
		q     float64
		want  time.Duration
		above bool
	}{
		{0.2, 2500 * time.Microsecond, false}, // 20 of the first 40, in 0-5 ms
		{0.5, 9 * time.Millisecond, false},    // 10 of the 50 in 5-25 ms
		{0.9, 25 * time.Millisecond, false},
		{0.99, 50 * time.Millisecond, true}, // beyond the last bucket: a floor
	} {
		got, above, ok := v.Quantile(tc.q)
		if !ok || got.Round(time.Microsecond) != tc.want || above != tc.above {
			t.Errorf("q %g: %v above %v ok %v, want %v above %v", tc.q, got, above, ok, tc.want, tc.above)
		}
	}
	if _, _, ok := (VerbTime{Requests: 3}).Quantile(0.5); ok {
		t.Error("no buckets, yet an estimate")
	}
}
