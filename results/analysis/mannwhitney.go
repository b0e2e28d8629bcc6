package analysis

import (
	"math"
	"sort"
)

// MannWhitney returns the two-sided p-value of the Mann-Whitney U test that
// samples a and b come from the same distribution: exact for small samples
// such as a gate's, ties included, else the normal approximation. It is 1
// when either sample is empty.
func MannWhitney(a, b []float64) float64 {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	// Rank the pooled samples, ties sharing their mean rank.
	type obs struct {
		v     float64
		fromA bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range a {
		all = append(all, obs{v, true})
	}
	for _, v := range b {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	ranks := make([]float64, len(all))
	var rankA, tieTerm float64
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		for k := i; k < j; k++ {
			ranks[k] = float64(i+j+1) / 2 // ranks i+1..j, averaged
			if all[k].fromA {
				rankA += ranks[k]
			}
		}
		if t := float64(j - i); t > 1 {
			ties = true
			tieTerm += t*t*t - t
		}
		i = j
	}
	u := rankA - float64(n1*(n1+1))/2
	switch {
	case !ties && n1*n2 <= 2500:
		return exactU(u, n1, n2)
	case ties && n1+n2 <= maxEnumerated:
		return exactTiedU(u, n1, ranks)
	}
	n := float64(n1 + n2)
	mean := float64(n1*n2) / 2
	sd := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - tieTerm/(n*(n-1))))
	if sd == 0 {
		return 1
	}
	z := (math.Abs(u-mean) - 0.5) / sd
	return math.Min(1, math.Erfc(math.Max(z, 0)/math.Sqrt2))
}

// exactU is the two-sided p-value of U for samples of n1 and n2 without
// ties, from the exact distribution of U: the count of arrangements with
// each U, built up one observation at a time.
func exactU(u float64, n1, n2 int) float64 {
	// counts[i][j][k]: arrangements of i a's and j b's with U = k; only
	// the previous row of i is kept.
	maxU := n1 * n2
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // no a's: U = 0
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		for j := range cur {
			cur[j] = make([]float64, maxU+1)
			for k := 0; k <= maxU; k++ {
				// The largest observation is an a (it beats j b's) or a b.
				if k >= j {
					cur[j][k] += prev[j][k-j]
				}
				if j > 0 {
					cur[j][k] += cur[j-1][k]
				}
			}
		}
		prev = cur
	}
	dist := prev[n2]
	var total, tail float64
	lo := math.Min(u, float64(maxU)-u)
	for k, c := range dist {
		total += c
		if float64(k) <= lo {
			tail += c
		}
	}
	return math.Min(1, 2*tail/total)
}

// maxEnumerated bounds the pooled samples whose splits exactTiedU
// enumerates: C(20,10) = 184,756 splits at most.
const maxEnumerated = 20

// exactTiedU is the two-sided p-value of U when the pooled samples have
// ties: the share of the ways to choose n1 of the pooled mid-ranks whose U
// is at least as far from its mean as u.
func exactTiedU(u float64, n1 int, ranks []float64) float64 {
	n := len(ranks)
	mean := float64(n1*(n-n1)) / 2
	far := math.Abs(u-mean) - 1e-9
	offset := float64(n1*(n1+1)) / 2
	var total, extreme float64
	var choose func(from, left int, sum float64)
	choose = func(from, left int, sum float64) {
		if left == 0 {
			total++
			if math.Abs(sum-offset-mean) >= far {
				extreme++
			}
			return
		}
		for i := from; i <= n-left; i++ {
			choose(i+1, left-1, sum+ranks[i])
		}
	}
	choose(0, n1, 0)
	return math.Min(1, extreme/total)
}
