package results

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

// ServerCheck compares kb-bench's own counts with the apiserver's /metrics
// for the same run: the server's 409s and successful writes on the
// benchmark's resource next to kb-bench's write attempts, and what the
// storage layer did underneath.
type ServerCheck struct {
	// Available is false when /metrics could not be read (forbidden, ...).
	Available bool `json:"available"`
	// Reason says why the check is not available.
	Reason string `json:"reason,omitempty"`
	// Resource is the benchmark's resource, e.g. configmaps or
	// configmaps/status; counts cover every namespace and every client.
	Resource string `json:"resource,omitempty"`

	// ServerWrites are PUT, PATCH and APPLY requests the apiserver answered
	// 2xx on Resource between the scrapes; ServerConflicts those it answered 409.
	ServerWrites    int64 `json:"serverWrites"`
	ServerConflicts int64 `json:"serverConflicts"`
	// Writes and Conflicts are kb-bench's own counts of the same: write
	// attempts that succeeded, and that got a 409 of either class.
	Writes    int64 `json:"writes"`
	Conflicts int64 `json:"conflicts"`
	// WritesMatch and ConflictsMatch are set when the two sides agree exactly.
	WritesMatch    bool `json:"writesMatch"`
	ConflictsMatch bool `json:"conflictsMatch"`
	// Mismatch explains a disagreement, with the likely causes.
	Mismatch string `json:"mismatch,omitempty"`

	// Requests are the server's request counts on Resource by verb and code.
	Requests []ServerRequests `json:"requests,omitempty"`
	// Latency is the server's own mean latency on Resource by verb.
	Latency []ServerLatency `json:"latency,omitempty"`

	// Etcd lists the storage layer's etcd requests for Resource by operation.
	Etcd []EtcdRequests `json:"etcd,omitempty"`
	// EtcdUpdates counts etcd write transactions for Resource: one per
	// attempt inside the apiserver's GuaranteedUpdate loop.
	EtcdUpdates int64 `json:"etcdUpdates"`
	// EtcdFailedUpdates is EtcdUpdates minus ServerWrites: transactions that
	// lost an optimistic race at etcd (another write landed first).
	EtcdFailedUpdates int64 `json:"etcdFailedUpdates"`
	// AbsorbedConflicts estimates the conflicts the apiserver retried
	// internally instead of returning a 409 (patch and apply without a
	// resourceVersion, unconditional PUT): failed transactions beyond the
	// 409s returned. It is a lower bound; exact when the run returned no 409s.
	AbsorbedConflicts int64 `json:"absorbedConflicts"`

	// FlowControlRejected counts requests API Priority and Fairness rejected
	// (every priority level: APF does not label by resource).
	FlowControlRejected int64 `json:"flowControlRejected"`
	// FlowControlWaited counts requests that went through an APF queue, and
	// FlowControlMeanWait their mean time there.
	FlowControlWaited   int64         `json:"flowControlWaited"`
	FlowControlMeanWait time.Duration `json:"flowControlMeanWait"`
}

// ServerRequests is the server's count of one verb and response code.
type ServerRequests struct {
	Verb  string `json:"verb"`
	Code  string `json:"code"`
	Count int64  `json:"count"`
}

// ServerLatency is the server's own latency for one verb.
type ServerLatency struct {
	Verb  string        `json:"verb"`
	Count int64         `json:"count"`
	Mean  time.Duration `json:"mean"`
}

// EtcdRequests is the storage layer's count of one etcd operation.
type EtcdRequests struct {
	Operation string        `json:"operation"`
	Count     int64         `json:"count"`
	Mean      time.Duration `json:"mean"`
}

// isWriteVerb reports whether an apiserver verb updates an existing object.
func isWriteVerb(verb string) bool { return verb == "PUT" || verb == "PATCH" || verb == "APPLY" }

// UnavailableServerCheck records that /metrics could not be read, and why.
func UnavailableServerCheck(reason string) *ServerCheck {
	return &ServerCheck{Available: false, Reason: reason}
}

// NewServerCheck compares the apiserver's counters between two scrapes with
// kb-bench's own Measurements for resource ("configmaps", or
// "configmaps/status" for a subresource; any API group). Take the scrapes
// after the warm-up's operations have finished and before the first measured
// one, and right after the last: the server counts every client, so other
// writers of the same resource and client-side timeouts that the server
// completed show as mismatches (the message names them).
func NewServerCheck(before, after metrics.ServerSample, resource string, m Measurements) *ServerCheck {
	c := &ServerCheck{Resource: resource}
	delta, err := after.Sub(before)
	if err != nil {
		c.Reason = err.Error()
		return c
	}
	c.Available = true
	res, sub, _ := strings.Cut(resource, "/")
	ours := func(k metrics.EndpointKey) bool { return k.Resource == res && k.Subresource == sub }

	requests := map[[2]string]int64{}
	for k, n := range delta.Requests {
		if !ours(k.EndpointKey) {
			continue
		}
		requests[[2]string{k.Verb, k.Code}] += n
		if !isWriteVerb(k.Verb) {
			continue
		}
		switch {
		case strings.HasPrefix(k.Code, "2"):
			c.ServerWrites += n
		case k.Code == "409":
			c.ServerConflicts += n
		}
	}
	for k, n := range requests {
		c.Requests = append(c.Requests, ServerRequests{Verb: k[0], Code: k[1], Count: n})
	}
	sort.Slice(c.Requests, func(i, j int) bool {
		a, b := c.Requests[i], c.Requests[j]
		return a.Verb < b.Verb || a.Verb == b.Verb && a.Code < b.Code
	})

	latency := map[string]metrics.CountSum{}
	for k, cs := range delta.Durations {
		if ours(k) {
			latency[k.Verb] = sum(latency[k.Verb], cs)
		}
	}
	for verb, cs := range latency {
		c.Latency = append(c.Latency, ServerLatency{Verb: verb, Count: cs.Count, Mean: cs.Mean().Round(time.Microsecond)})
	}
	sort.Slice(c.Latency, func(i, j int) bool { return c.Latency[i].Verb < c.Latency[j].Verb })

	// The storage layer labels by resource only: a subresource write is a
	// write of the object.
	etcd := map[string]metrics.CountSum{}
	for k, n := range delta.Etcd {
		if k.Resource == res {
			cs := etcd[k.Operation]
			cs.Count += n
			etcd[k.Operation] = cs
		}
	}
	for k, cs := range delta.EtcdDurations {
		if k.Resource == res {
			e := etcd[k.Operation]
			e.Sum += cs.Sum
			etcd[k.Operation] = e
		}
	}
	for op, cs := range etcd {
		c.Etcd = append(c.Etcd, EtcdRequests{Operation: op, Count: cs.Count, Mean: cs.Mean().Round(time.Microsecond)})
	}
	sort.Slice(c.Etcd, func(i, j int) bool { return c.Etcd[i].Operation < c.Etcd[j].Operation })
	c.EtcdUpdates = etcd["update"].Count
	c.EtcdFailedUpdates = max(c.EtcdUpdates-c.ServerWrites, 0)
	c.AbsorbedConflicts = max(c.EtcdFailedUpdates-c.ServerConflicts, 0)

	for _, n := range delta.FlowRejected {
		c.FlowControlRejected += n
	}
	var wait metrics.CountSum
	for _, cs := range delta.FlowWait {
		wait = sum(wait, cs)
	}
	c.FlowControlWaited, c.FlowControlMeanWait = wait.Count, wait.Mean().Round(time.Microsecond)

	c.Writes = m.WriteOutcomes[metrics.Success.String()]
	version, fieldManager := m.Conflicts()
	c.Conflicts = version + fieldManager
	c.WritesMatch = c.Writes == c.ServerWrites
	c.ConflictsMatch = c.Conflicts == c.ServerConflicts
	c.Mismatch = mismatch(c, m)
	return c
}

// mismatch explains why the two sides disagree, or returns "".
func mismatch(c *ServerCheck, m Measurements) string {
	var diffs []string
	if !c.WritesMatch {
		diffs = append(diffs, fmt.Sprintf("apiserver %d successful writes, kb-bench %d", c.ServerWrites, c.Writes))
	}
	if !c.ConflictsMatch {
		diffs = append(diffs, fmt.Sprintf("apiserver %d conflicts (409), kb-bench %d", c.ServerConflicts, c.Conflicts))
	}
	if len(diffs) == 0 {
		return ""
	}
	var causes []string
	if n := m.WriteOutcomes[metrics.Timeout.String()]; n > 0 {
		causes = append(causes, fmt.Sprintf("%d write attempts timed out on the client and may have completed on the server", n))
	}
	if m.Client.Retries > 0 {
		causes = append(causes, fmt.Sprintf("client-go retried %d requests on its own", m.Client.Retries))
	}
	if c.ServerWrites > c.Writes || c.ServerConflicts > c.Conflicts {
		causes = append(causes, fmt.Sprintf("other clients may write %s on this cluster (the server counts them all)", c.Resource))
	}
	msg := strings.Join(diffs, "; ")
	if len(causes) > 0 {
		msg += " (possible causes: " + strings.Join(causes, "; ") + ")"
	}
	return msg
}

func sum(a, b metrics.CountSum) metrics.CountSum {
	return metrics.CountSum{Count: a.Count + b.Count, Sum: a.Sum + b.Sum}
}
