package analysis

import (
	"cmp"
	"slices"
	"strings"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// CostEdge is what was read at one edge of the measured window for its
// cost: the apiserver's /metrics, etcd's process figures and kb-bench's
// own CPU time, each with the error that kept it from being read.
type CostEdge struct {
	Server    metrics.ServerSample
	ServerErr error
	Etcd      metrics.ProcessSample
	EtcdErr   error
	Client    metrics.ProcessSample
	ClientErr error
	// Idle, at the first edge, is the apiserver's process figures read an
	// idle interval before Server, with no request of the run's in flight
	// between them: its background CPU (nil: not read).
	Idle *IdleEdge
}

// IdleEdge is the apiserver's process figures at the start of an idle
// interval and the interval's length, to the edge's own scrape.
type IdleEdge struct {
	Process metrics.ProcessSample
	Seconds float64
}

// NewCost is the window's cost from its two edges; client are the
// clients' requests, whose endpoints get their request time by verb.
func NewCost(before, after CostEdge, client map[metrics.RequestKey]int64) *results.Cost {
	c := &results.Cost{}
	serverErr := cmp.Or(before.ServerErr, after.ServerErr)
	c.Apiserver = processCost(before.Server.Process, after.Server.Process, serverErr, "the apiserver's /metrics has no process_cpu_seconds_total")
	c.Etcd = processCost(before.Etcd, after.Etcd, cmp.Or(before.EtcdErr, after.EtcdErr), "etcd's /metrics has no process_cpu_seconds_total")
	c.Client = processCost(before.Client, after.Client, cmp.Or(before.ClientErr, after.ClientErr), "not read")
	c.Client.MemoryBefore, c.Client.MemoryAfter = 0, 0
	if i := before.Idle; i != nil && c.Apiserver.Available && i.Process.Has && i.Seconds > 0 &&
		before.Server.Process.CPUSeconds >= i.Process.CPUSeconds {
		c.ApiserverIdle = &results.IdleCPU{Seconds: i.Seconds, CPUSeconds: before.Server.Process.CPUSeconds - i.Process.CPUSeconds}
	}
	if serverErr != nil {
		return c
	}
	delta, err := after.Server.Sub(before.Server)
	if err != nil {
		return c
	}
	endpoints := endpointsOf(client)
	for k, cs := range delta.Durations {
		if k.Verb == "WATCH" || k.Verb == "CONNECT" {
			continue // long-running: its duration is the connection's life
		}
		c.RequestSeconds += cs.Sum
		if !endpoints[k] {
			continue
		}
		c.Verbs = append(c.Verbs, results.VerbTime{Verb: k.Verb, Resource: resourceName(k), Requests: cs.Count, Seconds: cs.Sum,
			Conflicts: delta.Requests[metrics.RequestKey{EndpointKey: k, Code: "409"}], Buckets: delta.DurationBuckets[k]})
	}
	slices.SortFunc(c.Verbs, func(a, b results.VerbTime) int { return strings.Compare(a.Resource+" "+a.Verb, b.Resource+" "+b.Verb) })
	return c
}

// processCost is one process's CPU between two samples and its memory at
// them; missing says why when the samples carry no CPU time.
func processCost(before, after metrics.ProcessSample, err error, missing string) results.ProcessCost {
	switch {
	case err != nil:
		return results.ProcessCost{Reason: err.Error()}
	case !before.Has || !after.Has:
		return results.ProcessCost{Reason: missing}
	case after.CPUSeconds < before.CPUSeconds:
		return results.ProcessCost{Reason: "its CPU time went backwards between the window's edges: the process restarted"}
	}
	return results.ProcessCost{Available: true, CPUSeconds: after.CPUSeconds - before.CPUSeconds,
		MemoryBefore: before.ResidentBytes, MemoryAfter: after.ResidentBytes}
}
