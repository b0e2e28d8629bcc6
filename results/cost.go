package results

import (
	"slices"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

// Cost is what the measured window cost the processes that served it and
// the one that made it, and the apiserver's own request time by verb,
// which splits its CPU between the requests that did something and those
// that did not (see CostFigures).
type Cost struct {
	// Apiserver is kube-apiserver (process_cpu_seconds_total and
	// process_resident_memory_bytes of its /metrics, scraped at the edges).
	Apiserver ProcessCost `json:"apiserver"`
	// Etcd is etcd, read the same way on its client URL: only where kb-bench
	// can reach it (the local control plane).
	Etcd ProcessCost `json:"etcd"`
	// Client is kb-bench's own process (getrusage at the edges): the cost
	// of making the load, on the same machine as a local control plane.
	Client ProcessCost `json:"client"`
	// Verbs is the apiserver's request time in the window
	// (apiserver_request_duration_seconds) per verb on the resources the
	// clients used, with the 409s among the requests.
	Verbs []VerbTime `json:"verbs,omitempty"`
	// RequestSeconds is the apiserver's request time in the window over
	// every request it served but long-running ones (WATCH, CONNECT): the
	// run's, its own and anyone else's.
	RequestSeconds float64 `json:"requestSeconds,omitempty"`
	// ApiserverIdle is the apiserver's background CPU: what it used over
	// an interval at the window's first edge while no request of the
	// run's was in flight (its own loops, and anyone else's requests).
	// nil when not measured (the apiserver not read, the run stopped, a
	// result from before kb-bench.io/v1alpha4).
	ApiserverIdle *IdleCPU `json:"apiserverIdle,omitempty"`
}

// IdleCPU is a process's CPU over an interval in which the run made no
// request: between two scrapes of its /metrics, so one scrape's own cost
// is in it, as one is in the window's.
type IdleCPU struct {
	// Seconds is the interval's length, CPUSeconds the CPU time the
	// process used in it (clock ticks: 10 ms each edge).
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpuSeconds"`
}

// Cores is the background CPU in cores (CPU seconds a second).
func (i IdleCPU) Cores() float64 { return ratio(i.CPUSeconds, i.Seconds) }

// ProcessCost is one process's cost over the window.
type ProcessCost struct {
	// Available is false when the process could not be read; Reason says why.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// CPUSeconds is the CPU time (user + system) the process used in the
	// window. Its resolution is a clock tick (10 ms) per edge.
	CPUSeconds float64 `json:"cpuSeconds"`
	// MemoryBefore and MemoryAfter are its resident memory at the edges
	// (bytes; 0 when not read).
	MemoryBefore int64 `json:"memoryBefore,omitempty"`
	MemoryAfter  int64 `json:"memoryAfter,omitempty"`
}

// VerbTime is the apiserver's time on one verb of one resource.
type VerbTime struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// Requests and Seconds are the request-duration histogram's count and
	// sum in the window; Conflicts the requests answered 409
	// (apiserver_request_total).
	Requests  int64   `json:"requests"`
	Seconds   float64 `json:"seconds"`
	Conflicts int64   `json:"conflicts,omitempty"`
	// Buckets are the request-duration histogram's cumulative bucket counts
	// in the window, for estimated percentiles.
	Buckets []metrics.BucketCount `json:"buckets,omitempty"`
}

// IsWriteVerb says whether an apiserver verb writes.
func IsWriteVerb(verb string) bool {
	return slices.Contains([]string{"PUT", "PATCH", "APPLY", "POST", "DELETE", "DELETECOLLECTION"}, verb)
}

// CostFigures are a Cost divided by what the run did: the figures the
// summary prints and compare and gate read. A figure that cannot be
// computed (its process not read, nothing to divide by) is 0 with its Has
// flag false.
type CostFigures struct {
	Seconds float64
	// Apiserver, Etcd and Client are each process's CPU per operation and
	// per successful write, and its cores (CPU seconds per second).
	Apiserver, Etcd, Client PerUnit
	// ApiserverNet is the apiserver's CPU less its background (Cost.
	// ApiserverIdle's cores over the window's seconds, never below 0): the
	// CPU the run's requests cost it. Has only with the background
	// measured; Background is that background in cores.
	ApiserverNet PerUnit
	Background   float64
	// WriteShare is the share of the apiserver's request time spent on
	// write verbs of the run's resources; 0 without request times. How
	// much of it went to writes answered 409 is not measured: the
	// apiserver's request-duration histogram has no response code, and
	// splitting the time by the count of 409s would only restate the
	// conflict rate.
	WriteShare float64
	HasSplit   bool
}

// PerUnit is one process's CPU divided by the run's work.
type PerUnit struct {
	Has      bool
	CPU      time.Duration
	Cores    float64
	PerOp    time.Duration
	PerWrite time.Duration
}

// Figures divides c by the run's operations and successful writes (s).
func (c *Cost) Figures(s Summary) CostFigures {
	f := CostFigures{Seconds: s.Seconds}
	if c == nil {
		return f
	}
	per := func(p ProcessCost) PerUnit {
		if !p.Available {
			return PerUnit{}
		}
		return PerUnit{Has: true, CPU: seconds(p.CPUSeconds), Cores: ratio(p.CPUSeconds, s.Seconds),
			PerOp: seconds(ratio(p.CPUSeconds, float64(s.Ops))), PerWrite: seconds(ratio(p.CPUSeconds, float64(s.Writes)))}
	}
	f.Apiserver, f.Etcd, f.Client = per(c.Apiserver), per(c.Etcd), per(c.Client)
	if c.ApiserverIdle != nil && c.Apiserver.Available {
		f.Background = c.ApiserverIdle.Cores()
		net := c.Apiserver
		net.CPUSeconds = max(0, net.CPUSeconds-f.Background*s.Seconds)
		f.ApiserverNet = per(net)
	}
	var write float64
	for _, v := range c.Verbs {
		if IsWriteVerb(v.Verb) {
			write += v.Seconds
		}
	}
	if c.RequestSeconds > 0 && write > 0 {
		f.HasSplit = true
		f.WriteShare = min(write/c.RequestSeconds, 1)
	}
	return f
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Quantile estimates the q quantile of the apiserver's request duration
// from the buckets as Prometheus' histogram_quantile does: as coarse as
// the buckets. above is set when the rank lies beyond the last finite
// bucket (the figure is then a floor); ok is false without buckets or
// requests.
func (v VerbTime) Quantile(q float64) (d time.Duration, above, ok bool) {
	if len(v.Buckets) == 0 || v.Requests <= 0 {
		return 0, false, false
	}
	rank := q * float64(v.Requests)
	lower, below := 0.0, int64(0)
	for _, b := range v.Buckets {
		if float64(b.Count) >= rank {
			in := b.Count - below
			frac := 1.0
			if in > 0 {
				frac = (rank - float64(below)) / float64(in)
			}
			return seconds(lower + (b.UpperBound-lower)*frac), false, true
		}
		lower, below = b.UpperBound, b.Count
	}
	return seconds(lower), true, true
}
