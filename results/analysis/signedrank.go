package analysis

import (
	"cmp"
	"math"
	"slices"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
)

// SignedRank returns the two-sided p-value of the Wilcoxon signed-rank
// test that the differences d (one per pair of samples) are symmetric
// about 0. Zero differences are left out (Wilcoxon's rule). The p-value is
// exact for up to maxExactPairs differences, ties included, else the
// normal approximation. It is 1 when no difference is left.
func SignedRank(d []float64) float64 {
	var abs []float64
	var positive []bool
	for _, v := range d {
		if v != 0 {
			abs, positive = append(abs, math.Abs(v)), append(positive, v > 0)
		}
	}
	n := len(abs)
	if n == 0 {
		return 1
	}
	// Doubled mid-ranks of |d|, integers even with ties.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(abs[a], abs[b]) })
	ranks := make([]int, n) // 2 x the mid-rank
	var tieTerm float64
	for i := 0; i < n; {
		j := i
		for j < n && abs[order[j]] == abs[order[i]] {
			j++
		}
		for k := i; k < j; k++ {
			ranks[order[k]] = i + j + 1 // 2 x (i+1 + j)/2
		}
		if t := float64(j - i); t > 1 {
			tieTerm += t*t*t - t
		}
		i = j
	}
	var wPlus, total int // doubled
	for i, r := range ranks {
		if positive[i] {
			wPlus += r
		}
		total += r
	}
	if n > maxExactPairs {
		nf := float64(n)
		mean := nf * (nf + 1) / 4
		sd := math.Sqrt(nf*(nf+1)*(2*nf+1)/24 - tieTerm/48)
		if sd == 0 {
			return 1
		}
		z := (math.Abs(float64(wPlus)/2-mean) - 0.5) / sd
		return math.Min(1, math.Erfc(math.Max(z, 0)/math.Sqrt2))
	}
	// counts[s]: the sign assignments whose positive ranks sum to s.
	counts := make([]float64, total+1)
	counts[0] = 1
	sum := 0
	for _, r := range ranks {
		sum += r
		for s := sum; s >= r; s-- {
			counts[s] += counts[s-r]
		}
	}
	// The distribution is symmetric about total/2: a p-value is the share
	// of assignments at least as far from it as wPlus.
	far := math.Abs(float64(2*wPlus - total))
	var all, extreme float64
	for s, c := range counts {
		all += c
		if math.Abs(float64(2*s-total)) >= far {
			extreme += c
		}
	}
	return math.Min(1, extreme/all)
}

// maxExactPairs bounds the differences whose exact signed-rank
// distribution SignedRank builds (a few thousand sums at most).
const maxExactPairs = 60

// minPairedP is the smallest two-sided p-value n pairs can give the
// signed-rank test: every pair the same way, 2/2^n.
func minPairedP(n int) float64 { return 2 / math.Pow(2, float64(n)) }

// minPairs is the fewest pairs the signed-rank test can find significant
// (6: 2/2^6 = 0.031; 5 pairs give at best 0.0625).
func minPairs() int {
	n := 1
	for minPairedP(n) > Alpha {
		n++
	}
	return n
}

// Pairs are the baseline's and the candidate's samples matched in the
// order they ran, when the two sides ran as interleaved pairs (kb-bench
// run --baseline-with or --baseline-spec: each pair in an order drawn at
// random, so that which of a pair met a slow moment is a coin toss; older
// runs' A B, B A, A B ... pair alike): sample i of
// each side began before either side's sample i+1, so a pair shared the
// machine's moment, and a slowdown hits both of a pair. Base and Cand are
// indexes into the sides, pair by pair.
type Pairs struct {
	Base, Cand []int
}

// Len is the number of pairs.
func (p *Pairs) Len() int {
	if p == nil {
		return 0
	}
	return len(p.Base)
}

// InterleavedPairs matches base's samples with cand's when, in the order
// they began, they fall two by two, one of each side; nil when they do
// not (results of another time, sides of different sizes, a sample left
// out).
func InterleavedPairs(base, cand []*results.Result) *Pairs {
	if len(base) == 0 || len(base) != len(cand) {
		return nil
	}
	type sample struct {
		r      *results.Result
		i      int
		isBase bool
	}
	var all []sample
	for i, r := range base {
		all = append(all, sample{r, i, true})
	}
	for i, r := range cand {
		all = append(all, sample{r, i, false})
	}
	if slices.ContainsFunc(all, func(s sample) bool { return s.r.Started.IsZero() }) {
		return nil
	}
	slices.SortStableFunc(all, func(a, b sample) int { return a.r.Started.Compare(b.r.Started) })
	p := &Pairs{}
	for k := 0; k < len(all); k += 2 {
		a, b := all[k], all[k+1]
		if a.isBase == b.isBase || a.r.Started.Equal(b.r.Started) ||
			k+2 < len(all) && !b.r.Started.Before(all[k+2].r.Started) {
			return nil
		}
		if !a.isBase {
			a, b = b, a
		}
		p.Base, p.Cand = append(p.Base, a.i), append(p.Cand, b.i)
	}
	return p
}

// pairedDiffs are the pairs' differences, candidate against baseline: the
// log of their ratio when every value is above 0 (a change of 10% weighs
// the same on a fast moment as on a slow one), else their difference.
func pairedDiffs(p *Pairs, base, cand []float64) []float64 {
	logs := !slices.ContainsFunc(slices.Concat(base, cand), func(v float64) bool { return v <= 0 })
	d := make([]float64, p.Len())
	for i := range d {
		b, c := base[p.Base[i]], cand[p.Cand[i]]
		if logs {
			d[i] = math.Log(c / b)
		} else {
			d[i] = c - b
		}
	}
	return d
}

// Test is which test judged a difference, as a verdict or a comparison
// names it.
type Test struct {
	// Pairs is the number of interleaved pairs the signed-rank test
	// judged; 0: the Mann-Whitney U test judged the sides as two samples.
	Pairs int `json:"pairs,omitempty"`
}

// String names the test.
func (t Test) String() string {
	if t.Pairs > 0 {
		return "Wilcoxon signed-rank test over " + words.Plural(t.Pairs, "interleaved pair")
	}
	return "Mann-Whitney U test"
}

// chooseTest is the signed-rank test over p when there are enough pairs
// for it to find a difference (it then compares each pair, of one moment
// of the machine, not the spread of the whole run); else Mann-Whitney U.
func chooseTest(p *Pairs) Test {
	if p.Len() >= minPairs() {
		return Test{Pairs: p.Len()}
	}
	return Test{}
}

// pValue is the two-sided p-value of t on base against cand (p: their
// pairs when t is paired).
func (t Test) pValue(p *Pairs, base, cand []float64) float64 {
	if t.Pairs > 0 {
		return SignedRank(pairedDiffs(p, base, cand))
	}
	return MannWhitney(base, cand)
}
