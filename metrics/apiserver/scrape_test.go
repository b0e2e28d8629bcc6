package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/metrics/apiserver"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func parseFile(t *testing.T, name string) metrics.ServerSample {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := apiserver.Parse(f, t0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// measured records write attempts by outcome through a real Recorder.
func measured(writes map[metrics.Outcome]int) results.Measurements {
	r := metrics.NewRecorder(t0, 2, false)
	i := 0
	for out, n := range writes {
		for range n {
			sh := r.Stripe(i)
			sh.RecordAttempt(t0, metrics.Attempt{Kind: metrics.Write, Latency: time.Millisecond, Outcome: out})
			sh.RecordOp(metrics.Op{Intended: t0, Start: t0, End: t0.Add(time.Millisecond), Outcome: out, Attempts: 1})
			i++
		}
	}
	return results.FromSnapshot(r.Snapshot(t0.Add(time.Second)), results.ClientStats{})
}

// sent is what kb-bench's clients sent, as the engine's transport counts
// it: by endpoint and response code.
func sent(counts map[string]int64) map[metrics.RequestKey]int64 {
	m := map[metrics.RequestKey]int64{}
	for s, n := range counts {
		f := strings.Fields(s) // VERB RESOURCE[/SUBRESOURCE] CODE
		res, sub, _ := strings.Cut(f[1], "/")
		m[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: f[0], Resource: res, Subresource: sub}, Code: f[2]}] = n
	}
	return m
}

// row finds the check's row for "VERB RESOURCE CODE".
func row(rows []results.RequestCount, s string) (results.RequestCount, bool) {
	for _, r := range rows {
		if r.Verb+" "+r.Resource+" "+r.Code == s {
			return r, true
		}
	}
	return results.RequestCount{}, false
}

// races finds the check's etcd races on resource.
func races(c *results.ServerCheck, resource string) results.EtcdRaces {
	for _, r := range c.Races {
		if r.Resource == resource {
			return r
		}
	}
	return results.EtcdRaces{Resource: resource}
}

func TestParse(t *testing.T) {
	s := parseFile(t, "after.prom")
	put := metrics.EndpointKey{Verb: "PUT", Resource: "configmaps"}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"PUT 200", s.Requests[metrics.RequestKey{EndpointKey: put, Code: "200"}], int64(1012)},
		{"APPLY 409", s.Requests[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "APPLY", Resource: "configmaps"}, Code: "409"}], int64(10)},
		{"leases keep their group", s.Requests[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "PUT", Group: "coordination.k8s.io", Resource: "leases"}, Code: "200"}], int64(126)},
		{"PUT duration", s.Durations[put], metrics.CountSum{Count: 1315, Sum: 3.945}},
		{"etcd update", s.Etcd[metrics.EtcdKey{Operation: "update", Resource: "configmaps"}], int64(1299)},
		{"etcd update duration", s.EtcdDurations[metrics.EtcdKey{Operation: "update", Resource: "configmaps"}].Count, int64(1299)},
		{"APF rejected", s.FlowRejected[metrics.FlowKey{PriorityLevel: "global-default", FlowSchema: "global-default", Reason: "queue-full"}], int64(4)},
		{"APF wait", s.FlowWait[metrics.FlowWaitKey{PriorityLevel: "global-default", FlowSchema: "global-default", Executed: true}].Count, int64(3060)},
		{"PUT buckets, cumulative", fmt.Sprint(s.DurationBuckets[put][:3]), "[{0.005 920} {0.025 1315} {0.05 1315}]"},
		{"process CPU", s.Process, metrics.ProcessSample{Has: true, CPUSeconds: 12.34, ResidentBytes: 290000000}},
		{"no process figures", parseFile(t, "before.prom").Process, metrics.ProcessSample{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"not an apiserver", "# TYPE go_goroutines gauge\ngo_goroutines 12\n"},
		{"not the text format", "{\"kind\":\"Status\"}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := apiserver.Parse(strings.NewReader(tc.text), t0); err == nil {
				t.Fatal("Parse accepted it")
			}
		})
	}
}

// The cross-check on fixtures with a known story: on configmaps, 1300
// GETs; 1000 PUTs, 200 merge patches and 50 applies succeeded, 300 PUTs
// and 10 applies got a 409, 4 JSON patches failed their test (422); etcd
// saw 35 more update transactions than successful writes. On secrets, 400
// patches succeeded with 60 transactions lost to races and no 409
// returned, and 3 PUTs were throttled (429). Leases and namespaces saw
// traffic of their own.
func TestNewServerCheck(t *testing.T) {
	before, after := parseFile(t, "before.prom"), parseFile(t, "after.prom")
	configmapRequests := map[string]int64{
		"GET configmaps 200": 1300,
		"PUT configmaps 200": 1000, "PUT configmaps 409": 300,
		"PATCH configmaps 200": 200, "PATCH configmaps 422": 4,
		"APPLY configmaps 200": 50, "APPLY configmaps 409": 10,
	}
	configmapRun := map[metrics.Outcome]int{
		metrics.Success: 1250, metrics.VersionConflict: 300, metrics.FieldManagerConflict: 10, metrics.FailedPrecondition: 4,
	}
	tests := []struct {
		name   string
		client map[string]int64
		writes map[metrics.Outcome]int
		check  func(t *testing.T, c *results.ServerCheck)
	}{
		{"counts agree", configmapRequests, configmapRun, func(t *testing.T, c *results.ServerCheck) {
			if !c.Available || !c.Match || c.Mismatch != "" || len(c.Internal) != 0 {
				t.Errorf("want a match, got %+v", c)
			}
			// Every endpoint and code the clients used, and nothing else:
			// the leases, namespaces and secrets traffic is not theirs.
			if len(c.Requests) != len(configmapRequests) {
				t.Errorf("%d rows, want %d: %+v", len(c.Requests), len(configmapRequests), c.Requests)
			}
			for s, n := range configmapRequests {
				if r, ok := row(c.Requests, s); !ok || r.Client != n || r.Server != n {
					t.Errorf("%s: row %+v (found %v), want %d on both sides", s, r, ok, n)
				}
			}
			if r := races(c, "configmaps"); r.Updates != 1285 || r.Failed != 35 || r.Absorbed != 0 {
				t.Errorf("configmaps etcd races %+v; want 1285 updates, 35 failed, 0 absorbed (the 310 409s cover them)", r)
			}
			if len(c.Races) != 1 {
				t.Errorf("races %+v, want configmaps' only", c.Races)
			}
			wantEtcd := []results.EtcdRequests{
				{Resource: "configmaps", Operation: "get", Count: 1348, Mean: 500 * time.Microsecond},
				{Resource: "configmaps", Operation: "update", Count: 1285, Mean: 2 * time.Millisecond},
			}
			if fmt.Sprint(c.Etcd) != fmt.Sprint(wantEtcd) {
				t.Errorf("etcd %+v, want %+v", c.Etcd, wantEtcd)
			}
			if c.FlowControlRejected != 4 || c.FlowControlWaited != 3004 || c.FlowControlMeanWait != 632*time.Microsecond {
				t.Errorf("APF rejected %d, waited %d for %v; want 4, 3004, 632µs", c.FlowControlRejected, c.FlowControlWaited, c.FlowControlMeanWait)
			}
		}},
		{"one write missing on kb-bench's side", map[string]int64{
			"GET configmaps 200": 1300,
			"PUT configmaps 200": 999, "PUT configmaps 409": 300, "PUT configmaps none": 1,
			"PATCH configmaps 200": 200, "PATCH configmaps 422": 4,
			"APPLY configmaps 200": 50, "APPLY configmaps 409": 10,
		}, map[metrics.Outcome]int{
			metrics.Success: 1249, metrics.VersionConflict: 300, metrics.FieldManagerConflict: 10, metrics.FailedPrecondition: 4, metrics.Timeout: 1,
		}, func(t *testing.T, c *results.ServerCheck) {
			if !c.Available || c.Match {
				t.Errorf("want a mismatch, got %+v", c)
			}
			for _, want := range []string{
				"PUT configmaps 200: apiserver 1000, kb-bench 999", "PUT configmaps none: apiserver 0, kb-bench 1",
				"got no answer", "1 write attempts timed out", "other clients",
			} {
				if !strings.Contains(c.Mismatch, want) {
					t.Errorf("mismatch %q does not say %q", c.Mismatch, want)
				}
			}
			if strings.Contains(c.Mismatch, "409") || strings.Contains(c.Mismatch, "PATCH") {
				t.Errorf("mismatch %q names counts that agree", c.Mismatch)
			}
		}},
		{"patch conflicts absorbed by the apiserver", map[string]int64{"PATCH secrets 200": 400, "PUT secrets 429": 3}, map[metrics.Outcome]int{
			metrics.Success: 400, metrics.Throttled: 3,
		}, func(t *testing.T, c *results.ServerCheck) {
			if !c.Match {
				t.Errorf("want a match: %s", c.Mismatch)
			}
			if r := races(c, "secrets"); r.Updates != 460 || r.Failed != 60 || r.Absorbed != 60 {
				t.Errorf("secrets etcd races %+v; want 460 updates, 60 failed, 60 absorbed (no 409 returned)", r)
			}
		}},
		{"others' writes on the same resource", map[string]int64{"PATCH secrets 200": 400}, map[metrics.Outcome]int{metrics.Success: 400}, func(t *testing.T, c *results.ServerCheck) {
			if r, ok := row(c.Requests, "PUT secrets 429"); c.Match || !ok || r.Client != 0 || r.Server != 3 {
				t.Errorf("PUT secrets 429 row %+v (found %v), match %v; want the 3 throttled PUTs kb-bench did not send, and a mismatch", r, ok, c.Match)
			}
			if !strings.Contains(c.Mismatch, "other clients") {
				t.Errorf("mismatch %q does not suggest other clients", c.Mismatch)
			}
		}},
		{"subresource is a different endpoint", map[string]int64{"PUT configmaps/status 200": 5}, map[metrics.Outcome]int{metrics.Success: 5}, func(t *testing.T, c *results.ServerCheck) {
			r, ok := row(c.Requests, "PUT configmaps/status 200")
			if !ok || r.Client != 5 || r.Server != 0 {
				t.Errorf("configmaps/status row %+v (found %v); want kb-bench 5, apiserver 0: the object's 1000 PUTs are not the subresource's", r, ok)
			}
			if r, ok := row(c.Requests, "PUT configmaps 200"); !ok || r.Client != 0 || r.Server != 1000 {
				t.Errorf("configmaps row %+v (found %v); want the object's PUTs on a row of their own", r, ok)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, analysis.NewServerCheck(before, after, sent(tc.client), nil, measured(tc.writes)))
		})
	}
	t.Run("apiserver restarted", func(t *testing.T) {
		c := analysis.NewServerCheck(after, before, sent(configmapRequests), nil, measured(configmapRun))
		if c.Available || !strings.Contains(c.Reason, "restarted") {
			t.Errorf("counters going backwards: available %v, reason %q; want unavailable, restarted", c.Available, c.Reason)
		}
	})
}

// On a real apiserver's exposition: three PUTs, a stale PUT (409), a merge
// patch, an apply and a conflicting apply (409, FieldManagerConflict).
func TestNewServerCheckRealExposition(t *testing.T) {
	before, after := parseFile(t, "real-before.prom"), parseFile(t, "real-after.prom")
	m := measured(map[metrics.Outcome]int{metrics.Success: 5, metrics.VersionConflict: 1, metrics.FieldManagerConflict: 1})
	client := sent(map[string]int64{
		"APPLY configmaps 200": 1, "APPLY configmaps 409": 1, "PATCH configmaps 200": 1, "PUT configmaps 200": 3, "PUT configmaps 409": 1,
	})
	c := analysis.NewServerCheck(before, after, client, nil, m)
	if !c.Available || !c.Match {
		t.Errorf("want 5 writes and 2 conflicts matching, got %+v", c)
	}
	want := []results.RequestCount{
		{Verb: "APPLY", Resource: "configmaps", Code: "200", Client: 1, Server: 1},
		{Verb: "APPLY", Resource: "configmaps", Code: "409", Client: 1, Server: 1},
		{Verb: "PATCH", Resource: "configmaps", Code: "200", Client: 1, Server: 1},
		{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 3, Server: 3},
		{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 1, Server: 1},
	}
	if fmt.Sprint(c.Requests) != fmt.Sprint(want) {
		t.Errorf("requests %+v, want %+v", c.Requests, want)
	}
	// Every successful write is one etcd update; the stale PUT failed its
	// precondition before reaching etcd.
	if r := races(c, "configmaps"); r.Updates != 5 || r.Failed != 0 || r.Absorbed != 0 {
		t.Errorf("configmaps etcd races %+v; want 5 updates, none failed", r)
	}
}

// Scrape goes through client-go's REST client, asks for the text format,
// and marks an unreadable endpoint so the caller can warn and carry on.
func TestScrape(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "after.prom"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		status          int
		wantUnavailable bool
		wantErr         bool
	}{
		{"ok", http.StatusOK, false, false},
		{"forbidden", http.StatusForbidden, true, true},
		{"unauthorized", http.StatusUnauthorized, true, true},
		{"server error", http.StatusInternalServerError, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/metrics" || !strings.HasPrefix(r.Header.Get("Accept"), "text/plain") {
					http.Error(w, "want GET /metrics with Accept text/plain", http.StatusBadRequest)
					return
				}
				if tc.status != http.StatusOK {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no","code":%d}`, tc.status)))
					return
				}
				w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
			if err != nil {
				t.Fatal(err)
			}
			s, err := apiserver.Scrape(context.Background(), cs.Discovery().RESTClient())
			if (err != nil) != tc.wantErr || isUnavailable(err) != tc.wantUnavailable {
				t.Fatalf("err = %v (unavailable %v); want error %v, unavailable %v", err, isUnavailable(err), tc.wantErr, tc.wantUnavailable)
			}
			if err == nil && s.Requests[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "PUT", Resource: "configmaps"}, Code: "409"}] != 303 {
				t.Errorf("scraped sample lacks the PUT 409 count: %v", s.Requests)
			}
		})
	}
}

// isUnavailable reports whether err says /metrics cannot be read at all.
func isUnavailable(err error) bool {
	var u *apiserver.UnavailableError
	return errors.As(err, &u)
}
