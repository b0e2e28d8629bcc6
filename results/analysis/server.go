package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// resourceName names an endpoint's resource as the check prints it.
func resourceName(k metrics.EndpointKey) string {
	name := k.Resource
	if k.Group != "" {
		name += "." + k.Group
	}
	if k.Subresource != "" {
		name += "/" + k.Subresource
	}
	return name
}

func endpointsOf(client map[metrics.RequestKey]int64) map[metrics.EndpointKey]bool {
	endpoints := map[metrics.EndpointKey]bool{}
	for k := range client {
		endpoints[k.EndpointKey] = true
	}
	return endpoints
}

// NewServerCheck compares the clients' requests (client) with the two
// scrapes. watch lists further resources ("resourcequotas") whose server
// counts are reported as the apiserver's own requests. m gives the run's
// figures, to explain a mismatch.
func NewServerCheck(before, after metrics.ServerSample, client map[metrics.RequestKey]int64, watch []string, m results.Measurements) *results.ServerCheck {
	c := &results.ServerCheck{}
	delta, err := after.Sub(before)
	if err != nil {
		c.Reason = err.Error()
		return c
	}
	c.Available = true

	// The resources (with group) the clients touched, and those watched.
	type res struct{ group, resource string }
	touched, resources := map[res]bool{}, map[string]bool{}
	for k := range client {
		touched[res{k.Group, k.Resource}], resources[k.Resource] = true, true
	}
	endpoints := endpointsOf(client)
	watched := func(k metrics.EndpointKey) bool {
		return slices.Contains(watch, k.Resource) || slices.Contains(watch, k.Resource+"/"+k.Subresource)
	}
	server := map[metrics.RequestKey]int64{}
	for k, n := range delta.Requests {
		switch {
		case endpoints[k.EndpointKey] || (k.Verb != "WATCH" && touched[res{k.Group, k.Resource}] && k.Subresource == "" && results.IsWriteVerb(k.Verb)):
			server[k] += n
		case watched(k.EndpointKey) && k.Verb != "WATCH":
			c.Internal = append(c.Internal, results.RequestCount{Verb: k.Verb, Resource: resourceName(k.EndpointKey), Code: k.Code, Server: n})
		}
	}
	rows := maps.Clone(server) // every request either side counted
	maps.Copy(rows, client)
	for k := range rows {
		c.Requests = append(c.Requests, results.RequestCount{Verb: k.Verb, Resource: resourceName(k.EndpointKey), Code: k.Code, Client: client[k], Server: server[k]})
	}
	sortCounts(c.Requests)
	sortCounts(c.Internal)
	c.Match = !slices.ContainsFunc(c.Requests, func(r results.RequestCount) bool { return r.Client != r.Server })
	if !c.Match {
		c.Mismatch = mismatch(c.Requests, m)
	}

	// etcd, per resource the clients touched or the scenario watches.
	etcd := map[metrics.EtcdKey]metrics.CountSum{} // by resource and operation, whatever the group
	for k, n := range delta.Etcd {
		k.Group = ""
		etcd[k] = etcd[k].Add(metrics.CountSum{Count: n})
	}
	for k, cs := range delta.EtcdDurations {
		k.Group = ""
		etcd[k] = etcd[k].Add(metrics.CountSum{Sum: cs.Sum})
	}
	relevant := func(resource string) bool {
		return resources[resource] || slices.ContainsFunc(watch, func(w string) bool { return w == resource || strings.HasPrefix(w, resource+"/") })
	}
	for k, cs := range etcd {
		if relevant(k.Resource) && cs.Count > 0 {
			c.Etcd = append(c.Etcd, results.EtcdRequests{Resource: k.Resource, Operation: k.Operation, Count: cs.Count, Mean: cs.Mean().Round(time.Microsecond)})
		}
	}
	slices.SortFunc(c.Etcd, func(a, b results.EtcdRequests) int {
		return strings.Compare(a.Resource+" "+a.Operation, b.Resource+" "+b.Operation)
	})
	for _, e := range c.Etcd {
		if e.Operation != "update" {
			continue
		}
		// Successful updates and 409s on the resource, any subresource,
		// whoever sent them: each success is one winning transaction.
		var wins, conflicts int64
		for k, n := range delta.Requests {
			if k.Resource != e.Resource || !(k.Verb == "PUT" || k.Verb == "PATCH" || k.Verb == "APPLY") {
				continue
			}
			switch {
			case strings.HasPrefix(k.Code, "2"):
				wins += n
			case k.Code == "409":
				conflicts += n
			}
		}
		failed := max(e.Count-wins, 0)
		c.Races = append(c.Races, results.EtcdRaces{Resource: e.Resource, Updates: e.Count, Failed: failed, Absorbed: max(failed-conflicts, 0)})
	}

	for _, n := range delta.FlowRejected {
		c.FlowControlRejected += n
	}
	var wait metrics.CountSum
	for _, cs := range delta.FlowWait {
		wait = wait.Add(cs)
	}
	c.FlowControlWaited, c.FlowControlMeanWait = wait.Count, wait.Mean().Round(time.Microsecond)
	return c
}

// AttributeOthers is for a target where other clients use the same
// resources as kb-bench (a real cluster's controllers): the apiserver
// counts requests whoever sends them. When every request of kb-bench's is
// accounted for (none unanswered, none timed out), what it counted beyond
// them is another client's: it moves to c.Others, and the check matches.
func AttributeOthers(c *results.ServerCheck, m results.Measurements) {
	if c == nil || !c.Available || c.Match || m.WriteOutcomes[metrics.Timeout.String()] > 0 {
		return
	}
	for _, r := range c.Requests {
		if r.Server < r.Client || r.Code == results.CodeNoResponse {
			return
		}
	}
	for i, r := range c.Requests {
		if r.Server > r.Client {
			c.Others = append(c.Others, results.RequestCount{Verb: r.Verb, Resource: r.Resource, Code: r.Code, Server: r.Server - r.Client})
			c.Requests[i].Server = r.Client
		}
	}
	c.Requests = slices.DeleteFunc(c.Requests, func(r results.RequestCount) bool { return r.Client == 0 && r.Server == 0 })
	c.Match, c.Mismatch = true, ""
}

// APIServerShares says how many of the requests the cross-check compares
// each apiserver counted between its two scrapes (before[i], after[i] are
// servers[i]'s).
func APIServerShares(servers []string, before, after []metrics.ServerSample, client map[metrics.RequestKey]int64) ([]results.APIServerShare, error) {
	endpoints := endpointsOf(client)
	shares := make([]results.APIServerShare, len(servers))
	for i, server := range servers {
		delta, err := after[i].Sub(before[i])
		if err != nil {
			return nil, fmt.Errorf("apiserver %s: %w", server, err)
		}
		sh := results.APIServerShare{Server: server}
		for k, n := range delta.Requests {
			if !endpoints[k.EndpointKey] {
				continue
			}
			sh.Requests += n
			switch {
			case !results.IsWriteVerb(k.Verb):
			case strings.HasPrefix(k.Code, "2"):
				sh.Writes += n
			case k.Code == "409":
				sh.Conflicts += n
			}
		}
		shares[i] = sh
	}
	return shares, nil
}

func sortCounts(rows []results.RequestCount) {
	slices.SortFunc(rows, func(a, b results.RequestCount) int {
		return strings.Compare(a.Resource+" "+a.Verb+" "+a.Code, b.Resource+" "+b.Verb+" "+b.Code)
	})
}

// mismatch says which counts differ and what may explain it.
func mismatch(rows []results.RequestCount, m results.Measurements) string {
	var diffs []string
	var serverMore, noResponse bool
	for _, r := range rows {
		if r.Client == r.Server {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s %s %s: apiserver %d, kb-bench %d", r.Verb, r.Resource, r.Code, r.Server, r.Client))
		serverMore = serverMore || r.Server > r.Client
		noResponse = noResponse || r.Code == results.CodeNoResponse
	}
	var causes []string
	if noResponse {
		causes = append(causes, "requests that got no answer may still have been counted by the apiserver")
	}
	if n := m.WriteOutcomes[metrics.Timeout.String()]; n > 0 {
		causes = append(causes, fmt.Sprintf("%d write attempts timed out on the client and may have completed on the server", n))
	}
	if serverMore {
		causes = append(causes, "other clients may use the same resources on this cluster (the server counts them all)")
	}
	msg := strings.Join(diffs, "; ")
	if len(causes) > 0 {
		msg += " (possible causes: " + strings.Join(causes, "; ") + ")"
	}
	return msg
}
