package analysis_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

func TestSweepAnalysis(t *testing.T) {
	sw := resultstest.Sweep()
	analysis.Analyze(sw)
	update, retry := sw.Series[0], sw.Series[1]
	if update.SLO.Within != 64 || update.SLO.Breach != 128 || update.SLO.ConflictRate != 1-1.0/64 {
		t.Errorf("update SLO answer %+v: p99 is 640ms at 64 writers and 1.28s at 128", update.SLO)
	}
	if retry.SLO.Within != 64 || retry.SLO.Breach != 0 {
		t.Errorf("retry SLO answer %+v: every p99 is within 1s", retry.SLO)
	}
	if update.Model == nil || update.Model.Poor || update.Model.PeakN < 18 || update.Model.PeakN > 26 {
		t.Errorf("update's points follow a USL curve peaking at 22 writers; fit %+v (%s)", update.Model, update.ModelNote)
	}
	// Throughput 100/N is the USL with σ=1, κ=1: it falls from one writer on.
	if m := retry.Model; m == nil || m.Poor || m.Sigma < 0.99 || m.Kappa < 0.9 || m.Kappa > 1.1 || m.PeakN != 0 {
		t.Errorf("retry fit %+v", retry.Model)
	}
	for _, want := range []string{"at most 1291 successful writes/s (at 16 writers)", "a peak of 1338/s at ~22 writers", "p99 under 1s up to 64 writers (98.4% conflicts there), over it from 128 writers", "the USL fit predicts a peak"} {
		if !strings.Contains(update.Summary, want) {
			t.Errorf("update summary lacks %q: %s", want, update.Summary)
		}
	}
	for _, want := range []string{"at most 100 successful writes/s (at 1 writer)", "retries give up from 64 writers (25.0% of operations)", "p99 under 1s at every point up to 64 writers", "stopped early: gaveUp > 0"} {
		if !strings.Contains(retry.Summary, want) {
			t.Errorf("retry summary lacks %q: %s", want, retry.Summary)
		}
	}
}

// A point's cost is the medians of its samples'; the series says what its
// last point costs in cores, and how much more per write than its first.
func TestSweepCost(t *testing.T) {
	sample := func(writers, apiserver float64, etcd bool) *results.Result {
		r := withCost("s", 100, apiserver, 1)
		if !etcd {
			r.Cost.Etcd = results.ProcessCost{Reason: "not readable"}
		}
		r.Summary.WriteThroughput = 10
		return r
	}
	one := analysis.NewSweepPoint(1, "w1", []*results.Result{sample(1, 0.1, true), sample(1, 0.2, true), sample(1, 0.3, true)})
	if c := one.Cost; c == nil || c.ApiserverPerWrite != 2*time.Millisecond || c.ApiserverCores != 0.02 || !c.HasEtcd || c.EtcdPerWrite != 10*time.Millisecond {
		t.Errorf("point cost %+v: want the medians (2 ms a write, 0.02 cores, etcd 10 ms)", c)
	}
	many := analysis.NewSweepPoint(64, "w64", []*results.Result{sample(64, 1.3, false)})
	if c := many.Cost; c == nil || c.HasEtcd || c.EtcdPerWrite != 0 {
		t.Errorf("point cost %+v: etcd was not read", c)
	}
	old := analysis.NewSweepPoint(8, "w8", []*results.Result{sample(8, 1, true), {RunID: "old"}})
	if old.Cost != nil {
		t.Errorf("a point with a sample without cost has cost %+v", old.Cost)
	}
	sw := &results.Sweep{Axis: "writers", SLO: time.Second, Series: []results.SweepSeries{{Points: []results.SweepPoint{one, many}}}}
	analysis.Analyze(sw)
	want := "at 64 writers it costs 0.13 apiserver cores for 10 successful writes/s (13.0ms of apiserver CPU per write, 6.5x that at 1 writer)"
	if !strings.Contains(sw.Series[0].Summary, want) {
		t.Errorf("summary %q lacks %q", sw.Series[0].Summary, want)
	}
}

// CPU per write that grows as c·(1 + σ(N−1) + κN(N−1)) is fitted back.
func TestFitCost(t *testing.T) {
	n := []float64{1, 2, 4, 8, 16, 32, 64}
	y := make([]float64, len(n))
	for i, v := range n {
		y[i] = 0.0015 * (1 + 0.25*(v-1) + 0.002*v*(v-1))
	}
	f, err := analysis.FitCost(n, y)
	if err != nil {
		t.Fatal(err)
	}
	if f.C.Round(time.Microsecond) != 1500*time.Microsecond || math.Abs(f.Sigma-0.25) > 1e-6 || math.Abs(f.Kappa-0.002) > 1e-6 || f.R2 < 0.999 || f.Poor {
		t.Errorf("fit %+v, want c=1.5ms σ=0.25 κ=0.002", f)
	}
	// Cost that falls with writers has no USL shape: κ and σ stay 0, c is the mean.
	flat, err := analysis.FitCost([]float64{1, 2, 4, 8}, []float64{0.004, 0.003, 0.002, 0.001})
	if err != nil || flat.Sigma != 0 || flat.Kappa != 0 || flat.C.Round(time.Microsecond) != 2500*time.Microsecond || !flat.Poor {
		t.Errorf("falling cost: %+v %v, want c the mean, σ=κ=0 and a poor fit", flat, err)
	}
	if _, err := analysis.FitCost([]float64{1, 8, 64}, []float64{1, 2, 3}); err == nil {
		t.Error("3 points fitted")
	}
}

// A sweep point holds the medians of the scenario figures every sample
// holds, a bool the most samples' answer; one a sample lacks is left out.
func TestSweepPointFigures(t *testing.T) {
	fig := func(r *results.Result, v float64, yes float64, extra bool) *results.Result {
		r.Figures = []results.Figure{{Name: "rejected", Value: v, Unit: results.UnitCount, Better: results.BetterLower, Help: "h"},
			{Name: "released", Value: yes, Unit: results.UnitBool, Help: "h"}}
		if extra {
			r.Figures = append(r.Figures, results.Figure{Name: "once", Value: 1, Unit: results.UnitCount, Help: "h"})
		}
		return r
	}
	sample := func() *results.Result { return withCost("s", 100, 0.1, 1) }
	p := analysis.NewSweepPoint(1, "w1", []*results.Result{fig(sample(), 10, 1, true), fig(sample(), 30, 0, false), fig(sample(), 20, 1, false)})
	var got []string
	for _, f := range p.Figures {
		got = append(got, f.Key()+" "+f.Text())
	}
	if strings.Join(got, ", ") != "rejected 20, released yes" {
		t.Errorf("point figures: %v", got)
	}
}
