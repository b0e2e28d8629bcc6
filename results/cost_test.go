package results

import (
	"math"
	"testing"
	"time"
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
		{"lost share of write time", round3(f.LostShare), 0.8},
		// 4.8 s of 10 s of request time on 409s: 0.48 s CPU over 800.
		{"per 409", f.ApiserverPerConflict.Round(time.Microsecond), 600 * time.Microsecond},
		{"no cost", (*Cost)(nil).Figures(s).Apiserver.Has, false},
		{"nothing to divide by", c.Figures(Summary{Seconds: 2}).Apiserver.PerWrite, time.Duration(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
