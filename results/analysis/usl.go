package analysis

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"

	"github.com/kb-bench/kb-bench/results"
)

// MinUSLPoints is the fewest points FitUSL fits: more than the model's
// three coefficients, or any three points fit exactly and R² says nothing.
const MinUSLPoints = 4

// FitUSL fits the USL to throughput x measured at concurrency n by least
// squares, with λ > 0, 0 ≤ σ ≤ 1 and κ ≥ 0. For given σ and κ the best λ
// has a closed form, so the search (gonum's Nelder-Mead, from several
// starts) is over σ and κ only.
func FitUSL(n, x []float64) (*results.USL, error) {
	if len(n) != len(x) {
		return nil, errors.New("the USL fit needs as many throughputs as concurrencies")
	}
	if len(n) < MinUSLPoints {
		return nil, fmt.Errorf("%d points are too few to fit the USL's three coefficients: sweep at least %d values", len(n), MinUSLPoints)
	}
	for i := range n {
		if !(n[i] >= 1) || math.IsInf(n[i], 0) || !(x[i] >= 0) || math.IsInf(x[i], 0) {
			return nil, fmt.Errorf("point %d (N=%g, X=%g) cannot be fitted: N must be at least 1 and X a throughput", i+1, n[i], x[i])
		}
	}
	// Scale N so that κ's search steps are of the same order as σ's.
	nMax := 0.0
	for _, v := range n {
		nMax = math.Max(nMax, v)
	}
	clamp := func(p []float64) (sigma, kappa float64) {
		return math.Min(math.Max(p[0], 0), 1), math.Max(p[1], 0) / (nMax * nMax)
	}
	lambda := func(sigma, kappa float64) float64 {
		var num, den float64
		for i := range n {
			g := n[i] / (1 + sigma*(n[i]-1) + kappa*n[i]*(n[i]-1))
			num += x[i] * g
			den += g * g
		}
		return num / den
	}
	sse := func(p []float64) float64 {
		sigma, kappa := clamp(p)
		u := results.USL{Lambda: lambda(sigma, kappa), Sigma: sigma, Kappa: kappa}
		var s float64
		for i := range n {
			d := x[i] - u.At(n[i])
			s += d * d
		}
		// Outside the bounds the clamped point is the same; a small slope
		// leads the simplex back in.
		return s * (1 + math.Abs(p[0]-sigma) + math.Max(-p[1], 0) + math.Max(p[0]-1, 0))
	}
	var best []float64
	bestSSE := math.Inf(1)
	for _, start := range [][]float64{{0.05, 0.01}, {0.5, 0.1}, {0.9, 1}, {0.99, 10}, {0.2, 0}} {
		res, err := optimize.Minimize(optimize.Problem{Func: sse}, start, &optimize.Settings{
			MajorIterations: 2000,
			Converger:       &optimize.FunctionConverge{Absolute: 1e-12, Relative: 1e-12, Iterations: 200},
		}, &optimize.NelderMead{})
		if err != nil && res == nil {
			continue
		}
		if res.F < bestSSE {
			bestSSE, best = res.F, res.X
		}
	}
	if best == nil {
		return nil, errors.New("the USL fit did not converge")
	}
	sigma, kappa := clamp(best)
	u := &results.USL{Lambda: lambda(sigma, kappa), Sigma: sigma, Kappa: kappa, Points: len(n)}
	var mean, ssTot, ssRes float64
	for _, v := range x {
		mean += v / float64(len(x))
	}
	for i := range n {
		ssTot += (x[i] - mean) * (x[i] - mean)
		d := x[i] - u.At(n[i])
		ssRes += d * d
	}
	u.R2 = 1
	if ssTot > 0 {
		u.R2 = 1 - ssRes/ssTot
	}
	u.Poor = u.R2 < results.PoorFit
	if u.Kappa > 0 {
		u.PeakN = math.Sqrt((1 - u.Sigma) / u.Kappa)
		u.PeakX = u.At(math.Max(u.PeakN, 1))
	}
	return u, nil
}
