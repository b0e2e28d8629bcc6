package results

import (
	"fmt"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
)

// PoorFit is the R² below which a fitted model is reported as poor rather
// than trusted.
const PoorFit = 0.9

// USL is Gunther's Universal Scalability Law fitted to throughput X against
// concurrency N: X(N) = λN / (1 + σ(N−1) + κN(N−1)). λ is the throughput of
// one writer, σ the contention (the serialised share of the work), κ the
// coherency cost (the crosstalk that makes throughput fall as N grows).
type USL struct {
	Lambda float64 `json:"lambda"`
	Sigma  float64 `json:"sigma"`
	Kappa  float64 `json:"kappa"`
	// R2 is the coefficient of determination of the fit (1 is perfect);
	// Poor is set when it is below PoorFit, and the fit is then not to be
	// trusted for predictions.
	R2   float64 `json:"r2"`
	Poor bool    `json:"poor,omitempty"`
	// Points is how many (N, X) pairs were fitted.
	Points int `json:"points"`
	// PeakN is N* = sqrt((1−σ)/κ), the concurrency of the highest
	// throughput, and PeakX = X(N*); both 0 when κ is 0 (throughput then
	// never falls: it levels off at λ/σ).
	PeakN float64 `json:"peakN,omitempty"`
	PeakX float64 `json:"peakX,omitempty"`
}

// At is the model's throughput at concurrency n.
func (u USL) At(n float64) float64 {
	return u.Lambda * n / (1 + u.Sigma*(n-1) + u.Kappa*n*(n-1))
}

// String says the fit in one line.
func (u USL) String() string {
	s := fmt.Sprintf("λ=%.4g/s σ=%.3g κ=%.3g R²=%.3f", u.Lambda, u.Sigma, u.Kappa, u.R2)
	if u.Sigma >= 1 {
		// The fit keeps σ in [0, 1]: at 1 the writers are fully
		// serialised, as writes to one object are.
		s += " (σ at its bound of 1: more writers add no throughput, they take turns)"
	}
	if u.Poor {
		s += " (poor fit: not to be trusted)"
	}
	return s
}

// CostFit is the USL's shape fitted to the apiserver's CPU per successful
// write against writers: C(N) = c·(1 + σ(N−1) + κN(N−1)). Where the USL
// divides one writer's throughput by that factor, a write's cost grows by
// it: c is one writer's CPU per write, σ the share each further writer
// adds (409s and re-reads grow with the writers one object serialises),
// κ the crosstalk that grows with every pair of them.
type CostFit struct {
	// C is one writer's CPU per successful write.
	C     time.Duration `json:"c"`
	Sigma float64       `json:"sigma"`
	Kappa float64       `json:"kappa"`
	R2    float64       `json:"r2"`
	Poor  bool          `json:"poor,omitempty"`
	// Points is how many (N, CPU per write) pairs were fitted.
	Points int `json:"points"`
}

// At is the fitted CPU per successful write at n writers.
func (f CostFit) At(n float64) time.Duration {
	return time.Duration(float64(f.C) * (1 + f.Sigma*(n-1) + f.Kappa*n*(n-1)))
}

// String says the fit in one line.
func (f CostFit) String() string {
	s := fmt.Sprintf("c=%s σ=%.3g κ=%.3g R²=%.3f", words.Duration(f.C), f.Sigma, f.Kappa, f.R2)
	if f.Poor {
		s += " (poor fit: not to be trusted)"
	}
	return s
}
