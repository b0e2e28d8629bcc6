package results

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// The bounds of what a document may claim. A run's latencies are recorded
// up to an hour (larger ones are clamped), so a figure far beyond that is
// a damaged or crafted file, not a measurement.
const (
	// maxLatency bounds a latency or an objective.
	maxLatency = 24 * time.Hour
	// maxSpan bounds a measured duration or a series offset: a year.
	maxSpan = 366 * 24 * time.Hour
	// maxAxisValue bounds a sweep's axis value (writers, objects, rate,
	// clients), far above what a run accepts.
	maxAxisValue = 1e9
)

// Validate checks that every figure of r can be: finite, in its range
// (no negative count, throughput or latency; rates and ratios 0 to 1;
// durations not absurd), and every histogram decodes. Read refuses a
// document that fails it, so nothing downstream (compare, gate, report)
// sees an impossible number.
func (r *Result) Validate() error {
	var errs field.ErrorList
	p := field.NewPath("summary")
	s := r.Summary
	errs = append(errs, checkFloat(p.Child("seconds"), s.Seconds, 0, maxSpan.Seconds())...)
	errs = append(errs, checkFloat(p.Child("throughput"), s.Throughput, 0, math.MaxFloat64)...)
	errs = append(errs, checkFloat(p.Child("writeThroughput"), s.WriteThroughput, 0, math.MaxFloat64)...)
	errs = append(errs, checkFloat(p.Child("successRatio"), s.SuccessRatio, 0, 1)...)
	errs = append(errs, checkFloat(p.Child("conflictRate"), s.ConflictRate, 0, 1)...)
	counts := map[string]int64{
		"ops": s.Ops, "successes": s.Successes, "writeAttempts": s.WriteAttempts, "writes": s.Writes, "conflicts": s.Conflicts,
		"gaveUp": s.GaveUp, "attemptsP50": s.AttemptsP50, "attemptsP99": s.AttemptsP99, "attemptsMax": s.AttemptsMax,
	}
	if s.LostUpdates != nil {
		counts["lostUpdates"] = *s.LostUpdates
	}
	errs = append(errs, checkCounts(p, counts, false)...)
	errs = append(errs, checkCounts(p.Child("outcomes"), s.Outcomes, true)...)
	errs = append(errs, checkLatency(p.Child("latency"), s.Latency)...)
	if s.RawLatency != nil {
		errs = append(errs, checkLatency(p.Child("rawLatency"), *s.RawLatency)...)
	}

	p = field.NewPath("measurements")
	m := r.Measurements
	errs = append(errs, checkCounts(p, map[string]int64{
		"ops": m.Ops, "warmupOps": m.WarmupOps, "gaveUp": m.GaveUp, "late": m.Late, "dropped": m.Dropped, "clamped": m.Clamped,
		"client.retries": m.Client.Retries, "client.rateLimited": m.Client.RateLimited, "client.streamWaited": m.Client.StreamWaited,
	}, false)...)
	errs = append(errs, checkDuration(p.Child("client", "rateLimiterWait"), m.Client.RateLimiterWait, time.Duration(math.MaxInt64))...)
	errs = append(errs, checkDuration(p.Child("client", "streamWait"), m.Client.StreamWait, time.Duration(math.MaxInt64))...)
	errs = append(errs, checkCounts(p.Child("outcomes"), m.Outcomes, true)...)
	errs = append(errs, checkCounts(p.Child("readOutcomes"), m.ReadOutcomes, true)...)
	errs = append(errs, checkCounts(p.Child("writeOutcomes"), m.WriteOutcomes, true)...)
	for i, n := range m.Attempts {
		if n < 0 {
			errs = append(errs, field.Invalid(p.Child("attempts").Index(i), n, "a count is 0 or more"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Histograms)) {
		errs = append(errs, checkHistogram(p.Child("histograms").Key(name), m.Histograms[name])...)
	}

	for i, pt := range r.Series {
		sp := field.NewPath("series").Index(i)
		errs = append(errs, checkDuration(sp.Child("at"), pt.At, maxSpan)...)
		errs = append(errs, checkDuration(sp.Child("span"), pt.Span, maxSpan)...)
		errs = append(errs, checkDuration(sp.Child("p50"), pt.P50, maxLatency)...)
		errs = append(errs, checkDuration(sp.Child("p99"), pt.P99, maxLatency)...)
		errs = append(errs, checkCounts(sp, map[string]int64{"ops": pt.Ops}, false)...)
		errs = append(errs, checkCounts(sp.Child("outcomes"), pt.Outcomes, true)...)
		errs = append(errs, checkCounts(sp.Child("writes"), pt.Writes, true)...)
		errs = append(errs, checkHistogram(sp.Child("histogram"), pt.Histogram)...)
		if len(errs) > maxValidationErrors {
			break // a damaged series says so in its first points
		}
	}
	if c := r.Cost; c != nil {
		p := field.NewPath("cost")
		for _, pc := range []struct {
			name string
			ProcessCost
		}{{"apiserver", c.Apiserver}, {"etcd", c.Etcd}, {"client", c.Client}} {
			errs = append(errs, checkFloat(p.Child(pc.name, "cpuSeconds"), pc.CPUSeconds, 0, math.MaxFloat64)...)
			errs = append(errs, checkCounts(p.Child(pc.name), map[string]int64{"memoryBefore": pc.MemoryBefore, "memoryAfter": pc.MemoryAfter}, false)...)
		}
		errs = append(errs, checkFloat(p.Child("requestSeconds"), c.RequestSeconds, 0, math.MaxFloat64)...)
		if i := c.ApiserverIdle; i != nil {
			errs = append(errs, checkFloat(p.Child("apiserverIdle", "seconds"), i.Seconds, 0, math.MaxFloat64)...)
			errs = append(errs, checkFloat(p.Child("apiserverIdle", "cpuSeconds"), i.CPUSeconds, 0, math.MaxFloat64)...)
		}
		for i, v := range c.Verbs {
			vp := p.Child("verbs").Index(i)
			errs = append(errs, checkFloat(vp.Child("seconds"), v.Seconds, 0, math.MaxFloat64)...)
			errs = append(errs, checkCounts(vp, map[string]int64{"requests": v.Requests, "conflicts": v.Conflicts}, false)...)
			for j, b := range v.Buckets {
				errs = append(errs, checkCounts(vp.Child("buckets").Index(j), map[string]int64{"count": b.Count}, false)...)
			}
		}
	}
	errs = append(errs, ValidateFigures(field.NewPath("figures"), r.Figures)...)
	for i, sh := range r.Shards {
		errs = append(errs, checkCounts(field.NewPath("shards").Index(i), map[string]int64{"ops": sh.Ops}, false)...)
	}
	return validationError(errs)
}

// maxValidationErrors is how many problems a refused document lists.
const maxValidationErrors = 10

// validationError joins errs, the first few and how many more, into one
// error that says what to do; nil when there are none.
func validationError(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	more := ""
	if len(errs) > maxValidationErrors {
		more = fmt.Sprintf("\nand %d more", len(errs)-maxValidationErrors)
		errs = errs[:maxValidationErrors]
	}
	return fmt.Errorf("the document holds figures no run can produce (the file is damaged or was edited by hand):\n%s%s", spec.Describe(errs), more)
}

// checkFloat checks that v is finite and in [lo, hi].
func checkFloat(p *field.Path, v, lo, hi float64) field.ErrorList {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return field.ErrorList{field.Invalid(p, v, "not a finite number")}
	case v < lo || v > hi:
		if hi == math.MaxFloat64 {
			return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("must be %g or more", lo))}
		}
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("must be %g to %g", lo, hi))}
	}
	return nil
}

// checkDuration checks that d is 0 to most.
func checkDuration(p *field.Path, d, most time.Duration) field.ErrorList {
	if d < 0 || d > most {
		return field.ErrorList{field.Invalid(p, int64(d), fmt.Sprintf("a duration of 0 to %s, in nanoseconds", most))}
	}
	return nil
}

// checkLatency checks a set of percentiles.
func checkLatency(p *field.Path, l Latency) field.ErrorList {
	var errs field.ErrorList
	for name, d := range map[string]time.Duration{"p50": l.P50, "p90": l.P90, "p99": l.P99, "p999": l.P999, "max": l.Max, "mean": l.Mean} {
		errs = append(errs, checkDuration(p.Child(name), d, maxLatency)...)
	}
	return sortErrors(errs)
}

// checkCounts checks that every count is 0 or more; keyed names them as
// keys of the map p rather than fields.
func checkCounts(p *field.Path, counts map[string]int64, keyed bool) field.ErrorList {
	var errs field.ErrorList
	for name, n := range counts {
		at := p.Child(name)
		if keyed {
			at = p.Key(name)
		}
		if n < 0 {
			errs = append(errs, field.Invalid(at, n, "a count is 0 or more"))
		}
	}
	return sortErrors(errs)
}

// checkHistogram checks that a histogram decodes.
func checkHistogram(p *field.Path, enc string) field.ErrorList {
	if _, err := metrics.DecodeHistogram(enc); err != nil {
		return field.ErrorList{field.Invalid(p, "(a histogram)", err.Error())}
	}
	return nil
}

// sortErrors orders errs by path, so that a message does not depend on
// map order.
func sortErrors(errs field.ErrorList) field.ErrorList {
	slices.SortFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	return errs
}

// Validate checks that every figure of s can be, as Result.Validate does:
// ReadSweep refuses a sweep that fails it, so no impossible number
// reaches a chart.
func (s *Sweep) Validate() error {
	var errs field.ErrorList
	if s.SLO <= 0 || s.SLO > maxLatency {
		errs = append(errs, field.Invalid(field.NewPath("slo"), int64(s.SLO), fmt.Sprintf("a latency objective above 0 and at most %s, in nanoseconds", maxLatency)))
	}
	for i, ser := range s.Series {
		sp := field.NewPath("series").Index(i)
		for j, pt := range ser.Points {
			errs = append(errs, validatePoint(sp.Child("points").Index(j), pt)...)
			if len(errs) > maxValidationErrors {
				return validationError(errs)
			}
		}
		if ser.UnderWay != nil {
			errs = append(errs, validatePoint(sp.Child("underWay"), *ser.UnderWay)...)
		}
		if m := ser.Model; m != nil {
			mp := sp.Child("model")
			for _, v := range []struct {
				name string
				v    float64
			}{{"lambda", m.Lambda}, {"sigma", m.Sigma}, {"kappa", m.Kappa}, {"r2", m.R2}, {"peakN", m.PeakN}, {"peakX", m.PeakX}} {
				errs = append(errs, checkFloat(mp.Child(v.name), v.v, -math.MaxFloat64, math.MaxFloat64)...)
			}
		}
		ap := sp.Child("sloAnswer")
		errs = append(errs, checkFloat(ap.Child("within"), ser.SLO.Within, 0, maxAxisValue)...)
		errs = append(errs, checkFloat(ap.Child("breach"), ser.SLO.Breach, 0, maxAxisValue)...)
		errs = append(errs, checkFloat(ap.Child("conflictRate"), ser.SLO.ConflictRate, 0, 1)...)
	}
	return validationError(errs)
}

// validatePoint checks a sweep point's figures; pp is its path.
func validatePoint(pp *field.Path, pt SweepPoint) field.ErrorList {
	var errs field.ErrorList
	if math.IsNaN(pt.Value) || math.IsInf(pt.Value, 0) || pt.Value <= 0 || pt.Value > maxAxisValue {
		errs = append(errs, field.Invalid(pp.Child("value"), pt.Value, fmt.Sprintf("an axis value above 0 and at most %g", float64(maxAxisValue))))
	}
	errs = append(errs, ValidateFigures(pp.Child("figures"), pt.Figures)...)
	errs = append(errs, checkFloat(pp.Child("throughput"), pt.Throughput, 0, math.MaxFloat64)...)
	errs = append(errs, checkFloat(pp.Child("writeThroughput"), pt.WriteThroughput, 0, math.MaxFloat64)...)
	errs = append(errs, checkFloat(pp.Child("conflictRate"), pt.ConflictRate, 0, 1)...)
	errs = append(errs, checkFloat(pp.Child("gaveUpRatio"), pt.GaveUpRatio, 0, 1)...)
	errs = append(errs, checkDuration(pp.Child("p99"), pt.P99, maxLatency)...)
	if c := pt.Cost; c != nil {
		errs = append(errs, checkFloat(pp.Child("cost", "apiserverCores"), c.ApiserverCores, 0, math.MaxFloat64)...)
		errs = append(errs, checkFloat(pp.Child("cost", "etcdCores"), c.EtcdCores, 0, math.MaxFloat64)...)
		errs = append(errs, checkDuration(pp.Child("cost", "apiserverPerWrite"), c.ApiserverPerWrite, maxLatency)...)
		errs = append(errs, checkDuration(pp.Child("cost", "etcdPerWrite"), c.EtcdPerWrite, maxLatency)...)
	}
	counts := map[string]int64{"samples": int64(pt.Samples), "attemptsP99": pt.AttemptsP99, "gaveUp": pt.GaveUp}
	if pt.LostUpdates != nil {
		counts["lostUpdates"] = *pt.LostUpdates
	}
	errs = append(errs, checkCounts(pp, counts, false)...)
	return errs
}
