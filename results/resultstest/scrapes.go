package resultstest

import (
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

// The apiserver's /metrics as two scrapes around a measured window, for
// the server cross-check's tests.

// Request names a request the way the check prints it: "PUT configmaps 200",
// "APPLY leases.coordination.k8s.io 409", "PUT resourcequotas/status 200",
// "PUT configmaps none".
func Request(t testing.TB, s string) metrics.RequestKey {
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

// Requests are the requests named in counts (see Request), counted.
func Requests(t testing.TB, counts map[string]int64) map[metrics.RequestKey]int64 {
	t.Helper()
	m := map[metrics.RequestKey]int64{}
	for s, n := range counts {
		m[Request(t, s)] += n
	}
	return m
}

// etcdKey names an etcd operation: "update configmaps", "update leases.coordination.k8s.io".
func etcdKey(t testing.TB, s string) metrics.EtcdKey {
	t.Helper()
	op, res, ok := strings.Cut(s, " ")
	if !ok {
		t.Fatalf("bad etcd operation %q: want OPERATION RESOURCE[.GROUP]", s)
	}
	k := metrics.EtcdKey{Operation: op}
	k.Resource, k.Group, _ = strings.Cut(res, ".")
	return k
}

// Window is what the apiserver counted between two scrapes.
type Window struct {
	// Requests are named as Request names them.
	Requests map[string]int64
	// Etcd counts etcd operations ("update configmaps"); each took
	// EtcdTook on average.
	Etcd     map[string]int64
	EtcdTook time.Duration
	// Rejected and Waited are flow control's: Waited counts requests that
	// queued and executed, WaitedRejected those that queued and did not,
	// each for WaitedFor.
	Rejected, Waited, WaitedRejected int64
	WaitedFor                        time.Duration
}

// Scrapes returns the two samples around w: the before sample holds
// counts from earlier traffic (and series that do not change), so the
// check must subtract.
func Scrapes(t testing.TB, w Window) (before, after metrics.ServerSample) {
	t.Helper()
	before, after = metrics.NewServerSample(Start()), metrics.NewServerSample(Start().Add(5*time.Second))
	const earlier = 1000
	idle := Request(t, "GET namespaces 200")
	before.Requests[idle], after.Requests[idle] = 7, 7
	for s, n := range w.Requests {
		k := Request(t, s)
		before.Requests[k] = earlier
		after.Requests[k] = earlier + n
	}
	for s, n := range w.Etcd {
		k := etcdKey(t, s)
		before.Etcd[k], after.Etcd[k] = earlier, earlier+n
		before.EtcdDurations[k] = metrics.CountSum{Count: earlier, Sum: 1}
		after.EtcdDurations[k] = metrics.CountSum{Count: earlier + n, Sum: 1 + float64(n)*w.EtcdTook.Seconds()}
	}
	flow := metrics.FlowKey{PriorityLevel: "global-default", FlowSchema: "global-default", Reason: "queue-full"}
	before.FlowRejected[flow], after.FlowRejected[flow] = 2, 2+w.Rejected
	for executed, n := range map[bool]int64{true: w.Waited, false: w.WaitedRejected} {
		k := metrics.FlowWaitKey{PriorityLevel: "global-default", FlowSchema: "global-default", Executed: executed}
		before.FlowWait[k] = metrics.CountSum{Count: 10, Sum: 0.01}
		after.FlowWait[k] = metrics.CountSum{Count: 10 + n, Sum: 0.01 + float64(n)*w.WaitedFor.Seconds()}
	}
	return before, after
}
