package analysis

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// mergeFigures is the scenario figures of rs merged: a figure that adds
// up (Sum) adds over the shards that hold it; any other is kept when one
// shard holds it, and dropped (its Key in dropped) when several do.
func mergeFigures(rs []*results.Result) (merged []results.Figure, dropped []string) {
	at := map[string]int{}
	for _, r := range rs {
		for _, f := range r.Figures {
			i, ok := at[f.Key()]
			switch {
			case !ok:
				at[f.Key()] = len(merged)
				merged = append(merged, f)
			case f.Sum && merged[i].Sum:
				merged[i].Value += f.Value
			default:
				dropped = results.AppendNew(dropped, f.Key())
			}
		}
	}
	merged = slices.DeleteFunc(merged, func(f results.Figure) bool { return slices.Contains(dropped, f.Key()) })
	return merged, dropped
}

// Merge combines the shards of one run (results with the same spec) into
// one Result, exactly, and recomputes the summary. The server cross-check
// is not merged (each shard's scrape already saw every shard's requests)
// and is dropped with a warning.
func Merge(rs ...*results.Result) (*results.Result, error) {
	if len(rs) == 0 {
		return nil, errors.New("no results to merge")
	}
	if i := slices.Index(rs, nil); i >= 0 {
		return nil, fmt.Errorf("result %d to merge is missing", i+1)
	}
	first := rs[0]
	out := &results.Result{
		APIVersion: results.APIVersion,
		Kind:       results.KindResult,
		RunID:      first.RunID,
		Version:    first.Version,
		Target:     first.Target,
		Workload:   first.Workload,
		Spec:       first.Spec,
		Namespace:  first.Namespace,
		Started:    first.Started,
		Ended:      first.Ended,
	}
	warn := func(format string, a ...any) {
		out.Warnings = results.AppendNew(out.Warnings, fmt.Sprintf(format, a...))
	}
	seconds, dropped := 0.0, []string(nil)
	ms := make([]results.Measurements, 0, len(rs))
	for i, r := range rs {
		if !reflect.DeepEqual(r.Spec, first.Spec) {
			return nil, fmt.Errorf("result %d (run %s) ran a different spec than result 1 (run %s): only shards of one run merge; compare different runs with 'kb-bench compare' instead", i+1, r.RunID, first.RunID)
		}
		if r.RunID != first.RunID {
			warn("merged shards of different run ids (%s and %s)", first.RunID, r.RunID)
		}
		if r.Version != first.Version {
			warn("merged shards from different kb-bench versions (%s and %s)", first.Version, r.Version)
		}
		if !r.Started.IsZero() && (out.Started.IsZero() || r.Started.Before(out.Started)) {
			out.Started = r.Started
		}
		if r.Ended.After(out.Ended) {
			out.Ended = r.Ended
		}
		out.Interrupted = out.Interrupted || r.Interrupted
		seconds = math.Max(seconds, r.Summary.Seconds)
		ms = append(ms, r.Measurements)
		out.Checks = append(out.Checks, r.Checks...)
		out.Warnings = results.AppendNew(out.Warnings, r.Warnings...)
		if r.Server != nil && r.Server.Available && len(rs) > 1 {
			warn("server cross-check of shard %d dropped: each shard's /metrics scrape counted every shard's requests, so the per-shard checks do not add up", i+1)
		}
	}
	if out.Figures, dropped = mergeFigures(rs); len(dropped) > 0 {
		warn("the scenario's figures %s dropped: several shards hold them, and they do not add up", strings.Join(dropped, ", "))
	}
	if len(rs) == 1 {
		out.Server = first.Server
	}
	if !out.Started.IsZero() && out.Ended.After(out.Started) {
		seconds = out.Ended.Sub(out.Started).Seconds()
	}
	m, err := MergeMeasurements(ms...)
	if err != nil {
		return nil, err
	}
	out.Measurements = m
	// Each shard's series counts from its own start: move its points onto
	// the merged series' clock (the earliest start) before adding them.
	series := make([][]metrics.SeriesPoint, len(rs))
	for i, r := range rs {
		series[i] = slices.Clone(r.Series)
		if start := r.Measurements.SeriesStart; !start.IsZero() && !m.SeriesStart.IsZero() {
			for j := range series[i] {
				series[i][j].At += start.Sub(m.SeriesStart)
			}
		}
	}
	if out.Series, err = MergeSeries(series); err != nil {
		return nil, err
	}
	if out.Summary, err = results.Summarize(m, seconds, out.Checks); err != nil {
		return nil, err
	}
	return out, nil
}

// MergeMeasurements adds Measurements exactly: counts add, histograms merge
// losslessly, the first few distinct errors are kept.
func MergeMeasurements(ms ...results.Measurements) (results.Measurements, error) {
	var sum metrics.Snapshot
	var client results.ClientStats
	for _, m := range ms {
		s, err := m.Snapshot()
		if err != nil {
			return results.Measurements{}, err
		}
		sum.Add(s)
		client = client.Plus(m.Client, 1)
		if !s.Start.IsZero() && (sum.Start.IsZero() || s.Start.Before(sum.Start)) {
			sum.Start = s.Start
		}
	}
	return results.FromSnapshot(sum, client), nil
}

// MergeSeries adds several series, each counting from the same start,
// into one, exactly: points that fall in the same second add up. A
// series' own points are never combined: a point takes the nearest whole
// second of its At, or the second after its predecessor's.
func MergeSeries(all [][]metrics.SeriesPoint) ([]metrics.SeriesPoint, error) {
	type acc struct {
		p    metrics.SeriesPoint
		hist *hdrhistogram.Histogram
	}
	bySecond := map[int64]*acc{}
	for _, points := range all {
		prev := int64(math.MinInt64)
		for _, p := range points {
			key := max(int64(math.Round(p.At.Seconds())), prev+1)
			prev = key
			a, ok := bySecond[key]
			if !ok {
				a = &acc{p: metrics.SeriesPoint{Outcomes: map[string]int64{}, Writes: map[string]int64{}}}
				bySecond[key] = a
			}
			a.p.At = max(a.p.At, p.At)
			a.p.Span = max(a.p.Span, p.Span)
			a.p.Ops += p.Ops
			addCounts(a.p.Outcomes, p.Outcomes)
			addCounts(a.p.Writes, p.Writes)
			if p.Histogram == "" {
				// Without an interval histogram the best that can be said
				// is the worse of the shards' percentiles.
				a.p.P50, a.p.P99 = max(a.p.P50, p.P50), max(a.p.P99, p.P99)
				continue
			}
			h, err := metrics.DecodeHistogram(p.Histogram)
			if err != nil {
				return nil, fmt.Errorf("series point at %s: %w", p.At, err)
			}
			if a.hist == nil {
				a.hist = metrics.NewHistogram()
			}
			if dropped := a.hist.Merge(h); dropped > 0 {
				return nil, fmt.Errorf("series point at %s: %d values outside kb-bench's range", p.At, dropped)
			}
		}
	}
	var out []metrics.SeriesPoint
	for _, k := range slices.Sorted(maps.Keys(bySecond)) {
		a := bySecond[k]
		if a.hist != nil {
			if err := a.p.SetHistogram(a.hist); err != nil {
				return nil, err
			}
		}
		out = append(out, a.p)
	}
	return out, nil
}

func addCounts(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}
