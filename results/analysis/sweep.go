package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
)

// NewSweepPoint summarises the samples of one point.
func NewSweepPoint(value float64, dir string, samples []*results.Result) results.SweepPoint {
	p := results.SweepPoint{Value: value, Dir: dir, Samples: len(samples), ServerMatch: true}
	med := func(f func(r *results.Result) float64) float64 { return median(values(samples, f)) }
	p.Throughput = med(func(r *results.Result) float64 { return r.Summary.Throughput })
	p.WriteThroughput = med(func(r *results.Result) float64 { return r.Summary.WriteThroughput })
	p.ConflictRate = med(func(r *results.Result) float64 { return r.Summary.ConflictRate })
	p.AttemptsP99 = int64(math.Round(med(func(r *results.Result) float64 { return float64(r.Summary.AttemptsP99) })))
	p.P99 = time.Duration(med(func(r *results.Result) float64 { return float64(r.Summary.Latency.P99) }))
	p.GaveUp = int64(math.Round(med(func(r *results.Result) float64 { return float64(r.Summary.GaveUp) })))
	p.GaveUpRatio = med(func(r *results.Result) float64 {
		if r.Summary.Ops == 0 {
			return 0
		}
		return float64(r.Summary.GaveUp) / float64(r.Summary.Ops)
	})
	p.Cost = pointCost(samples)
	for _, m := range metricsOf(samples)[len(figures):] {
		if slices.ContainsFunc(samples, func(r *results.Result) bool { return m.missing(r) != "" }) {
			continue
		}
		f, _ := samples[0].FigureNamed(m.metric)
		if f.Value = med(m.value); f.Unit == results.UnitBool {
			f.Value = math.Round(f.Value)
		}
		p.Figures = append(p.Figures, f)
	}
	p.LostUpdates = new(int64)
	for _, r := range samples {
		switch lost := r.Summary.LostUpdates; {
		case lost == nil:
			p.LostUpdates = nil
		case p.LostUpdates != nil:
			*p.LostUpdates = max(*p.LostUpdates, *lost)
		}
		if r.Server == nil || !r.Server.Available || !r.Server.Match {
			p.ServerMatch = false
		}
	}
	return p
}

// fit fits a model (FitUSL, FitCost) to the figure y reads of each point
// against its axis value, when every point measured it (ok); the note
// says why there is no model.
func fit[M any](points []results.SweepPoint, y func(results.SweepPoint) (v float64, ok bool), model func(n, y []float64) (*M, error)) (*M, string) {
	var ns, ys []float64
	for _, p := range points {
		v, ok := y(p)
		if !ok {
			return nil, ""
		}
		ns, ys = append(ns, p.Value), append(ys, v)
	}
	m, err := model(ns, ys)
	if err != nil {
		return nil, err.Error()
	}
	return m, ""
}

// pointCost is the medians of the samples' cost (nil unless every sample
// has the apiserver's).
func pointCost(samples []*results.Result) *results.PointCost {
	if len(samples) == 0 {
		return nil
	}
	hasEtcd := true
	for _, r := range samples {
		if r.Cost == nil || !r.Cost.Apiserver.Available {
			return nil
		}
		hasEtcd = hasEtcd && r.Cost.Etcd.Available
	}
	fig := func(f func(results.CostFigures) float64) float64 {
		return median(values(samples, func(r *results.Result) float64 { return f(r.Cost.Figures(r.Summary)) }))
	}
	c := &results.PointCost{
		ApiserverCores:    fig(func(f results.CostFigures) float64 { return f.Apiserver.Cores }),
		ApiserverPerWrite: time.Duration(fig(func(f results.CostFigures) float64 { return float64(f.Apiserver.PerWrite) })),
	}
	if hasEtcd {
		c.HasEtcd = true
		c.EtcdCores = fig(func(f results.CostFigures) float64 { return f.Etcd.Cores })
		c.EtcdPerWrite = time.Duration(fig(func(f results.CostFigures) float64 { return float64(f.Etcd.PerWrite) }))
	}
	return c
}

// Analyze fills each series' model, SLO answer and summary of s from its
// points.
func Analyze(s *results.Sweep) {
	for i := range s.Series {
		ser := &s.Series[i]
		ser.Model, ser.ModelNote = nil, ""
		ser.CostModel, ser.CostModelNote = nil, ""
		if s.Axis == "writers" {
			ser.Model, ser.ModelNote = fit(ser.Points, func(p results.SweepPoint) (float64, bool) { return p.WriteThroughput, true }, FitUSL)
			ser.CostModel, ser.CostModelNote = fit(ser.Points, func(p results.SweepPoint) (float64, bool) {
				if p.Cost == nil {
					return 0, false
				}
				return p.Cost.ApiserverPerWrite.Seconds(), true
			}, FitCost)
		} else {
			ser.ModelNote = "the USL models throughput against concurrency: fitted for writers sweeps only"
		}
		ser.SLO = results.SLOAnswer{}
		for _, p := range ser.Points {
			if p.P99 > s.SLO {
				ser.SLO.Breach = p.Value
				break
			}
			ser.SLO.Within, ser.SLO.ConflictRate = p.Value, p.ConflictRate
		}
		ser.Summary = describe(s, ser)
	}
}

// describe says what a series showed, in one or two sentences.
func describe(s *results.Sweep, ser *results.SweepSeries) string {
	if len(ser.Points) == 0 {
		return "no point ran"
	}
	name := ser.Label + ": "
	if ser.Label == "" {
		name = ""
	}
	unit := func(v float64) string {
		if s.Axis == "rate" {
			return s.AxisValue(v) + " ops/s offered"
		}
		if v == 1 {
			return "1 " + strings.TrimSuffix(s.Axis, "s")
		}
		return s.AxisValue(v) + " " + s.Axis
	}
	peak := slices.MaxFunc(ser.Points, func(a, b results.SweepPoint) int { return cmp.Compare(a.WriteThroughput, b.WriteThroughput) })
	parts := []string{fmt.Sprintf("%sat most %.0f successful writes/s (at %s)", name, peak.WriteThroughput, unit(peak.Value))}
	switch m := ser.Model; {
	case m == nil:
	case m.Poor:
		parts = append(parts, fmt.Sprintf("the USL fits poorly (R² %.2f), so it predicts nothing", m.R2))
	case m.Kappa == 0:
		parts = append(parts, fmt.Sprintf("the USL fit says throughput levels off at %.0f/s", m.Lambda/m.Sigma))
	case m.PeakN < 1.5:
		parts = append(parts, fmt.Sprintf("the USL fit (R² %.2f) says every writer past the first costs throughput", m.R2))
	default:
		parts = append(parts, fmt.Sprintf("the USL fit predicts a peak of %.0f/s at ~%.0f writers", m.PeakX, m.PeakN))
	}
	slo := "p99 under " + s.SLO.String()
	last := ser.Points[len(ser.Points)-1].Value
	switch {
	case ser.SLO.Within == 0:
		parts = append(parts, fmt.Sprintf("p99 is over %s already at %s", s.SLO, unit(ser.Points[0].Value)))
	case ser.SLO.Breach == 0:
		parts = append(parts, fmt.Sprintf("%s at every point up to %s (%s conflicts there)", slo, unit(last), words.Percent(ser.SLO.ConflictRate)))
	default:
		parts = append(parts, fmt.Sprintf("%s up to %s (%s conflicts there), over it from %s", slo, unit(ser.SLO.Within), words.Percent(ser.SLO.ConflictRate), unit(ser.SLO.Breach)))
	}
	if i := slices.IndexFunc(ser.Points, func(p results.SweepPoint) bool { return p.GaveUp > 0 }); i >= 0 {
		parts = append(parts, fmt.Sprintf("retries give up from %s (%s of operations)", unit(ser.Points[i].Value), words.Percent(ser.Points[i].GaveUpRatio)))
	}
	if i := slices.IndexFunc(ser.Points, func(p results.SweepPoint) bool { return p.LostUpdates != nil && *p.LostUpdates > 0 }); i >= 0 {
		parts = append(parts, fmt.Sprintf("LOST UPDATES from %s", unit(ser.Points[i].Value)))
	}
	if i := slices.IndexFunc(ser.Points, func(p results.SweepPoint) bool { return p.LostUpdates == nil }); i >= 0 {
		parts = append(parts, fmt.Sprintf("lost updates not measured at %s", unit(ser.Points[i].Value)))
	}
	if last := ser.Points[len(ser.Points)-1]; last.Cost != nil {
		cost := fmt.Sprintf("at %s it costs %.2f apiserver cores", unit(last.Value), last.Cost.ApiserverCores)
		if last.Cost.HasEtcd {
			cost += fmt.Sprintf(" and %.2f etcd cores", last.Cost.EtcdCores)
		}
		cost += fmt.Sprintf(" for %.0f successful writes/s (%s of apiserver CPU per write", last.WriteThroughput, words.Duration(last.Cost.ApiserverPerWrite))
		if first := ser.Points[0]; first.Cost != nil && len(ser.Points) > 1 && first.Cost.ApiserverPerWrite > 0 {
			cost += fmt.Sprintf(", %.1fx that at %s", float64(last.Cost.ApiserverPerWrite)/float64(first.Cost.ApiserverPerWrite), unit(first.Value))
		}
		parts = append(parts, cost+")")
	}
	if ser.Stopped != "" {
		parts = append(parts, "stopped early: "+ser.Stopped)
	}
	return strings.Join(parts, "; ")
}
