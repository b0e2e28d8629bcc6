package resultstest

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The decoder reads what hdrhistogram-go writes, in kb-bench's range (1µs
// to an hour, 3 digits) and another, bucket by bucket.
func TestDecodeMatchesTheLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 21))
	for _, h := range []*hdrhistogram.Histogram{hdrhistogram.New(1, 3_600_000_000, 3), hdrhistogram.New(1000, 10_000_000, 2)} {
		for range 5000 {
			_ = h.RecordValue(h.LowestTrackableValue() + rng.Int64N(2_000_000))
		}
		_ = h.RecordValues(h.HighestTrackableValue(), 3)
		enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(string(enc))
		if err != nil {
			t.Fatal(err)
		}
		if got.Total() != h.TotalCount() {
			t.Fatalf("decoded %d values, want %d", got.Total(), h.TotalCount())
		}
		var i int
		for _, b := range h.Distribution() {
			if b.Count != 0 && (got.Counts[i] != b.Count || got.highest(i) != b.To) {
				t.Fatalf("index %d: count %d highest %d, want %d %d", i, got.Counts[i], got.highest(i), b.Count, b.To)
			}
			i++
		}
		if got.NearestRank(1000) != h.Max() {
			t.Errorf("p100 %d, want the max %d", got.NearestRank(1000), h.Max())
		}
	}
}

// The check passes on results kb-bench writes, and fails on a result
// whose percentiles are the rounded rank's (the previous version's
// open-loop golden, whose p99 and p99.9 understate).
func TestCheckPercentiles(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // in the error; none: it passes
	}{
		{"closed-loop-result.json.golden", nil},
		{"open-loop-result.json.golden", nil},
		{"v1alpha2-result.json", []string{"summary op p99.9: reported 1.035775s, nearest rank of 2986 values 1.041919s", "summary op p99: reported 89.471ms"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join("..", "store", "testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckPercentiles(doc)
			if len(tc.want) == 0 && err != nil {
				t.Errorf("a result kb-bench writes fails the check: %v", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("check error %v, want one saying %q", err, w)
				}
			}
		})
	}
}
