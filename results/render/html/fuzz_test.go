package html

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// craftedSweep is a sweep whose axis spans what a float64 holds: its
// report once ran out of memory in a tick loop that never advanced.
const craftedSweep = `{"apiVersion":"kb-bench.io/v1alpha2","kind":"Sweep","axis":"writers","slo":1000000000,
"series":[{"points":[{"value":-1.7e308,"dir":"a"},{"value":1,"dir":"b"},{"value":12,"dir":"c"},{"value":1.7e308,"dir":"d"}]}]}`

// FuzzReport reads a document as kb-bench report does (a result or a
// sweep, decoded and validated) and renders what it accepts, alone and
// compared with itself: whatever the bytes, no panic, and rendering ends
// (every loop over a document's values is bounded).
func FuzzReport(f *testing.F) {
	// Small seeds: a result or a sweep of a few points, quick to render
	// and to minimise, so that ten seconds of fuzzing explore.
	h := metrics.NewHistogram()
	for _, v := range []int64{900, 1200, 15000} {
		if err := h.RecordValue(v); err != nil {
			f.Fatal(err)
		}
	}
	enc, err := metrics.EncodeHistogram(h)
	if err != nil {
		f.Fatal(err)
	}
	r := &results.Result{RunID: "r", Workload: "counter: 2 writers", Series: []metrics.SeriesPoint{
		{At: time.Second, Span: time.Second, Ops: 3, P50: time.Millisecond, P99: 15 * time.Millisecond, Histogram: enc,
			Outcomes: map[string]int64{"success": 3}, Writes: map[string]int64{"success": 3, "conflict": 1}},
	}}
	r.Summary = results.Summary{Seconds: 1, Ops: 3, Successes: 3, Throughput: 3, WriteThroughput: 3, SuccessRatio: 1, ConflictRate: 0.25,
		AttemptsP50: 1, AttemptsP99: 2, AttemptsMax: 2, Latency: results.Latency{P50: time.Millisecond, P99: 15 * time.Millisecond}}
	r.Measurements = results.Measurements{Ops: 3, Attempts: []int64{0, 2, 1}, Histograms: map[string]string{results.HistOp: enc}}
	r.Figures = []results.Figure{{Name: "failoverTime", Labels: map[string]string{"quantile": "0.5"}, Value: 1e9, Unit: results.UnitDuration, Better: results.BetterLower, Help: "h"}}
	doc, err := results.Encode(r)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(doc)
	// A v1alpha4 result, whose details become figures when read.
	r.Figures = nil
	r.Details = json.RawMessage(`{"a":[{"b":1,"c-d":{"e":true}}],"f":"x"}`)
	if doc, err = results.Encode(r); err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.Replace(doc, []byte(results.APIVersion), []byte(results.PreFiguresAPIVersion), 1))
	sw := &results.Sweep{APIVersion: results.APIVersion, Kind: results.KindSweep, Axis: "writers", SLO: time.Second,
		Series: []results.SweepSeries{{Points: []results.SweepPoint{
			{Value: 1, Throughput: 300, WriteThroughput: 300, P99: 5 * time.Millisecond, ServerMatch: true},
			{Value: 4, Throughput: 500, WriteThroughput: 420, ConflictRate: 0.3, P99: 40 * time.Millisecond},
			{Value: 16, Throughput: 200, WriteThroughput: 90, ConflictRate: 0.9, P99: 2 * time.Second, LostUpdates: new(int64(3))},
			{Value: 64, Throughput: 80, WriteThroughput: 20, ConflictRate: 0.99, P99: 6 * time.Second, GaveUp: 4, GaveUpRatio: 0.5},
		}}}}
	analysis.Analyze(sw)
	b, err := json.Marshal(sw)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(craftedSweep))
	f.Fuzz(func(t *testing.T, data []byte) {
		var page Page
		if r, err := results.Decode(bytes.NewReader(data)); err == nil {
			page.Runs = []Run{{Label: "a", Results: []*results.Result{r}}, {Label: "b", Results: []*results.Result{r, r}}}
		}
		if s, err := results.DecodeSweep(data); err == nil {
			page.Sweeps = []*results.Sweep{s}
		}
		if len(page.Runs) == 0 && len(page.Sweeps) == 0 {
			return
		}
		_ = Write(io.Discard, page)
	})
}
