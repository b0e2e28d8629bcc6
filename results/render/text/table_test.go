package text

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
	"github.com/kb-bench/kb-bench/spec"
)

// serverCheckOf runs the real check on r's measurements, with scrapes
// that counted server where the clients sent client.
func serverCheckOf(t *testing.T, r *results.Result, client, server, etcd map[string]int64, watch []string) *results.ServerCheck {
	t.Helper()
	before, after := resultstest.Scrapes(t, resultstest.Window{Requests: server, Etcd: etcd, EtcdTook: 2 * time.Millisecond})
	return analysis.NewServerCheck(before, after, resultstest.Requests(t, client), watch, r.Measurements)
}

// plus is a copy of counts with more added.
func plus(counts, more map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, m := range []map[string]int64{counts, more} {
		for k, n := range m {
			out[k] += n
		}
	}
	return out
}

func TestWriteTable(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) *results.Result
	}{
		{"table-retry-server-match", func(t *testing.T) *results.Result {
			r := resultstest.Simulated(t, false, resultstest.All, []results.Check{{Name: "counter kb-bench-0", Passed: true, Expected: 1141, Observed: 1141}})
			r.Workload = results.Describe(r.Spec, resultstest.What, true)
			r.Measurements.Client.SentContent = map[string]int64{"application/vnd.kubernetes.protobuf": 1678}
			r.Measurements.Client.ReceivedContent = map[string]int64{"application/vnd.kubernetes.protobuf": 3339, "application/json": 17}
			v, fm := r.Measurements.Conflicts()
			sent := map[string]int64{
				"GET configmaps 200": r.Measurements.ReadOutcomes["success"],
				"PUT configmaps 200": r.Summary.Writes,
				"PUT configmaps 409": v + fm,
			}
			r.Server = serverCheckOf(t, r, sent, sent, map[string]int64{"update configmaps": r.Summary.Writes + 12}, nil)
			if !r.Server.Match {
				t.Fatalf("the check does not match: %s", r.Server.Mismatch)
			}
			return r
		}},
		{"table-lost-updates", func(t *testing.T) *results.Result {
			r := resultstest.Simulated(t, false, resultstest.All, []results.Check{
				{Name: "counter kb-bench-0", Expected: 412, Observed: 375, Lost: 37},
				{Name: "counter kb-bench-1", Passed: true, Expected: 300, Observed: 300},
				{Name: "namespace kb-bench-x", Detail: "3 objects left behind"},
			})
			r.Spec.Unconditional, r.Spec.Strategy, r.Spec.Backoff = true, spec.StrategyUpdate, nil
			r.Workload = results.Describe(r.Spec, resultstest.What, true)
			r.Server = results.UnavailableServerCheck("the apiserver's /metrics is not readable (HTTP 403)")
			r.Warnings = []string{"the apiserver's /metrics is not readable (HTTP 403): server cross-check skipped"}
			return r
		}},
		{"table-open-loop-mismatch", func(t *testing.T) *results.Result {
			r := resultstest.Simulated(t, true, resultstest.All, nil)
			r.Spec.Client = spec.Client{QPS: 50, Burst: 100, ContentType: spec.ContentProtobuf}
			r.Spec.Settings = map[string]any{"objects": float64(10), "distribution": "zipf", "zipfExponent": 1.1, "fields": "shared"}
			r.Workload = results.Describe(r.Spec, "6 writers on 10 objects (zipf s=1.1), shared fields", true)
			r.Target = spec.TargetInfo{Kind: spec.TargetKubeconfig, Server: "https://127.0.0.1:6443", Context: "kind-kb", ServerVersion: "v1.37.1"}
			r.Interrupted = true
			r.Measurements.Client.SentContent = map[string]int64{"application/apply-patch+yaml": 4282}
			r.Measurements.Client.ReceivedContent = map[string]int64{"application/vnd.kubernetes.protobuf": 4282}
			v, fm := r.Measurements.Conflicts()
			timeouts := r.Measurements.WriteOutcomes[metrics.Timeout.String()]
			// The apiserver completed two of the writes that timed out
			// on the client.
			r.Server = serverCheckOf(t, r, map[string]int64{
				"APPLY configmaps 200":  r.Summary.Writes,
				"APPLY configmaps 409":  v + fm,
				"APPLY configmaps none": timeouts,
			}, map[string]int64{
				"APPLY configmaps 200": r.Summary.Writes + 2,
				"APPLY configmaps 409": v + fm,
			}, map[string]int64{"update configmaps": r.Summary.Writes + 2 + 110}, nil)
			r.Server.FlowControlRejected = 4
			if r.Server.Match {
				t.Fatal("the check matches")
			}
			return r
		}},
		{"table-scenario-rows", func(t *testing.T) *results.Result {
			r := resultstest.Simulated(t, false, resultstest.All, nil)
			r.Spec.Scenario, r.Spec.Settings = "quota", map[string]any{"resource": "count/configmaps", "hard": float64(50)}
			r.Spec.Strategy, r.Spec.Backoff = "", nil
			r.Workload = results.Describe(r.Spec, "6 writers creating objects under a ResourceQuota of count/configmaps=50", true)
			sent := map[string]int64{"POST configmaps 201": 50, "POST configmaps 403": 1155}
			r.Server = serverCheckOf(t, r, sent,
				plus(sent, map[string]int64{"PUT resourcequotas/status 200": 50, "PUT resourcequotas/status 409": 3}),
				map[string]int64{"create configmaps": 50, "update resourcequotas": 58}, []string{"resourcequotas"})
			r.Warnings = []string{"a warning comes last"}
			// The scenario's own figures come after the server check.
			r.Figures = []results.Figure{
				{Name: "hard", Value: 50, Unit: results.UnitCount, Help: "the quota's limit"},
				{Name: "fullAfter", Value: float64(180 * time.Millisecond), Unit: results.UnitDuration, Help: "h"},
				{Name: "admitted", Value: 50, Unit: results.UnitCount, Sum: true, Help: "h"},
				{Name: "rejected", Value: 1155, Unit: results.UnitCount, Sum: true, Better: results.BetterLower, Help: "h"},
			}
			return r
		}},
		{"table-scenario-figures", func(t *testing.T) *results.Result {
			r := resultstest.Simulated(t, false, resultstest.All, nil)
			r.Spec.Scenario = "leader-election"
			r.Workload = "leader-election: 3 candidates"
			r.Server = results.UnavailableServerCheck("not part of this test")
			// Figures of one name on one row, each in its unit, a bool as
			// yes or no.
			q := func(v string) map[string]string { return map[string]string{"quantile": v} }
			r.Figures = []results.Figure{
				{Name: "releaseOnCancel", Value: 1, Unit: results.UnitBool, Help: "h"},
				{Name: "failoverTime", Labels: q("0.5"), Value: float64(1200 * time.Millisecond), Unit: results.UnitDuration, Help: "h"},
				{Name: "failoverTime", Labels: q("0.99"), Value: float64(2100 * time.Millisecond), Unit: results.UnitDuration, Help: "h"},
				{Name: "leaderlessShare", Value: 0.042, Unit: results.UnitPercent, Help: "h"},
				{Name: "leaseWrites", Labels: map[string]string{"phase": "renew", "code": "409"}, Value: 3, Unit: results.UnitCount, Help: "h"},
				{Name: "renewRate", Value: 4.5, Unit: results.UnitRate, Help: "h"},
				{Name: "leaseWrites", Labels: map[string]string{"phase": "acquire", "code": "409"}, Value: 7, Unit: results.UnitCount, Help: "h"},
			}
			return r
		}},
		{"table-cost", func(t *testing.T) *results.Result {
			r := resultstest.Simulated(t, false, resultstest.All, nil)
			r.Workload = results.Describe(r.Spec, resultstest.What, true)
			r.Server = results.UnavailableServerCheck("not part of this test")
			r.Cost = &results.Cost{
				Apiserver: results.ProcessCost{Available: true, CPUSeconds: 1.81, MemoryBefore: 278 << 20, MemoryAfter: 275 << 20},
				Etcd:      results.ProcessCost{Reason: "not readable: kb-bench reads etcd's /metrics only on its own local control plane"},
				Client:    results.ProcessCost{Available: true, CPUSeconds: 0.459},
				Verbs: []results.VerbTime{
					{Verb: "GET", Resource: "configmaps", Requests: r.Summary.Ops, Seconds: 6.69},
					{Verb: "PUT", Resource: "configmaps", Requests: r.Summary.WriteAttempts, Seconds: 10.09, Conflicts: r.Summary.Conflicts,
						Buckets: []metrics.BucketCount{{UpperBound: 0.005, Count: r.Summary.WriteAttempts / 2}, {UpperBound: 0.025, Count: r.Summary.WriteAttempts * 98 / 100}, {UpperBound: 0.05, Count: r.Summary.WriteAttempts}}},
				},
				RequestSeconds: 16.79,
				// 0.05 cores of background: 0.21s of the window's 1.81s.
				ApiserverIdle: &results.IdleCPU{Seconds: 1.02, CPUSeconds: 0.051},
			}
			return r
		}},
		{"table-nothing-ran", func(t *testing.T) *results.Result {
			rec := metrics.NewRecorder(resultstest.Start(), 1, false)
			s := spec.Spec{Scenario: "counter", Settings: map[string]any{"objects": float64(1), "distribution": "uniform", "fields": "shared"}}
			s.Defaults(spec.Traits{Strategies: true, Driven: true}) // the counter scenario's
			r := &results.Result{RunID: "20260301-120000-000000", Version: "v0.1.0-test", Spec: s,
				Target: spec.TargetInfo{Kind: spec.TargetLocal}, Interrupted: true,
				Workload: results.Describe(s, "8 writers on 1 object, shared fields", true)}
			r.Measurements = results.FromSnapshot(rec.Snapshot(resultstest.Start()), results.ClientStats{})
			var err error
			if r.Summary, err = results.Summarize(r.Measurements, 0, nil); err != nil {
				t.Fatal(err)
			}
			return r
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.build(t)
			var buf bytes.Buffer
			if err := WriteTable(&buf, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.name+".golden", buf.Bytes())
		})
	}
}

// The scenario's figures render below the common table and the server
// check, before errors and warnings.
func TestWriteTableScenarioRowsOrder(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	r.Spec.Scenario = "quota"
	r.Warnings = []string{"last"}
	r.Figures = []results.Figure{{Name: "hard", Value: 50, Unit: results.UnitCount, Help: "h"}}
	var buf bytes.Buffer
	if err := WriteTable(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	server, quota, other, warning := strings.Index(out, "\nserver "), strings.Index(out, "\nquota         hard 50"), strings.Index(out, "\nother error"), strings.Index(out, "\nwarning")
	if server < 0 || quota < 0 || other < 0 || warning < 0 || !(server < quota && quota < other && other < warning) {
		t.Errorf("want server, then the scenario's rows, then errors and warnings:\n%s", out)
	}
}

func TestDescribeClient(t *testing.T) {
	tests := []struct {
		name    string
		c       spec.Client
		clients int
		stats   results.ClientStats
		want    string
	}{
		{"defaults, nothing sent", spec.Client{QPS: -1, ContentType: spec.ContentDefault}, 1, results.ClientStats{},
			"QPS unlimited, content type default, 1 connection"},
		{"negotiated types, most used first", spec.Client{QPS: 50, Burst: 100, ContentType: spec.ContentDefault}, 4, results.ClientStats{
			SentContent: map[string]int64{"application/vnd.kubernetes.protobuf": 9773, "application/apply-patch+yaml": 12},
			ReceivedContent: map[string]int64{
				"application/vnd.kubernetes.protobuf": 9785, "application/json": 3, "application/cbor": 3,
			},
		}, "QPS 50 burst 100, content type default, sent protobuf 9773, apply-patch+yaml 12, received protobuf 9785, cbor 3, json 3, 4 connections"},
		{"no clients recorded counts as one", spec.Client{QPS: -1, ContentType: spec.ContentJSON}, 0, results.ClientStats{ReceivedContent: map[string]int64{"application/json": 1}},
			"QPS unlimited, content type json, received json 1, 1 connection"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeClient(tc.c, tc.clients, tc.stats); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestFormatting(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct{ got, want string }{
		{words.Plural(0, "writer"), "0 writers"},
		{words.Plural(1, "writer"), "1 writer"},
		{words.Plural(2, "check"), "2 checks"},
		{words.Duration(0), "0s"},
		{words.Duration(time.Microsecond), "1µs"}, // "< 1us" once showed as "< 0.00ms"
		{words.Duration(12345 * time.Nanosecond), "12.3µs"},
		{words.Duration(500 * time.Nanosecond), "500ns"},
		{words.Duration(1234 * time.Microsecond), "1.23ms"},
		{words.Duration(12345 * time.Microsecond), "12.3ms"},
		{words.Duration(123456 * time.Microsecond), "123ms"},
		{words.Duration(1234 * ms), "1.23s"},
		{words.Duration(12345 * ms), "12.3s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestFormatProgress(t *testing.T) {
	point := metrics.SeriesPoint{
		At: 12 * time.Second, Span: 500 * time.Millisecond, Ops: 600,
		Writes: map[string]int64{"success": 550, "conflict": 40, "field-manager-conflict": 10},
		P99:    12345 * time.Microsecond,
	}
	tests := []struct {
		name           string
		elapsed, total time.Duration
		p              metrics.SeriesPoint
		want           string
	}{
		{"running", 12*time.Second + 300*time.Millisecond, time.Minute, point, "[12s/1m0s, 48s left]  1200 ops/s  100 conflicts/s  p99 12.3ms"},
		{"bounded by operations", 12 * time.Second, 0, point, "[12s elapsed]  1200 ops/s  100 conflicts/s  p99 12.3ms"},
		{"draining", 61 * time.Second, time.Minute, point, "[1m1s/1m0s, finishing]  1200 ops/s  100 conflicts/s  p99 12.3ms"},
		{"idle interval", time.Second, 10 * time.Second, metrics.SeriesPoint{Span: time.Second}, "[1s/10s, 9s left]  0 ops/s  0 conflicts/s  p99 -"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatProgress(tc.elapsed, tc.total, tc.p); got != tc.want {
				t.Errorf("FormatProgress = %q\n                 want %q", got, tc.want)
			}
		})
	}
}

// A check that could not be made (the objects were not read back) means
// the lost-update count is unknown: the summary never says "passed" then.
func TestDescribeLostWithAFailedCheck(t *testing.T) {
	got := describeLost([]results.Check{{Name: "counter kb-bench-0", Passed: true}, {Name: "objects read back", Passed: false, Detail: "connection refused"}})
	if got != "unknown: 1 of 2 checks could not be made (see CHECK FAILED)" {
		t.Errorf("got %q", got)
	}
}

// An apiserver killed mid-sample leaves the lost-update count unknown:
// the headline, the summary, a comparison (every format) and a sweep's
// row say unknown, never "0 lost updates".
func TestUnmeasuredLostUpdatesReadUnknown(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, []results.Check{{Name: "objects read back", Detail: "connection refused"}})
	r.TargetLost = "the apiserver stopped answering"
	if r.Summary.LostUpdates != nil {
		t.Fatalf("lost updates %d, want unknown", *r.Summary.LostUpdates)
	}
	line := OneLine(r)
	if strings.Contains(line, "0 lost updates") || !strings.Contains(line, "lost updates unknown (1 of 1 checks could not be made)") {
		t.Errorf("headline: %s", line)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, r); err != nil || !strings.Contains(table.String(), "lost updates  unknown: 1 of 1 checks could not be made") {
		t.Errorf("summary (%v):\n%s", err, table.String())
	}
	ok := resultstest.Simulated(t, false, resultstest.All, []results.Check{{Name: "counter kb-bench-0", Passed: true}})
	c, err := analysis.Compare([]results.Side{{Label: "a", Results: []*results.Result{ok}}, {Label: "b", Results: []*results.Result{r}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range CompareFormats {
		var out bytes.Buffer
		if err := WriteComparison(&out, c, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "unknown") {
			t.Errorf("%s comparison does not say the lost updates are unknown:\n%s", f, out.String())
		}
	}
	pt := analysis.NewSweepPoint(4, "w4", []*results.Result{ok, r})
	sw := &results.Sweep{Axis: "writers"}
	if got := sw.PointFigures(pt); got[7] != "unknown" {
		t.Errorf("sweep row %v, want lost updates unknown", got)
	}
}

// A check that attributed the apiserver's extra counts to the cluster's
// own clients says so beside the match, with the counts.
func TestDescribeServerOthers(t *testing.T) {
	c := &results.ServerCheck{Available: true, Match: true,
		Requests: []results.RequestCount{{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 274, Server: 274}},
		Others:   []results.RequestCount{{Verb: "POST", Resource: "configmaps", Code: "201", Server: 5}}}
	rows := describeServer(c)
	if len(rows) < 2 || !strings.HasPrefix(rows[0][1], "apiserver counted the same 274 requests") ||
		!strings.Contains(rows[1][1], "other clients' requests") || !strings.Contains(rows[1][1], "POST configmaps 5 (201)") {
		t.Errorf("rows %q", rows)
	}
}
