package text

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// p99.9 of 590 ops is the slowest (41.0ms): the rounded rank said the
// second slowest (12.1ms), leaving 589 of 590 (99.83%) at or below it.
// The summary table says what such a percentile is.
func TestSmallSampleSummary(t *testing.T) {
	r := resultstest.SmallSample(t)
	if got, want := r.Summary.Latency.P999, 41023*time.Microsecond; got != want {
		t.Errorf("p99.9 of 590 ops = %s, want the slowest op, %s (41.0ms's bucket)", got, want)
	}
	h, _, err := r.Measurements.Histogram(results.HistOp)
	if err != nil {
		t.Fatal(err)
	}
	if old := time.Duration(h.ValueAtQuantile(99.9)) * time.Microsecond; old != 12103*time.Microsecond {
		t.Errorf("the rounded rank's p99.9 = %s, want 12.103ms (12.1ms's bucket): the figure this test guards against", old)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, r); err != nil {
		t.Fatal(err)
	}
	if want := "p99.9 of 590 ops = the slowest op (fewer than 5 ops beyond: weakly supported)"; !strings.Contains(buf.String(), want) {
		t.Errorf("the summary does not say %q:\n%s", want, buf.String())
	}
	golden.Check(t, "table-small-sample.golden", buf.Bytes())

	// 80 ops: p99 is the slowest, and the one-line says so.
	few := resultstest.Latencies(t, []time.Duration{79: 41 * time.Millisecond})
	if got, want := OneLine(few), "p99 41.0ms (of 80 ops = the slowest op)"; !strings.Contains(got, want) {
		t.Errorf("one-line %q lacks %q", got, want)
	}
	if got := OneLine(r); strings.Contains(got, "slowest") {
		t.Errorf("one-line %q flags p99 of 590 ops, which has 5 ops beyond it", got)
	}
}
