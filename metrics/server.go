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
	// Durations is apiserver_request_duration_seconds' count and sum.
	Durations map[EndpointKey]CountSum
	// Etcd is etcd_requests_total; EtcdDurations etcd_request_duration_seconds.
	Etcd          map[EtcdKey]int64
	EtcdDurations map[EtcdKey]CountSum
	// FlowRejected is apiserver_flowcontrol_rejected_requests_total.
	FlowRejected map[FlowKey]int64
	// FlowWait is apiserver_flowcontrol_request_wait_duration_seconds.
	FlowWait map[FlowWaitKey]CountSum
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

// NewServerSample returns an empty sample taken at at.
func NewServerSample(at time.Time) ServerSample {
	return ServerSample{
		At:            at,
		Requests:      map[RequestKey]int64{},
		Durations:     map[EndpointKey]CountSum{},
		Etcd:          map[EtcdKey]int64{},
		EtcdDurations: map[EtcdKey]CountSum{},
		FlowRejected:  map[FlowKey]int64{},
		FlowWait:      map[FlowWaitKey]CountSum{},
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
	for k, v := range s.Requests {
		if dv := v - before.Requests[k]; dv != 0 {
			check("apiserver_request_total", dv)
			d.Requests[k] = dv
		}
	}
	for k, v := range s.Durations {
		if dv := v.sub(before.Durations[k]); dv.Count != 0 {
			check("apiserver_request_duration_seconds", dv.Count)
			d.Durations[k] = dv
		}
	}
	for k, v := range s.Etcd {
		if dv := v - before.Etcd[k]; dv != 0 {
			check("etcd_requests_total", dv)
			d.Etcd[k] = dv
		}
	}
	for k, v := range s.EtcdDurations {
		if dv := v.sub(before.EtcdDurations[k]); dv.Count != 0 {
			check("etcd_request_duration_seconds", dv.Count)
			d.EtcdDurations[k] = dv
		}
	}
	for k, v := range s.FlowRejected {
		if dv := v - before.FlowRejected[k]; dv != 0 {
			check("apiserver_flowcontrol_rejected_requests_total", dv)
			d.FlowRejected[k] = dv
		}
	}
	for k, v := range s.FlowWait {
		if dv := v.sub(before.FlowWait[k]); dv.Count != 0 {
			check("apiserver_flowcontrol_request_wait_duration_seconds", dv.Count)
			d.FlowWait[k] = dv
		}
	}
	// A series that existed before but not after also means a restart.
	for k, v := range before.Requests {
		if _, ok := s.Requests[k]; !ok && v > 0 {
			check("apiserver_request_total", -v)
		}
	}
	return d, err
}

func (c CountSum) sub(b CountSum) CountSum {
	return CountSum{Count: c.Count - b.Count, Sum: c.Sum - b.Sum}
}
