package text

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
)

func TestDescribeServer(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		c    *results.ServerCheck
		want [][2]string
	}{
		{"not checked", nil, [][2]string{{"server", "not checked"}}},
		{"unavailable", results.UnavailableServerCheck("the apiserver's /metrics is not readable (HTTP 403 Forbidden)"),
			[][2]string{{"server", "not checked: the apiserver's /metrics is not readable (HTTP 403 Forbidden)"}}},
		{"match", &results.ServerCheck{
			Available: true, Match: true,
			Requests: []results.RequestCount{
				{Verb: "GET", Resource: "configmaps", Code: "200", Client: 1678, Server: 1678},
				{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1141, Server: 1141},
				{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 511, Server: 511},
			},
			Etcd:  []results.EtcdRequests{{Resource: "configmaps", Operation: "update", Count: 1153, Mean: 2 * ms}},
			Races: []results.EtcdRaces{{Resource: "configmaps", Updates: 1153, Failed: 12}},
		}, [][2]string{
			{"server", "apiserver counted the same 3330 requests as kb-bench: GET configmaps 1678 (200); PUT configmaps 1141 (200), 511 (409)"},
			{"", "etcd requests: configmaps update 1153 (mean 2.00ms)"},
			{"", "etcd: configmaps 1153 update transactions, 12 lost a race"},
		}},
		{"several apiservers", &results.ServerCheck{
			Available: true, Match: true,
			Requests: []results.RequestCount{
				{Verb: "GET", Resource: "configmaps", Code: "200", Client: 30, Server: 30},
				{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 10, Server: 10},
				{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 20, Server: 20},
			},
			Etcd: []results.EtcdRequests{
				{Resource: "configmaps", Operation: "get", Count: 33, Mean: 6 * ms},
				{Resource: "configmaps", Operation: "update", Count: 12, Mean: 7 * ms},
			},
			APIServers: []results.APIServerShare{
				{Server: "https://127.0.0.1:1", Requests: 45, Writes: 6, Conflicts: 9},
				{Server: "https://127.0.0.1:2", Requests: 15, Writes: 4, Conflicts: 11},
			},
		}, [][2]string{
			{"server", "apiserver counted the same 60 requests as kb-bench: GET configmaps 30 (200); PUT configmaps 10 (200), 20 (409)"},
			{"", "etcd requests: configmaps get 33 (mean 6.00ms), update 12 (mean 7.00ms)"},
			{"apiservers", "https://127.0.0.1:1 75.0% of requests (6 writes, 9 409s); https://127.0.0.1:2 25.0% of requests (4 writes, 11 409s)"},
		}},
		{"match with the apiserver's own requests, absorbed conflicts and flow control", &results.ServerCheck{
			Available: true, Match: true,
			Requests: []results.RequestCount{
				{Verb: "POST", Resource: "configmaps", Code: "201", Client: 50, Server: 50},
				{Verb: "POST", Resource: "configmaps", Code: "403", Client: 10, Server: 10},
			},
			Internal: []results.RequestCount{
				{Verb: "PUT", Resource: "resourcequotas/status", Code: "200", Server: 50},
				{Verb: "PUT", Resource: "resourcequotas/status", Code: "409", Server: 3},
			},
			Races:               []results.EtcdRaces{{Resource: "resourcequotas", Updates: 58, Failed: 8, Absorbed: 5}},
			FlowControlRejected: 4, FlowControlWaited: 3004, FlowControlMeanWait: 500 * time.Microsecond,
		}, [][2]string{
			{"server", "apiserver counted the same 60 requests as kb-bench: POST configmaps 50 (201), 10 (403)"},
			{"", "apiserver's own requests: PUT resourcequotas/status 50 (200), 3 (409)"},
			{"", "etcd: resourcequotas 58 update transactions, 8 lost a race; at least 5 conflicts retried inside the apiserver (no 409 returned)"},
			{"", "flow control rejected 4 requests (429)"},
		}},
		{"mismatch", &results.ServerCheck{
			Available: true,
			Requests: []results.RequestCount{
				{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 99, Server: 100},
				{Verb: "PUT", Resource: "configmaps", Code: results.CodeNoResponse, Client: 1},
			},
			Mismatch: "PUT configmaps 200: apiserver 100, kb-bench 99; PUT configmaps none: apiserver 0, kb-bench 1 (possible causes: requests that got no answer may still have been counted by the apiserver)",
			Races:    []results.EtcdRaces{{Resource: "configmaps", Updates: 110, Failed: 10, Absorbed: 10}},
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
		rows []results.RequestCount
		want string
	}{
		{"none", nil, ""},
		{"one", []results.RequestCount{{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 3, Server: 3}}, "PUT configmaps 3 (200)"},
		{"codes of one endpoint together", []results.RequestCount{
			{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 1839, Server: 1839},
			{Verb: "PUT", Resource: "configmaps", Code: "409", Client: 7934, Server: 7934},
			{Verb: "APPLY", Resource: "leases.coordination.k8s.io", Code: "200", Client: 20, Server: 20},
			{Verb: "PUT", Resource: "pods/status", Code: "200", Client: 4, Server: 4},
			{Verb: "PUT", Resource: "pods/status", Code: "409", Client: 1, Server: 1},
		}, "PUT configmaps 1839 (200), 7934 (409); APPLY leases.coordination.k8s.io 20 (200); PUT pods/status 4 (200), 1 (409)"},
		{"the client's count where the server has none", []results.RequestCount{
			{Verb: "PUT", Resource: "configmaps", Code: "200", Client: 99, Server: 100},
			{Verb: "PUT", Resource: "configmaps", Code: results.CodeNoResponse, Client: 1},
		}, "PUT configmaps 100 (200), 1 (none)"},
		{"the apiserver's own", []results.RequestCount{
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
