package apiserver_test

import (
	"context"
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
func measured(writes map[metrics.Outcome]int, warmup bool) results.Measurements {
	r := metrics.NewRecorder(t0, 2, false)
	i := 0
	for out, n := range writes {
		for range n {
			sh := r.Shard(i)
			sh.RecordAttempt(t0, metrics.Attempt{Kind: metrics.Write, Latency: time.Millisecond, Outcome: out})
			sh.RecordOp(metrics.Op{Intended: t0, Start: t0, End: t0.Add(time.Millisecond), Outcome: out, Attempts: 1})
			i++
		}
	}
	if warmup {
		r.MeasureFrom(t0.Add(time.Second))
		r.Shard(0).RecordOp(metrics.Op{Intended: t0, End: t0.Add(time.Millisecond), Attempts: 1})
	}
	return results.FromSnapshot(r.Snapshot(t0.Add(time.Second)), results.ClientStats{})
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

// The cross-check on fixtures with a known story: on configmaps, 1000
// PUTs, 200 merge patches and 50 applies succeeded, 300 PUTs and 10 applies
// got a 409, 4 JSON patches failed their test; etcd saw 35 more update
// transactions than successful writes. On secrets, 400 patches succeeded
// with 60 transactions lost to races and no 409 returned.
func TestNewServerCheck(t *testing.T) {
	before, after := parseFile(t, "before.prom"), parseFile(t, "after.prom")
	configmapRun := map[metrics.Outcome]int{
		metrics.Success: 1250, metrics.VersionConflict: 300, metrics.FieldManagerConflict: 10, metrics.FailedPrecondition: 4,
	}
	tests := []struct {
		name     string
		resource string
		writes   map[metrics.Outcome]int
		warmup   bool
		check    func(t *testing.T, c *results.ServerCheck)
	}{
		{"counts agree", "configmaps", configmapRun, false, func(t *testing.T, c *results.ServerCheck) {
			if !c.Available || !c.WritesMatch || !c.ConflictsMatch || c.Mismatch != "" {
				t.Errorf("want a match, got %+v", c)
			}
			if c.ServerWrites != 1250 || c.ServerConflicts != 310 {
				t.Errorf("server writes %d, conflicts %d; want 1250, 310", c.ServerWrites, c.ServerConflicts)
			}
			if c.EtcdUpdates != 1285 || c.EtcdFailedUpdates != 35 || c.AbsorbedConflicts != 0 {
				t.Errorf("etcd updates %d, failed %d, absorbed %d; want 1285, 35, 0", c.EtcdUpdates, c.EtcdFailedUpdates, c.AbsorbedConflicts)
			}
			if c.FlowControlRejected != 4 || c.FlowControlWaited != 3004 || c.FlowControlMeanWait != 632*time.Microsecond {
				t.Errorf("APF rejected %d, waited %d for %v; want 4, 3004, 632µs", c.FlowControlRejected, c.FlowControlWaited, c.FlowControlMeanWait)
			}
			want := []results.ServerLatency{{Verb: "APPLY", Count: 60, Mean: 5500 * time.Microsecond}, {Verb: "GET", Count: 1300, Mean: time.Millisecond}, {Verb: "PATCH", Count: 204, Mean: 3971 * time.Microsecond}, {Verb: "PUT", Count: 1300, Mean: 3 * time.Millisecond}}
			if len(c.Latency) != len(want) {
				t.Fatalf("latency %+v, want %+v", c.Latency, want)
			}
			for i := range want {
				if c.Latency[i] != want[i] {
					t.Errorf("latency[%d] = %+v, want %+v", i, c.Latency[i], want[i])
				}
			}
		}},
		{"one write missing on kb-bench's side", "configmaps", map[metrics.Outcome]int{
			metrics.Success: 1249, metrics.VersionConflict: 300, metrics.FieldManagerConflict: 10, metrics.Timeout: 1,
		}, true, func(t *testing.T, c *results.ServerCheck) {
			if c.WritesMatch || !c.ConflictsMatch {
				t.Errorf("writes match %v, conflicts match %v; want false, true", c.WritesMatch, c.ConflictsMatch)
			}
			for _, want := range []string{"apiserver 1250 successful writes, kb-bench 1249", "1 write attempts timed out", "other clients"} {
				if !strings.Contains(c.Mismatch, want) {
					t.Errorf("mismatch %q does not say %q", c.Mismatch, want)
				}
			}
		}},
		{"patch conflicts absorbed by the apiserver", "secrets", map[metrics.Outcome]int{metrics.Success: 400}, false, func(t *testing.T, c *results.ServerCheck) {
			if !c.WritesMatch || c.ServerConflicts != 0 || c.EtcdFailedUpdates != 60 || c.AbsorbedConflicts != 60 {
				t.Errorf("writes match %v, 409s %d, failed %d, absorbed %d; want true, 0, 60, 60", c.WritesMatch, c.ServerConflicts, c.EtcdFailedUpdates, c.AbsorbedConflicts)
			}
		}},
		{"subresource is a different endpoint", "configmaps/status", map[metrics.Outcome]int{}, false, func(t *testing.T, c *results.ServerCheck) {
			if c.ServerWrites != 0 || !c.WritesMatch {
				t.Errorf("configmaps/status: server writes %d, match %v; want 0, true", c.ServerWrites, c.WritesMatch)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, results.NewServerCheck(before, after, tc.resource, measured(tc.writes, tc.warmup)))
		})
	}
	t.Run("apiserver restarted", func(t *testing.T) {
		c := results.NewServerCheck(after, before, "configmaps", measured(configmapRun, false))
		if c.Available || !strings.Contains(c.Reason, "restarted") {
			t.Errorf("counters going backwards: available %v, reason %q; want unavailable, restarted", c.Available, c.Reason)
		}
	})
}

// On a real apiserver's exposition: three PUTs, a stale PUT (409), a merge
// patch, an apply and a conflicting apply (409, FieldManagerConflict).
func TestNewServerCheckRealExposition(t *testing.T) {
	before, after := parseFile(t, "real-before.prom"), parseFile(t, "real-after.prom")
	m := measured(map[metrics.Outcome]int{metrics.Success: 5, metrics.VersionConflict: 1, metrics.FieldManagerConflict: 1}, false)
	c := results.NewServerCheck(before, after, "configmaps", m)
	if !c.Available || !c.WritesMatch || !c.ConflictsMatch || c.ServerWrites != 5 || c.ServerConflicts != 2 {
		t.Errorf("want 5 writes and 2 conflicts matching, got %+v", c)
	}
	// Every successful write is one etcd update; the stale PUT failed its
	// precondition before reaching etcd.
	if c.EtcdUpdates != 5 || c.EtcdFailedUpdates != 0 {
		t.Errorf("etcd updates %d, failed %d; want 5, 0", c.EtcdUpdates, c.EtcdFailedUpdates)
	}
	want := []results.ServerRequests{{Verb: "APPLY", Code: "200", Count: 1}, {Verb: "APPLY", Code: "409", Count: 1}, {Verb: "PATCH", Code: "200", Count: 1}, {Verb: "PUT", Code: "200", Count: 3}, {Verb: "PUT", Code: "409", Count: 1}}
	if fmt.Sprint(c.Requests) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", c.Requests, want)
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
			if (err != nil) != tc.wantErr || apiserver.IsUnavailable(err) != tc.wantUnavailable {
				t.Fatalf("err = %v (unavailable %v); want error %v, unavailable %v", err, apiserver.IsUnavailable(err), tc.wantErr, tc.wantUnavailable)
			}
			if err == nil && s.Requests[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "PUT", Resource: "configmaps"}, Code: "409"}] != 303 {
				t.Errorf("scraped sample lacks the PUT 409 count: %v", s.Requests)
			}
		})
	}
}
