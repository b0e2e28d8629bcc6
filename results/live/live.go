// Package live serves the figures of runs in progress to Prometheus,
// reading them only when scraped, so the writers' hot path pays nothing.
// When a run ends its figures become its Result's, so the last scrape
// equals result.json.
package live

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// Labels name a run among the runs one endpoint serves.
type Labels struct {
	// RunID is the sample's run id (a set's samples have their own).
	RunID string
	// Scenario and Strategy are what ran.
	Scenario, Strategy string
	// Point is the configuration's label in a matrix, or the point of a
	// sweep ("" for a plain run).
	Point string
}

// labelNames are the labels every series of a run carries, in the order
// of Labels.values.
var labelNames = []string{"run_id", "scenario", "strategy", "point"}

func (l Labels) values() []string { return []string{l.RunID, l.Scenario, l.Strategy, l.Point} }

// Figures are a run's figures at one instant.
type Figures struct {
	// Totals are the recorder's (metrics.Recorder.Totals): operations,
	// requests by outcome, histograms. Its Series is not read.
	Totals metrics.Snapshot
	// Client is what the run's clients did in the measured window so far.
	Client results.ClientStats
	// Window is how long the measured window has run (0 before it).
	Window time.Duration
	// Lost is the number of lost updates, once the run's checks found
	// it (LostKnown).
	Lost      int64
	LostKnown bool
	// Finished says these are the run's final figures, its Result's.
	Finished bool
	// Scenario are the scenario's own figures (leadership, quota
	// admissions...), exported as kb_bench_scenario_<name> (scenarioMetrics).
	Scenario []results.Figure
}

// Exporter is a prometheus.Collector of every run added to it; a run that
// ended stays, so its last scrape can come after it ended.
type Exporter struct {
	mu   sync.Mutex
	runs []*Run
	// gen counts the runs added and finished: the figures a scrape read
	// are the final ones when every run had finished and gen has not
	// moved since.
	gen int64
}

// NewExporter returns an Exporter of no runs yet.
func NewExporter() *Exporter { return &Exporter{} }

// Run is one run of an Exporter. Until Watch its figures are zero; then
// they are read at each scrape, until Finish fixes them.
type Run struct {
	x      *Exporter
	labels []string
	mu     sync.Mutex
	read   func() Figures
	final  *Figures
}

// Add adds a run labelled l. A nil Exporter adds nothing and returns nil,
// which takes every Run method as a no-op.
func (x *Exporter) Add(l Labels) *Run {
	if x == nil {
		return nil
	}
	r := &Run{labels: l.values(), x: x}
	x.mu.Lock()
	x.runs = append(x.runs, r)
	x.gen++
	x.mu.Unlock()
	return r
}

// state is how far x's runs have come: gen changes with every run added
// and finished; finished says every run added has finished.
func (x *Exporter) state() (gen int64, finished bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	finished = true
	for _, r := range x.runs {
		r.mu.Lock()
		finished = finished && r.final != nil
		r.mu.Unlock()
	}
	return x.gen, finished
}

// Watch makes read the source of r's figures: it is called at each
// scrape, from the scrape's goroutine, until Finish.
func (r *Run) Watch(read func() Figures) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.read = read
	r.mu.Unlock()
}

// Finish fixes r's figures to res's, the run's saved figures: from then on
// every scrape shows exactly what result.json says.
func (r *Run) Finish(res *results.Result) error {
	if r == nil {
		return nil
	}
	f, err := FromResult(res)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.final, r.read = &f, nil
	r.mu.Unlock()
	r.x.mu.Lock()
	r.x.gen++
	r.x.mu.Unlock()
	return nil
}

// Figures are r's figures now.
func (r *Run) Figures() Figures {
	r.mu.Lock()
	final, read := r.final, r.read
	r.mu.Unlock()
	switch {
	case final != nil:
		return *final
	case read != nil:
		return read()
	}
	return Figures{}
}

// FromResult are the figures a Result saved.
func FromResult(res *results.Result) (Figures, error) {
	f, err := fromMeasurements(res.Measurements)
	if err != nil {
		return Figures{}, err
	}
	// The Summary's, which has no monotonic clock reading to lose.
	f.Window = time.Duration(math.Round(res.Summary.Seconds * float64(time.Second)))
	f.Finished, f.Scenario = true, res.Figures
	if lost := res.Summary.LostUpdates; lost != nil {
		f.Lost, f.LostKnown = *lost, true
	}
	return f, nil
}

// fromMeasurements are the figures in m.
func fromMeasurements(m results.Measurements) (Figures, error) {
	t, err := m.Snapshot()
	return Figures{Totals: t, Client: m.Client}, err
}

// The descriptions of what a run exports. Every series carries
// labelNames; some one more label (outcome, kind).
var (
	descOps         = desc("operations_total", "Measured operations (a read-modify-write with its retries) by final outcome.", "outcome")
	descWarmup      = desc("warmup_operations_total", "Operations run in the warm-up, which no other figure counts.")
	descRequests    = desc("requests_total", "Requests inside measured operations by kind (read: the GET of a read-modify-write; write: a PUT, PATCH, apply or create) and outcome.", "kind", "outcome")
	descRetries     = desc("write_retries_total", "Write attempts after an operation's first: its retries.")
	descGaveUp      = desc("gave_up_total", "Operations whose retry strategy ran out of steps.")
	descLate        = desc("late_total", "Open-loop arrivals that started after their schedule for want of a free writer.")
	descDropped     = desc("dropped_total", "Open-loop arrivals that found no free writer and were not run.")
	descLost        = desc("lost_updates_total", "Lost updates the run's checks found (exported once the run ended and checked).")
	descClientRetry = desc("client_retries_total", "Retries client-go made on its own (429 or 5xx with Retry-After).")
	descLimited     = desc("client_rate_limited_total", "Requests that waited in the client-side rate limiter (a millisecond or more).")
	descLimiterWait = desc("client_rate_limiter_wait_seconds_total", "Time requests waited in the client-side rate limiter.")
	descStreamWaits = desc("client_stream_waited_total", "Requests that waited for a free HTTP/2 stream of their client's connection.")
	descStreamWait  = desc("client_stream_wait_seconds_total", "Time requests waited for a free HTTP/2 stream.")
	descWindow      = desc("window_seconds", "How long the measured window has run (its length, once it ended).")
	descFinished    = desc("finished", "1 once the run ended and these are its saved figures (result.json's), 0 while it runs.")
	descOpLatency   = desc("operation_duration_seconds", "Measured operations' latency, from when each was due (all attempts and backoff).")
	descReqLatency  = desc("request_duration_seconds", "Latency of the requests inside measured operations, by kind (read, write).", "kind")
)

func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc("kb_bench_"+name, help, slices.Concat(labelNames, extra), nil)
}

// Describe sends the descriptions of every figure but the scenarios' own,
// which vary by scenario: the Exporter is partly unchecked.
func (x *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOps, descWarmup, descRequests, descRetries, descGaveUp, descLate, descDropped, descLost,
		descClientRetry, descLimited, descLimiterWait, descStreamWaits, descStreamWait, descWindow, descFinished, descOpLatency, descReqLatency} {
		ch <- d
	}
}

// Collect reads every run's figures now and sends them.
func (x *Exporter) Collect(ch chan<- prometheus.Metric) {
	x.mu.Lock()
	runs := slices.Clone(x.runs)
	x.mu.Unlock()
	for _, r := range runs {
		collect(ch, r.labels, r.Figures())
	}
}

// collect sends the figures f of the run labelled lv.
func collect(ch chan<- prometheus.Metric, lv []string, f Figures) {
	with := func(extra ...string) []string { return slices.Concat(lv, extra) }
	counter := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, with(extra...)...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	t := f.Totals
	// Every class, zeros too: a series that appears only with its first
	// conflict would hide that conflict from rate().
	for o := range metrics.NumOutcomes {
		counter(descOps, float64(t.Outcomes[o]), o.String())
		counter(descRequests, float64(t.AttemptOutcomes[metrics.Read][o]), "read", o.String())
		counter(descRequests, float64(t.AttemptOutcomes[metrics.Write][o]), "write", o.String())
	}
	counter(descWarmup, float64(t.WarmupOps))
	counter(descRetries, float64(Retries(t.Attempts)))
	counter(descGaveUp, float64(t.GaveUp))
	counter(descLate, float64(t.Late))
	counter(descDropped, float64(t.Dropped))
	if f.LostKnown {
		counter(descLost, float64(f.Lost))
	}
	c := f.Client
	counter(descClientRetry, float64(c.Retries))
	counter(descLimited, float64(c.RateLimited))
	counter(descLimiterWait, c.RateLimiterWait.Seconds())
	counter(descStreamWaits, float64(c.StreamWaited))
	counter(descStreamWait, c.StreamWait.Seconds())
	gauge(descWindow, f.Window.Seconds())
	gauge(descFinished, map[bool]float64{true: 1}[f.Finished])
	ch <- Histogram(descOpLatency, t.Op, lv...)
	ch <- Histogram(descReqLatency, t.Read, with("read")...)
	ch <- Histogram(descReqLatency, t.Write, with("write")...)
	scenarioMetrics(ch, lv, f.Scenario)
}

// scenarioMetrics sends a scenario's figures fs of the run labelled lv as
// kb_bench_scenario_<name>, names and labels in snake_case. Figures of one
// name get the same label names (empty where one has none), as Prometheus
// wants of a metric family.
func scenarioMetrics(ch chan<- prometheus.Metric, lv []string, fs []results.Figure) {
	keys := map[string][]string{}
	for _, f := range fs {
		keys[f.Name] = results.AppendNew(keys[f.Name], slices.Collect(maps.Keys(f.Labels))...)
	}
	for _, f := range fs {
		ks := keys[f.Name]
		slices.Sort(ks)
		names, values := slices.Clone(labelNames), slices.Clone(lv)
		for _, k := range ks {
			names, values = append(names, snake(k)), append(values, f.Labels[k])
		}
		name, kind, v := "kb_bench_scenario_"+snake(f.Name), prometheus.GaugeValue, f.Value
		switch {
		case f.Unit == results.UnitDuration:
			name, v = name+"_seconds", v/float64(time.Second)
		case f.Sum:
			name, kind = name+"_total", prometheus.CounterValue
		}
		d := prometheus.NewDesc(name, f.Help, names, nil)
		m, err := prometheus.NewConstMetric(d, kind, v, values...)
		if err != nil { // a label named as one of the run's
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
}

// snake is lowerCamelCase name in snake_case, as Prometheus names go.
func snake(name string) string { return strings.ToLower(upper.ReplaceAllString(name, "_$1")) }

var upper = regexp.MustCompile("([A-Z])")

// Retries counts the write attempts after each operation's first, from
// attempts[n] = operations that made n attempts.
func Retries(attempts []int64) int64 {
	var n int64
	for k, c := range attempts[min(2, len(attempts)):] {
		n += int64(k+1) * c
	}
	return n
}

// ClassicBuckets are the upper bounds (seconds) of the classic buckets of
// every latency histogram: the apiserver's request-duration buckets'
// range, from a millisecond to a minute.
var ClassicBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// NativeSchema is the native histograms' resolution: buckets grow by
// 2^(2^-3), about 9% (client_golang's default bucket factor of 1.1).
const NativeSchema = 3

// Histogram converts h, an HDR histogram of microseconds, into a
// Prometheus histogram in seconds with classic and native buckets: the
// count is exact; each HDR bucket (0.1% wide) counts at its middle value.
func Histogram(d *prometheus.Desc, h *hdrhistogram.Histogram, labelValues ...string) prometheus.Metric {
	classic := make(map[float64]uint64, len(ClassicBuckets))
	native := map[int]int64{}
	var sum float64
	var count uint64
	if h != nil {
		for _, b := range h.Distribution() {
			if b.Count == 0 {
				continue
			}
			v := float64(b.From+b.To) / 2 / 1e6
			sum += v * float64(b.Count)
			count += uint64(b.Count)
			native[nativeIndex(v)] += b.Count
			for _, ub := range ClassicBuckets {
				if v <= ub {
					classic[ub] += uint64(b.Count)
					break
				}
			}
		}
	}
	// Cumulative, as Prometheus wants them.
	var run uint64
	for _, ub := range ClassicBuckets {
		run += classic[ub]
		classic[ub] = run
	}
	// Neither can fail: the labels match d, and the counts are consistent.
	c := prometheus.MustNewConstHistogram(d, count, sum, classic, labelValues...)
	n := prometheus.MustNewConstNativeHistogram(d, count, sum, native, nil, 0, NativeSchema, 0, time.Time{}, labelValues...)
	return both{native: n, classic: c}
}

// nativeIndex is the native bucket of v > 0 seconds at NativeSchema:
// bucket i holds (2^((i-1)/8), 2^(i/8)].
func nativeIndex(v float64) int {
	return int(math.Ceil(math.Log2(v) * (1 << NativeSchema)))
}

// both is one histogram with native buckets and classic ones, as
// client_golang's own histograms are when given both: a scraper that
// negotiates native histograms reads the native ones, any other the
// classic ones.
type both struct{ native, classic prometheus.Metric }

func (b both) Desc() *prometheus.Desc { return b.native.Desc() }

func (b both) Write(m *dto.Metric) error {
	if err := b.native.Write(m); err != nil {
		return err
	}
	var c dto.Metric
	if err := b.classic.Write(&c); err != nil {
		return err
	}
	m.Histogram.Bucket = c.Histogram.Bucket
	// A native histogram with observations needs no empty span to say
	// what it is; the classic buckets do not change that.
	m.Histogram.CreatedTimestamp = nil
	return nil
}
