package live_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/results/resultstest"
	"github.com/kb-bench/kb-bench/spec"
)

var labels = live.Labels{RunID: "r1", Scenario: "counter", Strategy: "get-update", Point: "writers=4"}

// gather collects x's series as client_golang's registry hands them to a
// scraper, keyed by name and the labels beyond the run's.
func gather(t *testing.T, x *live.Exporter) map[string]*dto.Metric {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(x); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.Metric{}
	for _, mf := range families {
		for _, m := range mf.Metric {
			key := mf.GetName()
			run := map[string]string{}
			for _, lp := range m.Label {
				switch lp.GetName() {
				case "run_id", "scenario", "strategy", "point":
					run[lp.GetName()] = lp.GetValue()
				default:
					key += "," + lp.GetName() + "=" + lp.GetValue()
				}
			}
			if run["run_id"] != labels.RunID || run["scenario"] != labels.Scenario || run["strategy"] != labels.Strategy || run["point"] != labels.Point {
				t.Errorf("%s: run labels %v, want those of %+v", key, run, labels)
			}
			got[key] = m
		}
	}
	return got
}

func value(t *testing.T, got map[string]*dto.Metric, key string) float64 {
	t.Helper()
	m, ok := got[key]
	switch {
	case !ok:
		t.Fatalf("no series %s", key)
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", key)
	return 0
}

// record runs a few operations through a recorder: warm-up, successes at
// 2ms, conflicts, retries and one that gave up at 40ms.
func record(t0 time.Time) *metrics.Recorder {
	rec := metrics.NewRecorder(t0, 2, false)
	warm := t0.Add(-time.Second)
	rec.Stripe(0).RecordOp(metrics.Op{Intended: warm, Start: warm, End: warm.Add(time.Millisecond), Outcome: metrics.Success, Attempts: 1})
	rec.MeasureFrom(t0)
	for i := range 5 {
		s := rec.Stripe(i)
		s.RecordAttempt(t0, metrics.Attempt{Kind: metrics.Read, Latency: time.Millisecond, Outcome: metrics.Success})
		s.RecordAttempt(t0, metrics.Attempt{Kind: metrics.Write, Latency: time.Millisecond, Outcome: metrics.Success})
		s.RecordOp(metrics.Op{Intended: t0, Start: t0, End: t0.Add(2 * time.Millisecond), Outcome: metrics.Success, Attempts: 1})
	}
	s := rec.Stripe(1)
	for range 3 {
		s.RecordAttempt(t0, metrics.Attempt{Kind: metrics.Write, Latency: 10 * time.Millisecond, Outcome: metrics.VersionConflict})
	}
	s.RecordOp(metrics.Op{Intended: t0, Start: t0, End: t0.Add(40 * time.Millisecond), Outcome: metrics.VersionConflict, Attempts: 3, GaveUp: true, Backoff: 20 * time.Millisecond})
	s.RecordAttempt(t0, metrics.Attempt{Kind: metrics.Write, Latency: time.Millisecond, Outcome: metrics.FieldManagerConflict})
	s.RecordOp(metrics.Op{Intended: t0, Start: t0, End: t0.Add(2 * time.Millisecond), Outcome: metrics.FieldManagerConflict, Attempts: 1})
	return rec
}

// TestCollectorReadsTheRecorder: what a scrape shows is the recorder's
// totals at that moment (not the warm-up), and once the run finishes, its
// Result's, which are the same figures.
func TestCollectorReadsTheRecorder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := record(t0)
	x := live.NewExporter()
	run := x.Add(labels)
	client := results.ClientStats{Retries: 2, RateLimited: 3, RateLimiterWait: 1500 * time.Millisecond, StreamWaited: 1, StreamWait: 250 * time.Millisecond}
	run.Watch(func() live.Figures {
		return live.Figures{Totals: rec.Totals(), Client: client, Window: 3 * time.Second}
	})
	live1 := gather(t, x)
	for key, want := range map[string]float64{
		"kb_bench_operations_total,outcome=success":                         5,
		"kb_bench_operations_total,outcome=conflict":                        1,
		"kb_bench_operations_total,outcome=field-manager-conflict":          1,
		"kb_bench_operations_total,outcome=throttled":                       0, // every class, zeros too
		"kb_bench_warmup_operations_total":                                  1,
		"kb_bench_requests_total,kind=read,outcome=success":                 5,
		"kb_bench_requests_total,kind=write,outcome=success":                5,
		"kb_bench_requests_total,kind=write,outcome=conflict":               3,
		"kb_bench_requests_total,kind=write,outcome=field-manager-conflict": 1,
		"kb_bench_write_retries_total":                                      2,
		"kb_bench_gave_up_total":                                            1,
		"kb_bench_client_retries_total":                                     2,
		"kb_bench_client_rate_limited_total":                                3,
		"kb_bench_client_rate_limiter_wait_seconds_total":                   1.5,
		"kb_bench_client_stream_waited_total":                               1,
		"kb_bench_client_stream_wait_seconds_total":                         0.25,
		"kb_bench_window_seconds":                                           3,
		"kb_bench_finished":                                                 0,
	} {
		if got := value(t, live1, key); got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if _, ok := live1["kb_bench_lost_updates_total"]; ok {
		t.Error("lost updates exported before the run's checks found them")
	}

	h := live1["kb_bench_operation_duration_seconds"].Histogram
	if h.GetSampleCount() != 7 {
		t.Errorf("operation histogram counts %d, want the 7 measured operations", h.GetSampleCount())
	}
	// Classic buckets, cumulative: six at 2ms, the seventh at 40ms.
	for _, b := range h.Bucket {
		want := uint64(0)
		switch {
		case b.GetUpperBound() >= 0.05:
			want = 7
		case b.GetUpperBound() >= 0.0025:
			want = 6
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if len(h.Bucket) != len(live.ClassicBuckets) {
		t.Errorf("%d classic buckets, want %d", len(h.Bucket), len(live.ClassicBuckets))
	}
	if sum := h.GetSampleSum(); sum < 0.0519 || sum > 0.0521 {
		t.Errorf("sum %v s, want 6 x 2ms + 40ms within HDR's 0.1%%", sum)
	}
	// Native buckets: schema 3; 2ms and 40ms fall in two buckets.
	if h.GetSchema() != live.NativeSchema {
		t.Errorf("schema %d, want %d", h.GetSchema(), live.NativeSchema)
	}
	var native []int64
	var c int64
	for _, d := range h.PositiveDelta {
		c += d
		if c != 0 {
			native = append(native, c)
		}
	}
	if len(native) != 2 || native[0] != 6 || native[1] != 1 {
		t.Errorf("native bucket counts %v, want [6 1]", native)
	}
	if w := live1["kb_bench_request_duration_seconds,kind=write"].Histogram; w.GetSampleCount() != 9 {
		t.Errorf("write request histogram counts %d, want 9", w.GetSampleCount())
	}

	// The run ends: its Result, made from the same recorder, replaces the
	// live reading, and every counter stays as it was.
	snap := rec.Snapshot(t0.Add(3 * time.Second))
	res := &results.Result{Started: t0, Ended: t0.Add(3 * time.Second), Measurements: results.FromSnapshot(snap, client), Summary: results.Summary{Seconds: 3},
		Checks: []results.Check{{Name: "no lost updates", Lost: 2}}}
	res.Summary.LostUpdates = results.LostUpdatesOf(res.Checks)
	if err := run.Finish(res); err != nil {
		t.Fatal(err)
	}
	final := gather(t, x)
	for key, m := range live1 {
		if m.Counter != nil && value(t, final, key) != m.Counter.GetValue() {
			t.Errorf("%s: %v once finished, %v before", key, value(t, final, key), m.Counter.GetValue())
		}
		if m.Histogram != nil && final[key].Histogram.String() != m.Histogram.String() {
			t.Errorf("%s: histogram changed once finished:\n%v\n%v", key, final[key].Histogram, m.Histogram)
		}
	}
	if got := value(t, final, "kb_bench_finished"); got != 1 {
		t.Errorf("finished = %v, want 1", got)
	}
	if got := value(t, final, "kb_bench_lost_updates_total"); got != 2 {
		t.Errorf("lost updates = %v, want the checks' 2", got)
	}
}

// TestServer: the endpoint serves the exposition to a plain scraper, a
// port in use is bad input, and Close waits for one scrape of the final
// figures.
// A run whose checks could not all be made (its target stopped
// answering) exports no count of lost updates, never a measured 0; one
// whose checks were made exports theirs, 0 included.
func TestUnmeasuredLostUpdatesAreNotExported(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		checks []results.Check
		want   float64 // -1: no series
	}{
		{"check not made", []results.Check{{Name: "objects read back", Detail: "connection refused"}}, -1},
		{"not checked", nil, -1},
		{"checked, none lost", []results.Check{{Name: "counter kb-bench-0", Passed: true}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := live.NewExporter()
			run := x.Add(labels)
			snap := record(t0).Snapshot(t0.Add(time.Second))
			res := &results.Result{Measurements: results.FromSnapshot(snap, results.ClientStats{}), Checks: tc.checks}
			var err error
			if res.Summary, err = results.Summarize(res.Measurements, 1, res.Checks); err != nil {
				t.Fatal(err)
			}
			if err := run.Finish(res); err != nil {
				t.Fatal(err)
			}
			m, ok := gather(t, x)["kb_bench_lost_updates_total"]
			switch {
			case tc.want < 0 && ok:
				t.Errorf("lost updates exported as %v, but they were not measured", m.Counter.GetValue())
			case tc.want >= 0 && (!ok || m.Counter.GetValue() != tc.want):
				t.Errorf("lost updates %v (exported %v), want %v", m, ok, tc.want)
			}
		})
	}
}

func TestServer(t *testing.T) {
	srv, err := live.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	run := srv.Exporter.Add(labels)
	rec := record(time.Now())
	run.Watch(func() live.Figures { return live.Figures{Totals: rec.Totals()} })
	body := scrape(t, srv.URL)
	if !strings.Contains(body, `kb_bench_operations_total{outcome="success",point="writers=4",run_id="r1",scenario="counter",strategy="get-update"} 5`) {
		t.Errorf("the exposition lacks the successes:\n%s", body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(body)); err != nil {
		t.Errorf("the exposition does not parse: %v", err)
	}

	// The same port again: bad input, before anything would start.
	addr := strings.TrimSuffix(strings.TrimPrefix(srv.URL, "http://"), "/metrics")
	if _, err := live.Listen(addr); !spec.IsInput(err) || !strings.Contains(err.Error(), "pick a free port") {
		t.Errorf("a port in use: %v, want bad input saying what to do", err)
	}

	closed := make(chan bool)
	go func() { ok, _ := srv.Close(context.Background(), time.Hour); closed <- ok }()
	// Close waits for a scrape that began after it was called.
	for {
		scrape(t, srv.URL)
		select {
		case ok := <-closed:
			if !ok {
				t.Error("Close says no final scrape came")
			}
			if _, err := http.Get(srv.URL); err == nil {
				t.Error("the endpoint still answers after Close")
			}
			return
		case <-time.After(10 * time.Millisecond): // poll, as a scraper does
		}
	}
}

// A scrape that read the final figures before Close counts (Close does
// not wait for another); one that read a finished run before another was
// added does not; an interrupt ends the wait and Close says how long it
// waited.
func TestCloseCountsFinalScrapes(t *testing.T) {
	srv, err := live.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	first := srv.Exporter.Add(live.Labels{RunID: "s1"})
	if err := first.Finish(r); err != nil {
		t.Fatal(err)
	}
	scrape(t, srv.URL)
	if !srv.FinalScraped() {
		t.Error("a scrape after the only run finished did not read the final figures")
	}
	second := srv.Exporter.Add(live.Labels{RunID: "s2"})
	if srv.FinalScraped() {
		t.Error("a scrape from before the second run counts as final")
	}
	if err := second.Finish(r); err != nil {
		t.Fatal(err)
	}
	scrape(t, srv.URL)
	// The test's deadline is the bound: Close must not wait its hour.
	if ok, waited := srv.Close(context.Background(), time.Hour); !ok || waited != 0 {
		t.Errorf("Close = %v after %s, want the scrape already made counted, without waiting", ok, waited)
	}

	srv, err = live.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Exporter.Add(live.Labels{RunID: "s3"}) // never finished
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if ok, waited := srv.Close(ctx, time.Hour); ok || waited >= time.Hour {
		t.Errorf("Close after an interrupt = %v after %s, want no scrape and the wait cut short", ok, waited)
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return "" // closed meanwhile
		}
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestListenLoopbackByDefault(t *testing.T) {
	for _, addr := range []string{":0", "0"} {
		srv, err := live.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || srv.Beyond {
			t.Errorf("%q listens at %s (beyond loopback: %v), want loopback", addr, srv.URL, srv.Beyond)
		}
		srv.Close(context.Background(), 0)
	}
	// Every interface: a URL a scraper here can use, and a warning due.
	srv, err := live.Listen("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || !srv.Beyond || !strings.HasPrefix(srv.Listening, "0.0.0.0:") {
		t.Errorf("0.0.0.0:0 serves at %s, listening on %s, beyond loopback %v; want a loopback URL and beyond", srv.URL, srv.Listening, srv.Beyond)
	}
	scrape(t, srv.URL)
	srv.Close(context.Background(), 0)
	if _, err := live.Listen("127.0.0.1:notaport"); !spec.IsInput(err) {
		t.Errorf("a bad address: %v, want bad input", err)
	}
}

// TestShardFiguresAddUp: two shards' figures, served and fetched as a
// coordinator does, add up to those of one recorder that saw both
// shards' operations: counts and histograms exactly.
func TestShardFiguresAddUp(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := record(t0), record(t0)
	b.Stripe(0).RecordOp(metrics.Op{Intended: t0, Start: t0, End: t0.Add(time.Second), Outcome: metrics.Timeout, Attempts: 4})
	both := record(t0)
	both.Stripe(0).RecordOp(metrics.Op{Intended: t0, Start: t0, End: t0.Add(time.Second), Outcome: metrics.Timeout, Attempts: 4})
	var sum live.Figures
	for i, rec := range []*metrics.Recorder{a, b} {
		run := live.NewExporter().Add(live.Labels{})
		run.Watch(func() live.Figures {
			return live.Figures{Totals: rec.Totals(), Client: results.ClientStats{Retries: 1, StreamWait: time.Second}, Window: time.Duration(i+1) * time.Second}
		})
		srv := httptest.NewServer(live.ShardHandler(run))
		f, err := live.FetchShard(context.Background(), srv.Client(), srv.URL+"/live")
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		sum.Add(f)
	}
	// One recorder of both shards' operations: a's are record's, b's
	// are record's and the timeout.
	one := both.Totals()
	other := a.Totals()
	for o := range metrics.NumOutcomes {
		if want := one.Outcomes[o] + other.Outcomes[o]; sum.Totals.Outcomes[o] != want {
			t.Errorf("%s: %d, want %d", o, sum.Totals.Outcomes[o], want)
		}
		if want := one.AttemptOutcomes[metrics.Write][o] + other.AttemptOutcomes[metrics.Write][o]; sum.Totals.AttemptOutcomes[metrics.Write][o] != want {
			t.Errorf("write %s: %d, want %d", o, sum.Totals.AttemptOutcomes[metrics.Write][o], want)
		}
	}
	one.Op.Merge(other.Op)
	if !sum.Totals.Op.Equals(one.Op) {
		t.Error("the added histograms differ from one recorder's of the same operations")
	}
	if sum.Totals.Ops != one.Ops+other.Ops || live.Retries(sum.Totals.Attempts) != live.Retries(one.Attempts)+live.Retries(other.Attempts) {
		t.Errorf("ops %d, retries %d", sum.Totals.Ops, live.Retries(sum.Totals.Attempts))
	}
	if sum.Client.Retries != 2 || sum.Client.StreamWait != 2*time.Second || sum.Window != 2*time.Second {
		t.Errorf("client %+v, window %s: want both shards' client figures added, and the longest window", sum.Client, sum.Window)
	}
}

// A scenario's figures are exported as kb_bench_scenario_<name> beside
// the run's labels and their own: a count that adds up as a counter
// (_total), a duration in seconds (_seconds), others as gauges; figures
// of one name that lack a label another has still make one family. When
// the run ends, they are its Result's figures.
func TestScenarioFigures(t *testing.T) {
	x := live.NewExporter()
	run := x.Add(labels)
	figures := []results.Figure{
		{Name: "leaders", Value: 1, Unit: results.UnitCount, Help: "Candidates that lead now."},
		{Name: "lostLeadership", Value: 2, Unit: results.UnitCount, Sum: true, Help: "Leaderships lost on renew."},
		{Name: "faultAt", Labels: map[string]string{"fault": "1", "takenBy": "b"}, Value: float64(1500 * time.Millisecond), Unit: results.UnitDuration, Help: "When."},
		{Name: "faultAt", Labels: map[string]string{"fault": "2"}, Value: float64(3 * time.Second), Unit: results.UnitDuration, Help: "When."},
	}
	run.Watch(func() live.Figures { return live.Figures{Scenario: figures} })
	got := gather(t, x)
	for key, want := range map[string]float64{
		"kb_bench_scenario_leaders":                             1,
		"kb_bench_scenario_lost_leadership_total":               2,
		"kb_bench_scenario_fault_at_seconds,fault=1,taken_by=b": 1.5,
		"kb_bench_scenario_fault_at_seconds,fault=2,taken_by=":  3,
	} {
		if v := value(t, got, key); v != want {
			t.Errorf("%s = %v, want %v", key, v, want)
		}
	}
	if m := got["kb_bench_scenario_lost_leadership_total"]; m.Counter == nil {
		t.Errorf("a figure that adds up is not a counter: %v", m)
	}
	if m := got["kb_bench_scenario_leaders"]; m.Gauge == nil {
		t.Errorf("a figure that does not add up is not a gauge: %v", m)
	}

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := &results.Result{Started: t0, Ended: t0.Add(time.Second), Summary: results.Summary{Seconds: 1},
		Measurements: results.FromSnapshot(metrics.NewRecorder(t0, 1, false).Snapshot(t0.Add(time.Second)), results.ClientStats{}),
		Figures:      []results.Figure{{Name: "lostLeadership", Value: 3, Unit: results.UnitCount, Sum: true, Help: "Leaderships lost on renew."}}}
	if err := run.Finish(res); err != nil {
		t.Fatal(err)
	}
	got = gather(t, x)
	if v := value(t, got, "kb_bench_scenario_lost_leadership_total"); v != 3 {
		t.Errorf("after the run: lost leadership %v, want the Result's 3", v)
	}
	if _, ok := got["kb_bench_scenario_leaders"]; ok {
		t.Errorf("after the run a live figure the Result does not hold is still exported")
	}
}
