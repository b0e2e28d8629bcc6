package results

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

// req names a request the way the check prints it: "PUT configmaps 200",
// "APPLY leases.coordination.k8s.io 409", "PUT resourcequotas/status 200",
// "PUT configmaps none".
func req(t *testing.T, s string) metrics.RequestKey {
	t.Helper()
	f := strings.Fields(s)
	if len(f) != 3 {
		t.Fatalf("bad request %q: want VERB RESOURCE[.GROUP][/SUBRESOURCE] CODE", s)
	}
	k := metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: f[0]}, Code: f[2]}
	res, sub, _ := strings.Cut(f[1], "/")
	k.Resource, k.Group, _ = strings.Cut(res, ".")
	k.Subresource = sub
	return k
}

func reqs(t *testing.T, counts map[string]int64) map[metrics.RequestKey]int64 {
	t.Helper()
	m := map[metrics.RequestKey]int64{}
	for s, n := range counts {
		m[req(t, s)] += n
	}
	return m
}

// etcdKey names an etcd operation: "update configmaps", "update leases.coordination.k8s.io".
func etcdKey(t *testing.T, s string) metrics.EtcdKey {
	t.Helper()
	op, res, ok := strings.Cut(s, " ")
	if !ok {
		t.Fatalf("bad etcd operation %q: want OPERATION RESOURCE[.GROUP]", s)
	}
	k := metrics.EtcdKey{Operation: op}
	k.Resource, k.Group, _ = strings.Cut(res, ".")
	return k
}

// window is what the apiserver counted between two scrapes.
type window struct {
	requests map[string]int64
	// etcd counts etcd operations; each took etcdTook on average.
	etcd     map[string]int64
	etcdTook time.Duration
	// rejected and waited are flow control's: waited counts requests that
	// queued, executed or not, each for waitedFor.
	rejected, waited, waitedRejected int64
	waitedFor                        time.Duration
}

// scrapes returns the two samples around w: the before sample holds
// counts from earlier traffic (and series that do not change), so the
// check must subtract.
func scrapes(t *testing.T, w window) (before, after metrics.ServerSample) {
	t.Helper()
	before, after = metrics.NewServerSample(t0), metrics.NewServerSample(t0.Add(5*time.Second))
	const earlier = 1000
	idle := req(t, "GET namespaces 200")
	before.Requests[idle], after.Requests[idle] = 7, 7
	for s, n := range w.requests {
		k := req(t, s)
		before.Requests[k] = earlier
		after.Requests[k] = earlier + n
	}
	for s, n := range w.etcd {
		k := etcdKey(t, s)
		before.Etcd[k], after.Etcd[k] = earlier, earlier+n
		before.EtcdDurations[k] = metrics.CountSum{Count: earlier, Sum: 1}
		after.EtcdDurations[k] = metrics.CountSum{Count: earlier + n, Sum: 1 + float64(n)*w.etcdTook.Seconds()}
	}
	flow := metrics.FlowKey{PriorityLevel: "global-default", FlowSchema: "global-default", Reason: "queue-full"}
	before.FlowRejected[flow], after.FlowRejected[flow] = 2, 2+w.rejected
	for executed, n := range map[bool]int64{true: w.waited, false: w.waitedRejected} {
		k := metrics.FlowWaitKey{PriorityLevel: "global-default", FlowSchema: "global-default", Executed: executed}
		before.FlowWait[k] = metrics.CountSum{Count: 10, Sum: 0.01}
		after.FlowWait[k] = metrics.CountSum{Count: 10 + n, Sum: 0.01 + float64(n)*w.waitedFor.Seconds()}
	}
	return before, after
}

// timedOut are Measurements whose write attempts include n timeouts.
func timedOut(n int64) Measurements {
	return Measurements{WriteOutcomes: map[string]int64{"success": 99, "timeout": n}}
}

func TestNewServerCheck(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		client map[string]int64
		server window
		watch  []string
		m      Measurements
		want   ServerCheck
	}{
		{
			name: "exact match, others' traffic elsewhere left out",
			client: map[string]int64{
				"GET configmaps 200": 1678, "PUT configmaps 200": 1141, "PUT configmaps 409": 511,
			},
			server: window{
				requests: map[string]int64{
					"GET configmaps 200": 1678, "PUT configmaps 200": 1141, "PUT configmaps 409": 511,
					// Not kb-bench's, and not on what it did: left out.
					"PUT leases.coordination.k8s.io 200": 6, // another resource
					"LIST configmaps 200":                3, // a read on an endpoint the clients did not use
					"WATCH configmaps 200":               2, // watches end when they end
					"PUT configmaps/status 200":          4, // a subresource the clients did not use
					"POST namespaces 201":                1,
				},
				etcd:     map[string]int64{"update configmaps": 1153, "get configmaps": 12, "update leases.coordination.k8s.io": 6},
				etcdTook: 2 * ms,
				rejected: 4, waited: 3000, waitedRejected: 4, waitedFor: 500 * time.Microsecond,
			},
			want: ServerCheck{
				Available: true, Match: true,
				Requests: []RequestCount{
					{Verb: "GET", Resource: "configmaps", Code: "200", Client: 1678, Server: 1678},
					{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1141, Server: 1141},
					{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 511, Server: 511},
				},
				Etcd: []EtcdRequests{
					{Resource: "configmaps", Operation: "get", Count: 12, Mean: 2 * ms},
					{Resource: "configmaps", Operation: "update", Count: 1153, Mean: 2 * ms},
				},
				// 1141 PUTs and the 4 status writes by others won their
				// transactions; the 8 others lost a race, and the 511 409s
				// cover them all.
				Races:               []EtcdRaces{{Resource: "configmaps", Updates: 1153, Failed: 8}},
				FlowControlRejected: 4, FlowControlWaited: 3004, FlowControlMeanWait: 500 * time.Microsecond,
			},
		},
		{
			name:   "server counted more: other clients wrote the same resource",
			client: map[string]int64{"PUT configmaps 200": 100},
			server: window{requests: map[string]int64{
				"PUT configmaps 200":  103,
				"POST configmaps 201": 2, // a write on the resource, on an endpoint kb-bench did not use
			}},
			m: timedOut(0),
			want: ServerCheck{
				Available: true,
				Requests: []RequestCount{
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
			server: window{requests: map[string]int64{"PUT configmaps 200": 100}},
			m:      timedOut(1),
			want: ServerCheck{
				Available: true,
				Requests: []RequestCount{
					{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 99, Server: 100},
					{Verb: "PUT", Resource: "configmaps", Code: CodeNoResponse, Client: 1},
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
			server: window{requests: map[string]int64{"PATCH secrets 200": 10}},
			m:      timedOut(0),
			want: ServerCheck{
				Available: true,
				Requests: []RequestCount{
					{Verb: "PATCH", Resource: "secrets", Code: "200", Client: 10, Server: 10},
					{Verb: "PATCH", Resource: "secrets", Code: CodeNoResponse, Client: 2},
				},
				Mismatch: "PATCH secrets none: apiserver 0, kb-bench 2" +
					" (possible causes: requests that got no answer may still have been counted by the apiserver)",
			},
		},
		{
			name:   "a subresource is an endpoint of its own",
			client: map[string]int64{"PUT configmaps/status 200": 5},
			server: window{requests: map[string]int64{
				"PUT configmaps/status 200": 5,
				"PUT configmaps 200":        7, // the object itself, by others: a write on the resource
				"PUT configmaps/scale 200":  1, // another subresource, by others: left out
			}},
			want: ServerCheck{
				Available: true,
				Requests: []RequestCount{
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
			server: window{
				requests: map[string]int64{
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
				etcd:     map[string]int64{"create configmaps": 50, "update resourcequotas": 58, "update pods": 6},
				etcdTook: ms,
			},
			want: ServerCheck{
				Available: true, Match: true,
				Requests: []RequestCount{
					{Verb: "POST", Resource: "configmaps", Code: "201", Client: 50, Server: 50},
					{Verb: "POST", Resource: "configmaps", Code: "403", Client: 10, Server: 10},
					{Verb: "GET", Resource: "resourcequotas", Code: "200", Client: 1, Server: 1},
				},
				Internal: []RequestCount{
					{Verb: "PATCH", Resource: "pods/status", Code: "200", Server: 4},
					{Verb: "LIST", Resource: "resourcequotas", Code: "200", Server: 1},
					{Verb: "PUT", Resource: "resourcequotas/status", Code: "200", Server: 50},
					{Verb: "PUT", Resource: "resourcequotas/status", Code: "409", Server: 3},
				},
				Etcd: []EtcdRequests{
					{Resource: "configmaps", Operation: "create", Count: 50, Mean: ms},
					{Resource: "pods", Operation: "update", Count: 6, Mean: ms},
					{Resource: "resourcequotas", Operation: "update", Count: 58, Mean: ms},
				},
				Races: []EtcdRaces{
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
			server: window{
				requests: map[string]int64{
					"PATCH secrets 200":  400,
					"PUT configmaps 200": 1000, "PUT configmaps 409": 300,
					"APPLY leases.coordination.k8s.io 200": 20, "APPLY leases.coordination.k8s.io 409": 5,
				},
				etcd:     map[string]int64{"update secrets": 460, "update configmaps": 1335, "update leases.coordination.k8s.io": 20},
				etcdTook: 3 * ms,
			},
			want: ServerCheck{
				Available: true, Match: true,
				Requests: []RequestCount{
					{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1000, Server: 1000},
					{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 300, Server: 300},
					{Verb: "APPLY", Resource: "leases.coordination.k8s.io", Code: "200", Client: 20, Server: 20},
					{Verb: "APPLY", Resource: "leases.coordination.k8s.io", Code: "409", Client: 5, Server: 5},
					{Verb: "PATCH", Resource: "secrets", Code: "200", Client: 400, Server: 400},
				},
				Etcd: []EtcdRequests{
					{Resource: "configmaps", Operation: "update", Count: 1335, Mean: 3 * ms},
					{Resource: "leases", Operation: "update", Count: 20, Mean: 3 * ms},
					{Resource: "secrets", Operation: "update", Count: 460, Mean: 3 * ms},
				},
				Races: []EtcdRaces{
					// 335 lost, 300 answered 409: at least 35 retried inside.
					{Resource: "configmaps", Updates: 1335, Failed: 335, Absorbed: 35},
					// Field-manager 409s never reach etcd: nothing lost, nothing absorbed.
					{Resource: "leases", Updates: 20},
					// Merge patches never answer 409: every lost race was retried inside.
					{Resource: "secrets", Updates: 460, Failed: 60, Absorbed: 60},
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, after := scrapes(t, tc.server)
			got := NewServerCheck(before, after, reqs(t, tc.client), tc.watch, tc.m)
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %s\nwant %s", dump(*got), dump(tc.want))
			}
		})
	}
}

func dump(c ServerCheck) string {
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
	before, after := scrapes(t, window{requests: map[string]int64{"PUT configmaps 200": 10}})
	client := reqs(t, map[string]int64{"PUT configmaps 200": 10})
	c := NewServerCheck(after, before, client, nil, Measurements{})
	if c.Available || !strings.Contains(c.Reason, "restarted") || c.Match || len(c.Requests) != 0 {
		t.Errorf("counters going backwards: %s; want unavailable, saying the apiserver restarted", dump(*c))
	}
	if got := describeServer(c); len(got) != 1 || got[0][1] != "not checked: "+c.Reason {
		t.Errorf("describeServer = %q", got)
	}
}

func TestDescribeServer(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		c    *ServerCheck
		want [][2]string
	}{
		{"not checked", nil, [][2]string{{"server", "not checked"}}},
		{"unavailable", UnavailableServerCheck("the apiserver's /metrics is not readable (HTTP 403 Forbidden)"),
			[][2]string{{"server", "not checked: the apiserver's /metrics is not readable (HTTP 403 Forbidden)"}}},
		{"match", &ServerCheck{
			Available: true, Match: true,
			Requests: []RequestCount{
				{Verb: "GET", Resource: "configmaps", Code: "200", Client: 1678, Server: 1678},
				{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1141, Server: 1141},
				{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 511, Server: 511},
			},
			Etcd:  []EtcdRequests{{Resource: "configmaps", Operation: "update", Count: 1153, Mean: 2 * ms}},
			Races: []EtcdRaces{{Resource: "configmaps", Updates: 1153, Failed: 12}},
		}, [][2]string{
			{"server", "apiserver counted the same 3330 requests as kb-bench: GET configmaps 1678 (200); PUT configmaps 1141 (200), 511 (409)"},
			{"", "etcd: configmaps 1153 update transactions, 12 lost a race"},
		}},
		{"match with the apiserver's own requests, absorbed conflicts and flow control", &ServerCheck{
			Available: true, Match: true,
			Requests: []RequestCount{
				{Verb: "POST", Resource: "configmaps", Code: "201", Client: 50, Server: 50},
				{Verb: "POST", Resource: "configmaps", Code: "403", Client: 10, Server: 10},
			},
			Internal: []RequestCount{
				{Verb: "PUT", Resource: "resourcequotas/status", Code: "200", Server: 50},
				{Verb: "PUT", Resource: "resourcequotas/status", Code: "409", Server: 3},
			},
			Races:               []EtcdRaces{{Resource: "resourcequotas", Updates: 58, Failed: 8, Absorbed: 5}},
			FlowControlRejected: 4, FlowControlWaited: 3004, FlowControlMeanWait: 500 * time.Microsecond,
		}, [][2]string{
			{"server", "apiserver counted the same 60 requests as kb-bench: POST configmaps 50 (201), 10 (403)"},
			{"", "apiserver's own requests: PUT resourcequotas/status 50 (200), 3 (409)"},
			{"", "etcd: resourcequotas 58 update transactions, 8 lost a race; at least 5 conflicts retried inside the apiserver (no 409 returned)"},
			{"", "flow control rejected 4 requests (429)"},
		}},
		{"mismatch", &ServerCheck{
			Available: true,
			Requests: []RequestCount{
				{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 99, Server: 100},
				{Verb: "PUT", Resource: "configmaps", Code: CodeNoResponse, Client: 1},
			},
			Mismatch: "PUT configmaps 200: apiserver 100, kb-bench 99; PUT configmaps none: apiserver 0, kb-bench 1 (possible causes: requests that got no answer may still have been counted by the apiserver)",
			Races:    []EtcdRaces{{Resource: "configmaps", Updates: 110, Failed: 10, Absorbed: 10}},
		}, [][2]string{
			{"server", "MISMATCH: PUT configmaps 200: apiserver 100, kb-bench 99; PUT configmaps none: apiserver 0, kb-bench 1 (possible causes: requests that got no answer may still have been counted by the apiserver)"},
			{"", "etcd: configmaps 110 update transactions, 10 lost a race; at least 10 conflicts retried inside the apiserver (no 409 returned)"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := describeServer(tc.c)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", rowsText(got), rowsText(tc.want))
			}
		})
	}
}

func rowsText(rows [][2]string) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-8s %s\n", strconv.Quote(r[0]), r[1])
	}
	return b.String()
}

// describeCounts groups the rows of one endpoint (they arrive sorted) and
// prints the server's count, or the client's where the server has none.
func TestDescribeCounts(t *testing.T) {
	tests := []struct {
		name string
		rows []RequestCount
		want string
	}{
		{"none", nil, ""},
		{"one", []RequestCount{{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 3, Server: 3}}, "PUT configmaps 3 (200)"},
		{"codes of one endpoint together", []RequestCount{
			{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1839, Server: 1839},
			{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 7934, Server: 7934},
			{Verb: "APPLY", Resource: "leases.coordination.k8s.io", Code: "200", Client: 20, Server: 20},
			{Verb: "PUT", Resource: "pods/status", Code: "200", Client: 4, Server: 4},
			{Verb: "PUT", Resource: "pods/status", Code: "409", Client: 1, Server: 1},
		}, "PUT configmaps 1839 (200), 7934 (409); APPLY leases.coordination.k8s.io 20 (200); PUT pods/status 4 (200), 1 (409)"},
		{"the client's count where the server has none", []RequestCount{
			{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 99, Server: 100},
			{Verb: "PUT", Resource: "configmaps", Code: CodeNoResponse, Client: 1},
		}, "PUT configmaps 100 (200), 1 (none)"},
		{"the apiserver's own", []RequestCount{
			{Verb: "PUT", Resource: "resourcequotas/status", Code: "200", Server: 50},
		}, "PUT resourcequotas/status 50 (200)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeCounts(tc.rows); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
