package metrics

import (
	"math/big"
	"sort"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Percentiles returns the nearest-rank percentiles qs of h (fractions:
// 0.999 is p99.9), in the order asked: for each q the smallest recorded
// value v such that at least a share q of the values are at or below v,
// so never fewer than q of them. Values within one HDR bucket are
// equivalent; v is reported as the highest value of its bucket, as
// HdrHistogram reports a value (so q = 1 gives h.Max()). An empty h gives
// zeros.
//
// It is the one place kb-bench computes a percentile of a histogram:
// hdrhistogram-go's ValueAtQuantile rounds the rank half up and so can
// report a value with fewer than q of the values at or below it.
func Percentiles(h *hdrhistogram.Histogram, qs ...float64) []int64 {
	out := make([]int64, len(qs))
	// steps are the non-empty buckets in value order, with the count of
	// values at or below each.
	type step struct{ atOrBelow, value int64 }
	var steps []step
	var n int64
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			n += b.Count
			steps = append(steps, step{n, b.To})
		}
	}
	if n == 0 {
		return out
	}
	for i, q := range qs {
		k := Rank(q, n)
		j := sort.Search(len(steps), func(j int) bool { return steps[j].atOrBelow >= k })
		out[i] = steps[j].value
	}
	return out
}

// Rank is the nearest rank of percentile q among n values: the smallest k
// (1 <= k <= n) with k >= q*n, the position of the percentile in the
// values sorted from the smallest. q is taken as the shortest decimal that
// prints as q, exactly (0.999 is 999/1000, so p99.9 of 1,000 values is the
// 999th, never the 1,000th by a rounding error). q <= 0 gives 1, q >= 1
// gives n, and n <= 0 gives 0.
func Rank(q float64, n int64) int64 {
	switch {
	case n <= 0:
		return 0
	case !(q > 0): // NaN too
		return 1
	case q >= 1:
		return n
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(q, 'g', -1, 64))
	if !ok { // a finite float always prints as a decimal Rat reads
		return n
	}
	r.Mul(r, new(big.Rat).SetInt64(n))
	k := new(big.Int).Quo(r.Num(), r.Denom())
	if !r.IsInt() {
		k.Add(k, big.NewInt(1))
	}
	return min(max(k.Int64(), 1), n)
}
