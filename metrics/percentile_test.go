package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// histOf records values (µs) in a kb-bench histogram.
func histOf(t *testing.T, values ...int64) *hdrhistogram.Histogram {
	t.Helper()
	h := NewHistogram()
	for _, v := range values {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// upTo is 1, 2, ..., n.
func upTo(n int64) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i) + 1
	}
	return v
}

// The standard percentiles of small histograms, by hand: the nearest rank
// of q among n values is ceil(q*n). Values below 2048µs are exact in a
// 3-digit HDR histogram, so the value at a rank is the value itself.
func TestPercentilesByHand(t *testing.T) {
	qs := []float64{0.5, 0.9, 0.99, 0.999, 1}
	for _, tc := range []struct {
		name   string
		values []int64
		want   []int64 // at qs
	}{
		{"empty", nil, []int64{0, 0, 0, 0, 0}},
		{"1 value", []int64{7}, []int64{7, 7, 7, 7, 7}},
		// ceil(1)=1, ceil(1.8)=2.
		{"2 values", []int64{20, 10}, []int64{10, 20, 20, 20, 20}},
		// ceil(5)=5, ceil(9)=9, ceil(9.9)=10.
		{"10 values", upTo(10), []int64{5, 9, 10, 10, 10}},
		// ceil(499.5)=500, ceil(899.1)=900, ceil(989.01)=990,
		// ceil(998.001)=999: the largest value (the rounded rank,
		// int(998.001+0.5)=998, would leave only 998 of 999 at or below).
		{"999 values", upTo(999), []int64{500, 900, 990, 999, 999}},
		// 999 of 1000 values at or below 999 is exactly 99.9%.
		{"1000 values", upTo(1000), []int64{500, 900, 990, 999, 1000}},
		// ceil(500.5)=501, ceil(900.9)=901, ceil(990.99)=991, ceil(999.999)=1000.
		{"1001 values", upTo(1001), []int64{501, 901, 991, 1000, 1001}},
		// 590 values: p99.9 is the slowest (rank ceil(589.41)=590); the
		// rounded rank reported the second slowest.
		{"590 values", upTo(590), []int64{295, 531, 585, 590, 590}},
		// Ties: 3 of 5 at or below 5 is 60% >= 50%; p90 needs 4.5 of 5.
		{"ties", []int64{5, 9, 5, 5, 5}, []int64{5, 9, 9, 9, 9}},
		{"all equal", []int64{42, 42, 42}, []int64{42, 42, 42, 42, 42}},
		// 99,970 to 100,031µs are one bucket (64µs wide): every
		// percentile is the bucket's highest value, as h.Max() is.
		{"one bucket", []int64{99970, 100000, 100031}, []int64{100031, 100031, 100031, 100031, 100031}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := histOf(t, tc.values...)
			got := Percentiles(h, qs...)
			if !slices.Equal(got, tc.want) {
				t.Errorf("p50, p90, p99, p99.9, p100 = %v, want %v", got, tc.want)
			}
			if got[len(got)-1] != h.Max() {
				t.Errorf("p100 %d is not the histogram's max %d", got[len(got)-1], h.Max())
			}
		})
	}
}

// Percentiles answers in the order asked, whatever it is.
func TestPercentilesOrder(t *testing.T) {
	h := histOf(t, upTo(10)...)
	if got, want := Percentiles(h, 1, 0.1, 0.5), []int64{10, 1, 5}; !slices.Equal(got, want) {
		t.Errorf("Percentiles(1, 0.1, 0.5) = %v, want %v", got, want)
	}
}

// Rank is exact where the product q*n in floating point is not.
func TestRank(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		n    int64
		want int64
	}{
		{0.07, 100, 7},  // 0.07*100 is 7.000000000000001 in float64
		{0.14, 100, 14}, // 14.000000000000002
		{0.29, 100, 29}, // 28.999999999999996
		{0.999, 1000, 999},
		{0.999, 590, 590},
		{0.999, 548, 548},
		{0.99, 2978, 2949},
		{0.5, 1, 1},
		{0.000001, 10, 1},
		{0, 10, 1},
		{-1, 10, 1},
		{math.NaN(), 10, 1},
		{1, 10, 10},
		{2, 10, 10},
		{0.5, 0, 0},
		{0.999999, math.MaxInt64, 9223362813482738953}, // no overflow: ceil(0.999999 * (2^63-1))
	} {
		if got := Rank(tc.q, tc.n); got != tc.want {
			t.Errorf("Rank(%v, %d) = %d, want %d", tc.q, tc.n, got, tc.want)
		}
	}
}

// For random data, every percentile has at least q of the values at or
// below it and fewer than q strictly below its bucket (values HDR holds
// equivalent to it count as equal), and it is the value an independent
// sort of the raw values finds at rank ceil(q*n).
func TestPercentilesProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2026))
	// Shares in millionths, so the test's arithmetic is exact integers.
	ppms := []int64{1, 1000, 100000, 500000, 900000, 990000, 999000, 999900, 999999, 1000000}
	for trial := range 300 {
		n := 1 + rng.IntN(3000)
		values := make([]int64, n)
		for i := range values {
			switch rng.IntN(3) {
			case 0: // exact small values, many ties
				values[i] = 1 + rng.Int64N(50)
			case 1: // a long tail across many buckets
				values[i] = 1 + int64(math.Exp(rng.Float64()*18))
			default:
				values[i] = 1000 + rng.Int64N(200000)
			}
		}
		h := histOf(t, values...)
		for k := 0; k < 10; k++ {
			ppms = append(ppms, 1+rng.Int64N(1000000))
		}
		qs := make([]float64, len(ppms))
		for i, p := range ppms {
			qs[i] = float64(p) / 1e6
		}
		got := Percentiles(h, qs...)
		sorted := slices.Clone(values)
		slices.Sort(sorted)
		for i, v := range got {
			var atOrBelow, below int64
			for _, x := range values {
				if x <= v {
					atOrBelow++
				}
				if x < v && !h.ValuesAreEquivalent(x, v) {
					below++
				}
			}
			need := ppms[i] * int64(n) // q*n, in millionths
			if atOrBelow*1e6 < need {
				t.Fatalf("trial %d, n %d: p%v = %d has %d values at or below it, fewer than q*n", trial, n, 100*qs[i], v, atOrBelow)
			}
			if below*1e6 >= need {
				t.Fatalf("trial %d, n %d: p%v = %d has %d values strictly below its bucket, q*n or more: a smaller value would do", trial, n, 100*qs[i], v, below)
			}
			rank := (need + 1e6 - 1) / 1e6
			if x := sorted[rank-1]; !h.ValuesAreEquivalent(v, x) || h.ValuesAreEquivalent(v, v+1) {
				t.Fatalf("trial %d, n %d: p%v = %d, want the highest value of the bucket of the %dth smallest value, %d", trial, n, 100*qs[i], v, rank, x)
			}
		}
		ppms = ppms[:10]
	}
}
