package analysis_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// TestFitUSLRecoversKnownCoefficients fits throughput generated from known
// coefficients with 2% multiplicative noise, at the writer counts a sweep
// uses, and expects them back: λ within 5%, σ within 0.02, κ within 25%
// (κ is small and only the largest N see it), R² above 0.98.
func TestFitUSLRecoversKnownCoefficients(t *testing.T) {
	for _, want := range []results.USL{
		{Lambda: 180, Sigma: 0.05, Kappa: 0.002},   // peaks near 22 writers
		{Lambda: 90, Sigma: 0.3, Kappa: 0.0005},    // peaks near 37
		{Lambda: 1000, Sigma: 0.02, Kappa: 0.0001}, // peaks near 99
	} {
		rng := rand.New(rand.NewPCG(1, uint64(want.Lambda)))
		var n, x []float64
		for _, w := range []float64{1, 2, 4, 8, 16, 32, 64, 128, 256} {
			for range 3 {
				n = append(n, w)
				x = append(x, want.At(w)*(1+0.02*rng.NormFloat64()))
			}
		}
		got, err := analysis.FitUSL(n, x)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Lambda/want.Lambda-1) > 0.05 || math.Abs(got.Sigma-want.Sigma) > 0.02 ||
			math.Abs(got.Kappa/want.Kappa-1) > 0.25 || got.R2 < 0.98 || got.Poor {
			t.Errorf("fit of %v gave %v", want, got)
		}
		wantPeak := math.Sqrt((1 - want.Sigma) / want.Kappa)
		if math.Abs(got.PeakN/wantPeak-1) > 0.15 {
			t.Errorf("peak N* %.1f, want about %.1f", got.PeakN, wantPeak)
		}
	}
}

// TestFitUSLFlagsAPoorFit: throughput that jumps about with no relation to
// N is not a USL curve, and the fit must say so instead of predicting.
func TestFitUSLFlagsAPoorFit(t *testing.T) {
	n := []float64{1, 2, 4, 8, 16, 32, 64}
	x := []float64{100, 20, 180, 10, 150, 30, 170}
	got, err := analysis.FitUSL(n, x)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Poor || got.R2 >= results.PoorFit {
		t.Errorf("fit %v of scattered throughput is not flagged poor", got)
	}
}

func TestFitUSLRefusesTooFewPoints(t *testing.T) {
	if _, err := analysis.FitUSL([]float64{1, 2, 4}, []float64{10, 18, 30}); err == nil {
		t.Error("three points fitted: any three fit the three coefficients exactly")
	}
	if _, err := analysis.FitUSL([]float64{0, 2, 4, 8}, []float64{10, 18, 30, 40}); err == nil {
		t.Error("N=0 fitted")
	}
}

// A contended single object: throughput falls from one writer on (σ near
// 1), as kb-bench measures on one ConfigMap; the peak is then at N=1.
func TestFitUSLFallingThroughput(t *testing.T) {
	want := results.USL{Lambda: 200, Sigma: 0.95, Kappa: 0.001}
	var n, x []float64
	for _, w := range []float64{1, 2, 4, 8, 16, 32, 64, 128} {
		n, x = append(n, w), append(x, want.At(w))
	}
	got, err := analysis.FitUSL(n, x)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Lambda/want.Lambda-1) > 0.01 || math.Abs(got.Sigma-want.Sigma) > 0.01 || got.R2 < 0.999 {
		t.Errorf("fit of %v gave %v", want, got)
	}
}
