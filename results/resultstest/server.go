package resultstest

import (
	"errors"
	"fmt"

	"github.com/kb-bench/kb-bench/results"
)

// ServerAgrees checks a run's server cross-check for what the apiserver
// guarantees: every request that got an answer is counted by both sides
// with its code, and a request that got none (a client-side timeout on a
// loaded machine) may or may not have reached the apiserver, which then
// counts it with the code it answered too late (a 504, or the write's
// outcome). So, per verb and resource: the apiserver never counts fewer
// answers of a code than kb-bench saw, and what it counts more are at most
// kb-bench's requests without an answer. An exact match passes at once.
func ServerAgrees(c *results.ServerCheck) error {
	switch {
	case c == nil:
		return errors.New("no server cross-check in the result")
	case !c.Available:
		return fmt.Errorf("no server cross-check: %s", c.Reason)
	case c.Match:
		return nil
	}
	type endpoint struct{ verb, resource string }
	unanswered, extra := map[endpoint]int64{}, map[endpoint]int64{}
	for _, r := range c.Requests {
		e := endpoint{r.Verb, r.Resource}
		if r.Code == results.CodeNoResponse {
			unanswered[e] += r.Client - r.Server
			continue
		}
		if r.Server < r.Client {
			return fmt.Errorf("%s %s %s: the apiserver counted %d, kb-bench %d answers: %s", r.Verb, r.Resource, r.Code, r.Server, r.Client, c.Mismatch)
		}
		extra[e] += r.Server - r.Client
	}
	for e, n := range extra {
		if n > unanswered[e] {
			return fmt.Errorf("%s %s: the apiserver counted %d requests more than kb-bench, which had %d without an answer: %s", e.verb, e.resource, n, unanswered[e], c.Mismatch)
		}
	}
	return nil
}
