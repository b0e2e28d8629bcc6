package analysis

import (
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results"
)

// Samples without noise are said to have none, not "changes under 0
// cannot be told from noise".
func TestNoiseWordsWithoutNoise(t *testing.T) {
	got := noiseWords(results.UnitCount, decision{tested: true}, []float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0})
	if strings.Contains(got, "under 0") || !strings.Contains(got, "5 samples a side") {
		t.Errorf("noiseWords = %q", got)
	}
	got = noiseWords(results.UnitDuration, decision{tested: true, noise: 2e6}, []float64{1e7, 1e7}, []float64{1e7, 1e7, 1e7})
	if !strings.Contains(got, "changes under 20.0% cannot be told from noise") || !strings.Contains(got, "2 and 3 samples") {
		t.Errorf("noiseWords = %q", got)
	}
}
