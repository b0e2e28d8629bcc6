package metrics

import (
	"fmt"
	"time"
)

// ServerSample is one scrape of the apiserver's /metrics, reduced to the
// series kb-bench compares with its own counts. It is plain data: the
// scraper lives in metrics/apiserver, the comparison in results.
// Counters are totals since the apiserver started; Sub turns two samples
// into what happened in between.
type ServerSample struct {
	// At is when the scrape was taken.
	At time.Time
	// Requests is apiserver_request_total (summed over the labels not in
	// the key). Server-side apply shows as verb APPLY.
	Requests map[RequestKey]int64
	// Durations is apiserver_request_duration_seconds' count and sum;
	// DurationBuckets its cumulative buckets.
	Durations       map[EndpointKey]CountSum
	DurationBuckets map[EndpointKey][]BucketCount
	// Etcd is etcd_requests_total; EtcdDurations etcd_request_duration_seconds.
	Etcd          map[EtcdKey]int64
	EtcdDurations map[EtcdKey]CountSum
	// FlowRejected is apiserver_flowcontrol_rejected_requests_total.
	FlowRejected map[FlowKey]int64
	// FlowWait is apiserver_flowcontrol_request_wait_duration_seconds.
	FlowWait map[FlowWaitKey]CountSum
	// Process is the apiserver process's own CPU and memory.
	Process ProcessSample
}

// ProcessSample is a process's CPU time and memory as Prometheus' process
// collector exposes them (process_cpu_seconds_total,
// process_resident_memory_bytes): read from /proc/PID/stat, so the CPU
// time moves in clock ticks (10 ms on Linux).
type ProcessSample struct {
	// Has is false when the exposition carried no process_cpu_seconds_total.
	Has bool
	// CPUSeconds is user plus system CPU time since the process started.
	CPUSeconds float64
	// ResidentBytes is the resident set size.
	ResidentBytes int64
}

// EndpointKey names a verb on a resource, as the apiserver labels requests.
type EndpointKey struct {
	Verb        string // GET, LIST, PUT, PATCH, APPLY, POST, DELETE, ...
	Group       string // "" for the core group
	Resource    string // e.g. configmaps
	Subresource string // e.g. status; "" for the object itself
}

// RequestKey is an EndpointKey with the HTTP response code.
type RequestKey struct {
	EndpointKey
	Code string // e.g. "200", "409"
}

// EtcdKey names an etcd operation on a resource. The apiserver's storage
// layer labels an optimistic write transaction "update" (one per attempt
// of GuaranteedUpdate, conflicting ones included), the read it does before
// or after a lost race "get", and creates "create".
type EtcdKey struct {
	Operation string
	Group     string
	Resource  string
}

// FlowKey names an API Priority and Fairness rejection.
type FlowKey struct {
	PriorityLevel string
	FlowSchema    string
	Reason        string // queue-full, concurrency-limit, time-out, cancelled
}

// FlowWaitKey names an API Priority and Fairness queue wait.
type FlowWaitKey struct {
	PriorityLevel string
	FlowSchema    string
	Executed      bool // false: the request was rejected after waiting
}

// CountSum is a histogram's observation count and sum (seconds).
type CountSum struct {
	Count int64
	Sum   float64
}

// Mean is Sum/Count as a duration (0 when Count is 0).
func (c CountSum) Mean() time.Duration {
	if c.Count <= 0 {
		return 0
	}
	return time.Duration(c.Sum / float64(c.Count) * float64(time.Second))
}

// BucketCount is a cumulative histogram bucket: Count observations at or
// below UpperBound seconds.
type BucketCount struct {
	UpperBound float64 `json:"le"`
	Count      int64   `json:"count"`
}

// AddBuckets adds b to a, bucket by bucket (by upper bound).
func AddBuckets(a, b []BucketCount) []BucketCount {
	out := make([]BucketCount, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].UpperBound < b[j].UpperBound:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].UpperBound < a[i].UpperBound:
			out = append(out, b[j])
			j++
		default:
			out = append(out, BucketCount{UpperBound: a[i].UpperBound, Count: a[i].Count + b[j].Count})
			i++
			j++
		}
	}
	return out
}

// subBuckets is a minus b, bucket by bucket (b's buckets missing from a
// count as 0).
func subBuckets(a, b []BucketCount) []BucketCount {
	out := make([]BucketCount, len(a))
	for i, x := range a {
		out[i] = x
		for _, y := range b {
			if y.UpperBound == x.UpperBound {
				out[i].Count -= y.Count
			}
		}
	}
	return out
}

// NewServerSample returns an empty sample taken at at.
func NewServerSample(at time.Time) ServerSample {
	return ServerSample{
		At:              at,
		Requests:        map[RequestKey]int64{},
		Durations:       map[EndpointKey]CountSum{},
		DurationBuckets: map[EndpointKey][]BucketCount{},
		Etcd:            map[EtcdKey]int64{},
		EtcdDurations:   map[EtcdKey]CountSum{},
		FlowRejected:    map[FlowKey]int64{},
		FlowWait:        map[FlowWaitKey]CountSum{},
	}
}

// Sub returns s minus before: what happened between the two scrapes. It
// fails when a counter went backwards, which means the apiserver restarted
// (or a different apiserver answered) in between.
func (s ServerSample) Sub(before ServerSample) (ServerSample, error) {
	d := NewServerSample(s.At)
	var err error
	check := func(what string, delta int64) {
		if delta < 0 && err == nil {
			err = fmt.Errorf("%s went backwards between the scrapes (by %d): the apiserver restarted, or another apiserver answered, during the run", what, -delta)
		}
	}
	count := func(v int64) int64 { return v }
	sub := func(a, b int64) int64 { return a - b }
	subSeries(d.Requests, s.Requests, before.Requests, sub, count, "apiserver_request_total", check)
	subSeries(d.Durations, s.Durations, before.Durations, CountSum.sub, CountSum.count, "apiserver_request_duration_seconds", check)
	for k, b := range s.DurationBuckets {
		if _, ok := d.Durations[k]; ok {
			d.DurationBuckets[k] = subBuckets(b, before.DurationBuckets[k])
		}
	}
	subSeries(d.Etcd, s.Etcd, before.Etcd, sub, count, "etcd_requests_total", check)
	subSeries(d.EtcdDurations, s.EtcdDurations, before.EtcdDurations, CountSum.sub, CountSum.count, "etcd_request_duration_seconds", check)
	subSeries(d.FlowRejected, s.FlowRejected, before.FlowRejected, sub, count, "apiserver_flowcontrol_rejected_requests_total", check)
	subSeries(d.FlowWait, s.FlowWait, before.FlowWait, CountSum.sub, CountSum.count, "apiserver_flowcontrol_request_wait_duration_seconds", check)
	// A series that existed before but not after also means a restart.
	for k, v := range before.Requests {
		if _, ok := s.Requests[k]; !ok && v > 0 {
			check("apiserver_request_total", -v)
		}
	}
	return d, err
}

// subSeries puts into d each series of after minus before that changed,
// reporting a count that went backwards to check under the metric's name.
func subSeries[K comparable, V any](d, after, before map[K]V, sub func(a, b V) V, count func(V) int64, name string, check func(string, int64)) {
	for k, v := range after {
		if dv := sub(v, before[k]); count(dv) != 0 {
			check(name, count(dv))
			d[k] = dv
		}
	}
}

func (c CountSum) count() int64 { return c.Count }

// Add returns c plus b.
func (c CountSum) Add(b CountSum) CountSum {
	return CountSum{Count: c.Count + b.Count, Sum: c.Sum + b.Sum}
}

func (c CountSum) sub(b CountSum) CountSum {
	return CountSum{Count: c.Count - b.Count, Sum: c.Sum - b.Sum}
}

// Sum adds samples of several apiservers into one, as if one apiserver
// had served every request: the counters of a control plane with several
// apiservers are the sums of each one's (each counts only what it served),
// and so are their processes' CPU time and memory (Has only when every
// sample has them). At is the latest sample's.
func Sum(samples ...ServerSample) ServerSample {
	out := NewServerSample(time.Time{})
	out.Process.Has = len(samples) > 0
	for _, s := range samples {
		out.Process.Has = out.Process.Has && s.Process.Has
		out.Process.CPUSeconds += s.Process.CPUSeconds
		out.Process.ResidentBytes += s.Process.ResidentBytes
		if s.At.After(out.At) {
			out.At = s.At
		}
		addSeries(out.Requests, s.Requests, func(a, b int64) int64 { return a + b })
		addSeries(out.Durations, s.Durations, CountSum.Add)
		addSeries(out.DurationBuckets, s.DurationBuckets, AddBuckets)
		addSeries(out.Etcd, s.Etcd, func(a, b int64) int64 { return a + b })
		addSeries(out.EtcdDurations, s.EtcdDurations, CountSum.Add)
		addSeries(out.FlowRejected, s.FlowRejected, func(a, b int64) int64 { return a + b })
		addSeries(out.FlowWait, s.FlowWait, CountSum.Add)
	}
	return out
}

func addSeries[K comparable, V any](into, from map[K]V, add func(a, b V) V) {
	for k, v := range from {
		into[k] = add(into[k], v)
	}
}
