package analysis_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// timedOut are Measurements whose write attempts include n timeouts.
func timedOut(n int64) results.Measurements {
	return results.Measurements{WriteOutcomes: map[string]int64{"success": 99, "timeout": n}}
}

func TestNewServerCheck(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		client map[string]int64
		server resultstest.Window
		watch  []string
		m      results.Measurements
		want   results.ServerCheck
	}{
		{
			name: "exact match, others' traffic elsewhere left out",
			client: map[string]int64{
				"GET configmaps 200": 1678, "PUT configmaps 200": 1141, "PUT configmaps 409": 511,
			},
			server: resultstest.Window{
				Requests: map[string]int64{
					"GET configmaps 200": 1678, "PUT configmaps 200": 1141, "PUT configmaps 409": 511,
					// Not kb-bench's, and not on what it did: left out.
					"PUT leases.coordination.k8s.io 200": 6, // another resource
					"LIST configmaps 200":                3, // a read on an endpoint the clients did not use
					"WATCH configmaps 200":               2, // watches end when they end
					"PUT configmaps/status 200":          4, // a subresource the clients did not use
					"POST namespaces 201":                1,
				},
				Etcd:     map[string]int64{"update configmaps": 1153, "get configmaps": 12, "update leases.coordination.k8s.io": 6},
				EtcdTook: 2 * ms,
				Rejected: 4, Waited: 3000, WaitedRejected: 4, WaitedFor: 500 * time.Microsecond,
			},
			want: results.ServerCheck{
				Available: true, Match: true,
				Requests: []results.RequestCount{
					{Verb: "GET", Resource: "configmaps", Code: "200", Client: 1678, Server: 1678},
					{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1141, Server: 1141},
					{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 511, Server: 511},
				},
				Etcd: []results.EtcdRequests{
					{Resource: "configmaps", Operation: "get", Count: 12, Mean: 2 * ms},
					{Resource: "configmaps", Operation: "update", Count: 1153, Mean: 2 * ms},
				},
				// 1141 PUTs and the 4 status writes by others won their
				// transactions; the 8 others lost a race, and the 511 409s
				// cover them all.
				Races:               []results.EtcdRaces{{Resource: "configmaps", Updates: 1153, Failed: 8}},
				FlowControlRejected: 4, FlowControlWaited: 3004, FlowControlMeanWait: 500 * time.Microsecond,
			},
		},
		{
			name:   "server counted more: other clients wrote the same resource",
			client: map[string]int64{"PUT configmaps 200": 100},
			server: resultstest.Window{Requests: map[string]int64{
				"PUT configmaps 200":  103,
				"POST configmaps 201": 2, // a write on the resource, on an endpoint kb-bench did not use
			}},
			m: timedOut(0),
			want: results.ServerCheck{
				Available: true,
				Requests: []results.RequestCount{
					{Verb: "POST", Resource: "configmaps", Code: "201", Server: 2},
					{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 100, Server: 103},
				},
				Mismatch: "POST configmaps 201: apiserver 2, kb-bench 0; PUT configmaps 200: apiserver 103, kb-bench 100" +
					" (possible causes: other clients may use the same resources on this cluster (the server counts them all))",
			},
		},
		{
			name:   "a request that got no answer was counted as a success",
			client: map[string]int64{"PUT configmaps 200": 99, "PUT configmaps none": 1},
			server: resultstest.Window{Requests: map[string]int64{"PUT configmaps 200": 100}},
			m:      timedOut(1),
			want: results.ServerCheck{
				Available: true,
				Requests: []results.RequestCount{
					{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 99, Server: 100},
					{Verb: "PUT", Resource: "configmaps", Code: results.CodeNoResponse, Client: 1},
				},
				Mismatch: "PUT configmaps 200: apiserver 100, kb-bench 99; PUT configmaps none: apiserver 0, kb-bench 1" +
					" (possible causes: requests that got no answer may still have been counted by the apiserver;" +
					" 1 write attempts timed out on the client and may have completed on the server;" +
					" other clients may use the same resources on this cluster (the server counts them all))",
			},
		},
		{
			name:   "a request that got no answer never reached the apiserver",
			client: map[string]int64{"PATCH secrets 200": 10, "PATCH secrets none": 2},
			server: resultstest.Window{Requests: map[string]int64{"PATCH secrets 200": 10}},
			m:      timedOut(0),
			want: results.ServerCheck{
				Available: true,
				Requests: []results.RequestCount{
					{Verb: "PATCH", Resource: "secrets", Code: "200", Client: 10, Server: 10},
					{Verb: "PATCH", Resource: "secrets", Code: results.CodeNoResponse, Client: 2},
				},
				Mismatch: "PATCH secrets none: apiserver 0, kb-bench 2" +
					" (possible causes: requests that got no answer may still have been counted by the apiserver)",
			},
		},
		{
			name:   "a subresource is an endpoint of its own",
			client: map[string]int64{"PUT configmaps/status 200": 5},
			server: resultstest.Window{Requests: map[string]int64{
				"PUT configmaps/status 200": 5,
				"PUT configmaps 200":        7, // the object itself, by others: a write on the resource
				"PUT configmaps/scale 200":  1, // another subresource, by others: left out
			}},
			want: results.ServerCheck{
				Available: true,
				Requests: []results.RequestCount{
					{Verb: "PUT", Resource: "configmaps", Code: "200", Server: 7},
					{Verb: "PUT", Resource: "configmaps/status", Code: "200", Client: 5, Server: 5},
				},
				Mismatch: "PUT configmaps 200: apiserver 7, kb-bench 0" +
					" (possible causes: other clients may use the same resources on this cluster (the server counts them all))",
			},
		},
		{
			name: "the apiserver's own requests on watched resources",
			client: map[string]int64{
				"POST configmaps 201": 50, "POST configmaps 403": 10, "GET resourcequotas 200": 1,
			},
			watch: []string{"resourcequotas", "pods/status"},
			server: resultstest.Window{
				Requests: map[string]int64{
					"POST configmaps 201": 50, "POST configmaps 403": 10, "GET resourcequotas 200": 1,
					// Quota admission charging each admitted create, and
					// losing 3 races it retried itself.
					"PUT resourcequotas/status 200": 50,
					"PUT resourcequotas/status 409": 3,
					"LIST resourcequotas 200":       1,
					"WATCH resourcequotas 200":      1, // watches are never reported
					"PATCH pods/status 200":         4, // watched subresource
					"PATCH pods 200":                2, // not watched, not touched
				},
				Etcd:     map[string]int64{"create configmaps": 50, "update resourcequotas": 58, "update pods": 6},
				EtcdTook: ms,
			},
			want: results.ServerCheck{
				Available: true, Match: true,
				Requests: []results.RequestCount{
					{Verb: "POST", Resource: "configmaps", Code: "201", Client: 50, Server: 50},
					{Verb: "POST", Resource: "configmaps", Code: "403", Client: 10, Server: 10},
					{Verb: "GET", Resource: "resourcequotas", Code: "200", Client: 1, Server: 1},
				},
				Internal: []results.RequestCount{
					{Verb: "PATCH", Resource: "pods/status", Code: "200", Server: 4},
					{Verb: "LIST", Resource: "resourcequotas", Code: "200", Server: 1},
					{Verb: "PUT", Resource: "resourcequotas/status", Code: "200", Server: 50},
					{Verb: "PUT", Resource: "resourcequotas/status", Code: "409", Server: 3},
				},
				Etcd: []results.EtcdRequests{
					{Resource: "configmaps", Operation: "create", Count: 50, Mean: ms},
					{Resource: "pods", Operation: "update", Count: 6, Mean: ms},
					{Resource: "resourcequotas", Operation: "update", Count: 58, Mean: ms},
				},
				Races: []results.EtcdRaces{
					// 4 status patches and the 2 patches by others won:
					// every pods transaction is accounted for.
					{Resource: "pods", Updates: 6},
					// 50 won, 8 lost a race; 3 of those came back as
					// 409s, so 5 at least were retried inside.
					{Resource: "resourcequotas", Updates: 58, Failed: 8, Absorbed: 5},
				},
			},
		},
		{
			name: "races and absorbed conflicts per resource",
			client: map[string]int64{
				"PATCH secrets 200":  400,
				"PUT configmaps 200": 1000, "PUT configmaps 409": 300,
				"APPLY leases.coordination.k8s.io 200": 20, "APPLY leases.coordination.k8s.io 409": 5,
			},
			server: resultstest.Window{
				Requests: map[string]int64{
					"PATCH secrets 200":  400,
					"PUT configmaps 200": 1000, "PUT configmaps 409": 300,
					"APPLY leases.coordination.k8s.io 200": 20, "APPLY leases.coordination.k8s.io 409": 5,
				},
				Etcd:     map[string]int64{"update secrets": 460, "update configmaps": 1335, "update leases.coordination.k8s.io": 20},
				EtcdTook: 3 * ms,
			},
			want: results.ServerCheck{
				Available: true, Match: true,
				Requests: []results.RequestCount{
					{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1000, Server: 1000},
					{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 300, Server: 300},
					{Verb: "APPLY", Resource: "leases.coordination.k8s.io", Code: "200", Client: 20, Server: 20},
					{Verb: "APPLY", Resource: "leases.coordination.k8s.io", Code: "409", Client: 5, Server: 5},
					{Verb: "PATCH", Resource: "secrets", Code: "200", Client: 400, Server: 400},
				},
				Etcd: []results.EtcdRequests{
					{Resource: "configmaps", Operation: "update", Count: 1335, Mean: 3 * ms},
					{Resource: "leases", Operation: "update", Count: 20, Mean: 3 * ms},
					{Resource: "secrets", Operation: "update", Count: 460, Mean: 3 * ms},
				},
				Races: []results.EtcdRaces{
					// 335 lost, 300 answered 409: at least 35 retried inside.
					{Resource: "configmaps", Updates: 1335, Failed: 335, Absorbed: 35},
					// Field-manager 409s never reach Etcd: nothing lost, nothing absorbed.
					{Resource: "leases", Updates: 20},
					// Merge patches never answer 409: every lost race was retried inside.
					{Resource: "secrets", Updates: 460, Failed: 60, Absorbed: 60},
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, after := resultstest.Scrapes(t, tc.server)
			got := analysis.NewServerCheck(before, after, resultstest.Requests(t, tc.client), tc.watch, tc.m)
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %s\nwant %s", dump(*got), dump(tc.want))
			}
		})
	}
}

func dump(c results.ServerCheck) string {
	var b strings.Builder
	fmt.Fprintf(&b, "available %v %q, match %v\n  mismatch %q\n", c.Available, c.Reason, c.Match, c.Mismatch)
	for _, r := range c.Requests {
		fmt.Fprintf(&b, "  request  %+v\n", r)
	}
	for _, r := range c.Internal {
		fmt.Fprintf(&b, "  internal %+v\n", r)
	}
	for _, e := range c.Etcd {
		fmt.Fprintf(&b, "  etcd     %+v\n", e)
	}
	for _, e := range c.Races {
		fmt.Fprintf(&b, "  races    %+v\n", e)
	}
	fmt.Fprintf(&b, "  flow control: rejected %d, waited %d for %v", c.FlowControlRejected, c.FlowControlWaited, c.FlowControlMeanWait)
	return b.String()
}

// A counter that went backwards between the scrapes means another
// apiserver answered, or this one restarted: no check.
func TestNewServerCheckRestarted(t *testing.T) {
	before, after := resultstest.Scrapes(t, resultstest.Window{Requests: map[string]int64{"PUT configmaps 200": 10}})
	client := resultstest.Requests(t, map[string]int64{"PUT configmaps 200": 10})
	c := analysis.NewServerCheck(after, before, client, nil, results.Measurements{})
	if c.Available || !strings.Contains(c.Reason, "restarted") || c.Match || len(c.Requests) != 0 {
		t.Errorf("counters going backwards: %s; want unavailable, saying the apiserver restarted", dump(*c))
	}
}

// Each apiserver's share counts what it served on the clients' endpoints
// only, and the shares add up to the sums the cross-check compares.
func TestAPIServerShares(t *testing.T) {
	put200 := metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "PUT", Resource: "configmaps"}, Code: "200"}
	put409 := metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "PUT", Resource: "configmaps"}, Code: "409"}
	get200 := metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "GET", Resource: "configmaps"}, Code: "200"}
	lease := metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "PUT", Group: "coordination.k8s.io", Resource: "leases"}, Code: "200"}
	sample := func(n map[metrics.RequestKey]int64) metrics.ServerSample {
		s := metrics.NewServerSample(time.Unix(0, 0))
		for k, v := range n {
			s.Requests[k] = v
		}
		return s
	}
	before := []metrics.ServerSample{sample(map[metrics.RequestKey]int64{put200: 1}), sample(nil)}
	after := []metrics.ServerSample{
		sample(map[metrics.RequestKey]int64{put200: 11, put409: 30, get200: 41, lease: 9}),
		sample(map[metrics.RequestKey]int64{put200: 7, put409: 2, get200: 9}),
	}
	client := map[metrics.RequestKey]int64{put200: 17, put409: 32, get200: 50}
	got, err := analysis.APIServerShares([]string{"a", "b"}, before, after, client)
	if err != nil {
		t.Fatal(err)
	}
	want := []results.APIServerShare{
		{Server: "a", Requests: 10 + 30 + 41, Writes: 10, Conflicts: 30},
		{Server: "b", Requests: 7 + 2 + 9, Writes: 7, Conflicts: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shares %+v, want %+v", got, want)
	}
	// A counter that went backwards on one apiserver (it restarted) is
	// an error naming it.
	if _, err := analysis.APIServerShares([]string{"a", "b"}, after, before, client); err == nil || !strings.Contains(err.Error(), "apiserver a") {
		t.Errorf("shares over a restart: %v, want an error naming apiserver a", err)
	}
}

// On a cluster with other clients, what the apiserver counted beyond
// kb-bench's is theirs once kb-bench's every request is accounted for (the
// trial's kind run: GET, POST and PUT configmaps one to five more); a
// shortfall, an unanswered request or a client timeout keeps the
// mismatch, as another client cannot explain those.
func TestAttributeOthers(t *testing.T) {
	row := func(verb, code string, client, server int64) results.RequestCount {
		return results.RequestCount{Verb: verb, Resource: "configmaps", Code: code, Client: client, Server: server}
	}
	trial := func() *results.ServerCheck {
		return &results.ServerCheck{Available: true, Mismatch: "...", Requests: []results.RequestCount{
			row("GET", "200", 1441, 1442), row("POST", "201", 0, 5), row("PUT", "200", 274, 275), row("PUT", "409", 50, 50)}}
	}
	c := trial()
	analysis.AttributeOthers(c, results.Measurements{})
	wantOthers := []results.RequestCount{row("GET", "200", 0, 1), row("POST", "201", 0, 5), row("PUT", "200", 0, 1)}
	wantRequests := []results.RequestCount{row("GET", "200", 1441, 1441), row("PUT", "200", 274, 274), row("PUT", "409", 50, 50)}
	if !c.Match || c.Mismatch != "" || !reflect.DeepEqual(c.Others, wantOthers) || !reflect.DeepEqual(c.Requests, wantRequests) {
		t.Errorf("attributed: match %t %q\nothers %+v\nrequests %+v", c.Match, c.Mismatch, c.Others, c.Requests)
	}

	for _, tc := range []struct {
		name string
		edit func(c *results.ServerCheck)
		m    results.Measurements
	}{
		{"the apiserver counted fewer", func(c *results.ServerCheck) { c.Requests[3].Server = 49 }, results.Measurements{}},
		{"a request without an answer", func(c *results.ServerCheck) {
			c.Requests = append(c.Requests, row("PUT", results.CodeNoResponse, 1, 0))
		}, results.Measurements{}},
		{"a client timeout", func(*results.ServerCheck) {}, timedOut(1)},
	} {
		c := trial()
		tc.edit(c)
		analysis.AttributeOthers(c, tc.m)
		if c.Match || len(c.Others) > 0 || c.Mismatch == "" {
			t.Errorf("%s: attributed to others: %+v", tc.name, c)
		}
	}
}
