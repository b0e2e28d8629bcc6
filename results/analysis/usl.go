package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"
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
	nMax := slices.Max(n)
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
	// usl is the model at the search's point p, and its squared residuals.
	usl := func(p []float64) (*results.USL, float64) {
		sigma, kappa := clamp(p)
		u := &results.USL{Lambda: lambda(sigma, kappa), Sigma: sigma, Kappa: kappa, Points: len(n)}
		var s float64
		for i := range n {
			d := x[i] - u.At(n[i])
			s += d * d
		}
		return u, s
	}
	sse := func(p []float64) float64 {
		u, s := usl(p)
		// Outside the bounds the clamped point is the same; a small slope
		// leads the simplex back in.
		return s * (1 + math.Abs(p[0]-u.Sigma) + math.Max(-p[1], 0) + math.Max(p[0]-1, 0))
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
	u, ssRes := usl(best)
	u.R2, u.Poor = r2(x, ssRes)
	if u.Kappa > 0 {
		u.PeakN = math.Sqrt((1 - u.Sigma) / u.Kappa)
		u.PeakX = u.At(math.Max(u.PeakN, 1))
	}
	return u, nil
}

// FitCost fits the USL's shape to CPU per successful write y (seconds)
// at writers n: y = a + b(N−1) + dN(N−1), a > 0, b, d ≥ 0, by least
// squares over every subset of the coefficients held at 0 (the
// constrained optimum has some subset free and the rest at 0), then
// σ = b/a and κ = d/a.
func FitCost(n, y []float64) (*results.CostFit, error) {
	if len(n) != len(y) {
		return nil, errors.New("the cost fit needs as many figures as writer counts")
	}
	if len(n) < MinUSLPoints {
		return nil, fmt.Errorf("%d points are too few to fit the cost's three coefficients: sweep at least %d values", len(n), MinUSLPoints)
	}
	basis := func(v float64) [3]float64 { return [3]float64{1, v - 1, v * (v - 1)} }
	best, bestSSE := [3]float64{}, math.Inf(1)
	for mask := 1; mask < 8; mask += 2 { // odd: c > 0, one writer's cost is always in
		var idx []int
		for k := range 3 {
			if mask&(1<<k) != 0 {
				idx = append(idx, k)
			}
		}
		coef, ok := leastSquares(n, y, idx, basis)
		if !ok || !(coef[0] > 0 && coef[1] >= 0 && coef[2] >= 0) { // singular, or not feasible
			continue
		}
		var sse float64
		for i := range n {
			b := basis(n[i])
			d := y[i] - (coef[0]*b[0] + coef[1]*b[1] + coef[2]*b[2])
			sse += d * d
		}
		if sse < bestSSE {
			best, bestSSE = coef, sse
		}
	}
	if math.IsInf(bestSSE, 1) {
		return nil, errors.New("the cost fit found no coefficients of the USL's shape (CPU per write falls as writers grow)")
	}
	f := &results.CostFit{C: time.Duration(best[0] * float64(time.Second)), Sigma: best[1] / best[0], Kappa: best[2] / best[0], Points: len(n)}
	f.R2, f.Poor = r2(y, bestSSE)
	return f, nil
}

// r2 is the coefficient of determination of a fit to y whose squared
// residuals sum to sse, and whether it is below results.PoorFit.
func r2(y []float64, sse float64) (float64, bool) {
	var mean, ssTot float64
	for _, v := range y {
		mean += v / float64(len(y))
	}
	for _, v := range y {
		ssTot += (v - mean) * (v - mean)
	}
	r := 1.0
	if ssTot > 0 {
		r = 1 - sse/ssTot
	}
	return r, r < results.PoorFit
}

// leastSquares fits y by the coefficients idx of basis (the others 0);
// ok is false when they are singular.
func leastSquares(n, y []float64, idx []int, basis func(float64) [3]float64) (coef [3]float64, ok bool) {
	a := mat.NewDense(len(n), len(idx), nil)
	for p := range n {
		b := basis(n[p])
		for j, bj := range idx {
			a.Set(p, j, b[bj])
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(a, mat.NewVecDense(len(y), y)); err != nil {
		return coef, false
	}
	for j, bj := range idx {
		coef[bj] = x.AtVec(j)
	}
	return coef, true
}
