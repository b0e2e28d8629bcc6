package analysis_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// Two shards of one run, each recording half of the writers through its own
// Recorder, merge into exactly what one Recorder for all writers produced:
// counts, histograms, per-second series, checks and the summary.
func TestMergeHalvesEqualsWhole(t *testing.T) {
	even := func(op resultstest.Op) bool { return op.Writer%2 == 0 }
	odd := func(op resultstest.Op) bool { return op.Writer%2 == 1 }
	c1 := results.Check{Name: "counter kb-bench-0", Passed: true, Expected: 600, Observed: 600}
	c2 := results.Check{Name: "counter kb-bench-1", Expected: 612, Observed: 575, Lost: 37, Detail: "37 increments lost"}
	for _, openLoop := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed-loop", true: "open-loop"}[openLoop], func(t *testing.T) {
			whole := resultstest.Simulated(t, openLoop, resultstest.All, []results.Check{c1, c2})
			a := resultstest.Simulated(t, openLoop, even, []results.Check{c1})
			b := resultstest.Simulated(t, openLoop, odd, []results.Check{c2})
			whole.Measurements.Client = results.ClientStats{Retries: 3, RateLimiterWait: 120 * time.Millisecond, RateLimited: 5}
			a.Measurements.Client = results.ClientStats{Retries: 1, RateLimiterWait: 40 * time.Millisecond, RateLimited: 2}
			b.Measurements.Client = results.ClientStats{Retries: 2, RateLimiterWait: 80 * time.Millisecond, RateLimited: 3}
			if a.Summary.Ops == 0 || b.Summary.Ops == 0 || a.Summary.Ops+b.Summary.Ops != whole.Summary.Ops {
				t.Fatalf("halves hold %d + %d ops, whole %d: the split is wrong", a.Summary.Ops, b.Summary.Ops, whole.Summary.Ops)
			}
			got, err := analysis.Merge(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Measurements, whole.Measurements) {
				t.Errorf("merged measurements differ from the whole run:\n got %+v\nwant %+v", got.Measurements, whole.Measurements)
			}
			if !reflect.DeepEqual(got.Series, whole.Series) {
				t.Errorf("merged series differs from the whole run:\n got %+v\nwant %+v", got.Series, whole.Series)
			}
			if !reflect.DeepEqual(got.Summary, whole.Summary) {
				t.Errorf("merged summary differs from the whole run:\n got %+v\nwant %+v", got.Summary, whole.Summary)
			}
			if !reflect.DeepEqual(got, whole) {
				t.Errorf("merged result differs from the whole run:\n got %+v\nwant %+v", got, whole)
			}
			// The halves really differ from the whole (the test can fail).
			if reflect.DeepEqual(a.Measurements.Histograms, whole.Measurements.Histograms) {
				t.Fatal("half and whole have the same histograms")
			}
		})
	}
}

func TestMergeOne(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	r.Server = &results.ServerCheck{Available: true, Match: true,
		Requests: []results.RequestCount{{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1141, Server: 1141}}}
	r.Figures = []results.Figure{{Name: "objects", Unit: results.UnitCount, Value: 1, Help: "h"}}
	got, err := analysis.Merge(r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("merging one result changed it:\n got %+v\nwant %+v", got, r)
	}
}

func TestMergeRefusesAndWarns(t *testing.T) {
	a := resultstest.Simulated(t, false, resultstest.All, nil)
	other := resultstest.Simulated(t, false, resultstest.All, nil)
	other.Spec.Writers++
	if _, err := analysis.Merge(a, other); err == nil || !strings.Contains(err.Error(), "different spec") {
		t.Errorf("merging different specs: err = %v, want a refusal", err)
	}
	if _, err := analysis.Merge(); err == nil {
		t.Error("merging nothing succeeded")
	}
	if _, err := analysis.Merge(a, nil); err == nil {
		t.Error("merging a nil result succeeded")
	}

	b := resultstest.Simulated(t, false, resultstest.All, nil)
	a.Server = &results.ServerCheck{Available: true, Match: true,
		Requests: []results.RequestCount{{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1141, Server: 1141}}}
	b.RunID = "20260301-120000-def456"
	got, err := analysis.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Server != nil {
		t.Error("per-shard server checks were carried into the merged result")
	}
	joined := strings.Join(got.Warnings, "\n")
	for _, want := range []string{"server cross-check of shard 1 dropped", "different run ids"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q do not mention %q", got.Warnings, want)
		}
	}
}

// Scenario figures that add up add over the shards; any other is kept
// when one shard holds it, and dropped with a warning naming it when
// several do.
func TestMergeScenarioFigures(t *testing.T) {
	a := resultstest.Simulated(t, false, resultstest.All, nil)
	b := resultstest.Simulated(t, false, resultstest.All, nil)
	c := resultstest.Simulated(t, false, resultstest.All, nil)
	rejected := results.Figure{Name: "rejected", Unit: results.UnitCount, Sum: true, Help: "h"}
	p50 := results.Figure{Name: "failoverTime", Labels: map[string]string{"quantile": "0.5"}, Unit: results.UnitDuration, Help: "h"}
	only := results.Figure{Name: "leaseTransitions", Unit: results.UnitCount, Value: 4, Help: "h"}
	b.Figures = []results.Figure{rejected, p50, only}
	b.Figures[0].Value, b.Figures[1].Value = 3, 1e9
	c.Figures = []results.Figure{rejected, p50}
	c.Figures[0].Value, c.Figures[1].Value = 5, 2e9
	got, err := analysis.Merge(a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := got.FigureNamed("rejected"); !ok || f.Value != 8 {
		t.Errorf("rejected %+v, want 3+5", f)
	}
	if f, ok := got.FigureNamed("leaseTransitions"); !ok || f.Value != 4 {
		t.Errorf("a figure one shard holds: %+v, want it kept", f)
	}
	if _, ok := got.FigureNamed(p50.Key()); ok {
		t.Errorf("two shards' p50 kept: %+v", got.Figures)
	}
	if joined := strings.Join(got.Warnings, "\n"); !strings.Contains(joined, `figures failoverTime{quantile="0.5"} dropped`) {
		t.Errorf("warnings %q: want one naming the dropped figure", got.Warnings)
	}
}

// Shards started at different times (processes on several machines) keep
// their points at their own time in the merged series: a shard that began
// 3s later fills the merged series' seconds 3s later.
func TestMergeAlignsShardsThatStartedApart(t *testing.T) {
	even := func(op resultstest.Op) bool { return op.Writer%2 == 0 }
	odd := func(op resultstest.Op) bool { return op.Writer%2 == 1 }
	a := resultstest.Simulated(t, false, even, nil)
	b := resultstest.Simulated(t, false, odd, nil)
	const later = 3 * time.Second
	b.Measurements.SeriesStart = b.Measurements.SeriesStart.Add(later)
	b.Started, b.Ended = b.Started.Add(later), b.Ended.Add(later)
	got, err := analysis.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	last, bLast := got.Series[len(got.Series)-1], b.Series[len(b.Series)-1]
	if last.At != bLast.At+later {
		t.Errorf("merged series ends at %v, want the later shard's end, %v", last.At, bLast.At+later)
	}
	// b's last whole second (4s on its clock: the series counts from the
	// end of the warm-up) is the merged series' 7s, after a's last point:
	// only b's operations are there.
	var bAt4, at7 int64 = -1, -1
	for _, p := range b.Series {
		if p.At == 4*time.Second {
			bAt4 = p.Ops
		}
	}
	for _, p := range got.Series {
		if p.At == 7*time.Second {
			at7 = p.Ops
		}
	}
	if bAt4 <= 0 || at7 != bAt4 {
		t.Errorf("merged point at 7s holds %d ops, want the later shard's %d from its 4s", at7, bAt4)
	}
	var total int64
	for _, p := range got.Series {
		total += p.Ops
	}
	if total != got.Measurements.Ops {
		t.Errorf("merged series holds %d ops, the measurements %d", total, got.Measurements.Ops)
	}
}
