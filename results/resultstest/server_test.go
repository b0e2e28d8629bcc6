package resultstest

import (
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results"
)

func TestServerAgrees(t *testing.T) {
	row := func(verb, code string, client, server int64) results.RequestCount {
		return results.RequestCount{Verb: verb, Resource: "leases.coordination.k8s.io", Code: code, Client: client, Server: server}
	}
	for _, tc := range []struct {
		name string
		rows []results.RequestCount
		want string // "" when it agrees; else a part of the error
	}{
		{"exact", []results.RequestCount{row("PUT", "200", 5, 5)}, ""},
		{"a timed-out request answered late", []results.RequestCount{row("PUT", "200", 5, 5), row("PUT", "504", 0, 1), row("PUT", "none", 1, 0)}, ""},
		{"a timed-out request that never arrived", []results.RequestCount{row("PUT", "200", 5, 5), row("PUT", "none", 1, 0)}, ""},
		{"more extra than unanswered", []results.RequestCount{row("PUT", "200", 5, 6), row("PUT", "504", 0, 1), row("PUT", "none", 1, 0)}, "counted 2 requests more"},
		{"unanswered on another verb", []results.RequestCount{row("PUT", "504", 0, 1), row("GET", "none", 1, 0)}, "PUT leases.coordination.k8s.io: the apiserver counted 1 requests more"},
		{"an answer the apiserver did not count", []results.RequestCount{row("PUT", "200", 6, 5)}, "the apiserver counted 5, kb-bench 6 answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &results.ServerCheck{Available: true, Requests: tc.rows, Match: true}
			for _, r := range tc.rows {
				c.Match = c.Match && r.Client == r.Server
			}
			err := ServerAgrees(c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want agreement, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
	if err := ServerAgrees(&results.ServerCheck{Reason: "no scrape"}); err == nil || !strings.Contains(err.Error(), "no scrape") {
		t.Fatalf("an unavailable check: %v", err)
	}
}
