// Package results defines the documents kb-bench writes (a run's Result,
// the ResultSet of its samples, a Sweep), encodes and decodes them,
// validating every figure on read, and derives a Result's Summary. Package
// store lays them out on disk, analysis compares, gates and models them,
// and the packages under render show them.
package results

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// Document identity. Bump APIVersion when a field changes meaning, or is
// added (an older kb-bench reads strictly: a new field would be an unknown
// one to it, and the version tells it to upgrade).
//
// v1alpha5: Figures, the scenario's own figures as data, in place of
// Details. Decode still reads v1alpha4 Results (with Details).
// v1alpha4: Cost.ApiserverIdle, the apiserver's background CPU. Decode
// still reads v1alpha3 Results (without it).
// v1alpha3: percentiles are nearest rank (Summary.Percentiles says so).
// Decode still reads v1alpha2 Results, whose percentiles are
// PercentilesRoundedRank.
const (
	APIVersion = "kb-bench.io/v1alpha5"
	KindResult = "Result"
)

// How a Result's percentiles were computed (Summary.Percentiles): the
// latency summary's and the per-second series'.
const (
	// PercentilesNearestRank is the smallest recorded value with at least
	// q of the operations at or below it (metrics.Percentiles).
	PercentilesNearestRank = "nearest-rank"
	// PercentilesRoundedRank is HdrHistogram's ValueAtQuantile, whose rank
	// int(q*n+0.5) can leave fewer than q of the operations at or below the
	// figure: kb-bench.io/v1alpha2 Results, read as such.
	PercentilesRoundedRank = "rounded-rank"
)

// Histogram names in Measurements.Histograms.
const (
	HistOp      = "op"      // operation latency from the intended start (corrected in open loop)
	HistOpRaw   = "op-raw"  // open loop only: operation latency from the actual start
	HistWrite   = "write"   // each write attempt
	HistRead    = "read"    // each read
	HistBackoff = "backoff" // time slept in backoff per operation that retried
)

// Result is what one run measured, with everything needed to compare it
// honestly with another run.
type Result struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	// RunID names the run; the namespace is kb-bench-<RunID>.
	RunID string `json:"runID"`
	// Version is the kb-bench version that ran.
	Version string `json:"version"`
	// Started and Ended bound the measured window (warm-up excluded).
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Interrupted is set when the run was stopped early (Ctrl-C); the
	// figures cover what ran.
	Interrupted bool `json:"interrupted,omitempty"`
	// TargetLost says why the run stopped early because its apiserver
	// stopped answering (dead or hung); the figures cover what ran.
	TargetLost string `json:"targetLost,omitempty"`
	// Faults are the faults injected into the run (spec.Target's
	// KillAPIServer) and what each cost.
	Faults []Fault `json:"faults,omitempty"`

	// Target says which apiserver ran it (never credentials).
	Target spec.TargetInfo `json:"target"`
	// Spec is the fully resolved specification.
	Spec spec.Spec `json:"spec"`
	// Namespace the run wrote in.
	Namespace string `json:"namespace"`

	// Workload is the run in words: scenario, writers, strategy, load.
	Workload string `json:"workload"`
	// Summary holds the headline figures, derived from Measurements.
	Summary Summary `json:"summary"`
	// Measurements holds the raw, mergeable data.
	Measurements Measurements `json:"measurements"`
	// Series is the per-second series.
	Series []metrics.SeriesPoint `json:"series,omitempty"`
	// Server is the cross-check against the apiserver's own /metrics.
	Server *ServerCheck `json:"server,omitempty"`
	// Cost is the CPU and memory the window cost the apiserver, etcd and
	// kb-bench itself (absent in results from before it was measured).
	Cost *Cost `json:"cost,omitempty"`
	// Checks are the correctness verdicts (lost updates and the like).
	Checks []Check `json:"checks,omitempty"`
	// Figures are the scenario's own figures, as data (Figure).
	Figures []Figure `json:"figures,omitempty"`
	// Details are the scenario's own figures as results before
	// v1alpha5 kept them: its report's JSON, as the scenario package
	// defined it. Read only.
	Details json.RawMessage `json:"details,omitempty"`
	// Warnings are things the reader should know (metrics forbidden, ...).
	Warnings []string `json:"warnings,omitempty"`

	// Shards are a distributed run's shards (Spec.Shards), whose results
	// this one merges; Shard is set in one shard's own result instead.
	Shards []ShardInfo `json:"shards,omitempty"`
	Shard  *ShardInfo  `json:"shard,omitempty"`
}

// ShardInfo is one shard of a distributed run.
type ShardInfo struct {
	// Index is the shard's number, from 0; Name the process or pod that ran it.
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Writers are the run's workers the shard ran: [From, To).
	From int `json:"from"`
	To   int `json:"to"`
	// Ops are the shard's measured operations.
	Ops int64 `json:"ops"`
	// StartLate is how long after the published start instant the shard
	// released its writers, by its own clock: the start skew between
	// shards on one machine (on several, clock offsets add to it).
	StartLate time.Duration `json:"startLate"`
	// Requests are what the shard's clients sent in the measured window,
	// for the coordinator's server cross-check (a shard's own result only).
	Requests []ClientRequests `json:"requests,omitempty"`
	// Tally is what the scenario's checks need of the shard's writes (a
	// shard's own result only).
	Tally json.RawMessage `json:"tally,omitempty"`
}

// ClientRequests counts a shard's requests to one endpoint with one
// response code.
type ClientRequests struct {
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Code        string `json:"code"`
	Count       int64  `json:"count"`
}

// Measurements is the raw data of a run; Merge adds two of them exactly.
type Measurements struct {
	// Ops counts measured operations; WarmupOps the excluded warm-up ones.
	Ops       int64 `json:"ops"`
	WarmupOps int64 `json:"warmupOps"`
	// Outcomes counts operations by final outcome (metrics.Outcome names).
	Outcomes map[string]int64 `json:"outcomes"`
	// ReadOutcomes and WriteOutcomes count each request by outcome.
	ReadOutcomes  map[string]int64 `json:"readOutcomes"`
	WriteOutcomes map[string]int64 `json:"writeOutcomes"`
	// Attempts[n] counts operations that made n write attempts.
	Attempts []int64 `json:"attempts"`
	// GaveUp counts operations whose retries ran out.
	GaveUp int64 `json:"gaveUp,omitempty"`
	// Late and Dropped count open-loop arrivals that found no free slot.
	Late    int64 `json:"late,omitempty"`
	Dropped int64 `json:"dropped,omitempty"`
	// Clamped counts latencies above the histogram's one-hour range.
	Clamped int64 `json:"clamped,omitempty"`
	// Errors keeps the first few distinct "other" error messages.
	Errors []string `json:"errors,omitempty"`
	// Histograms maps a Hist* name to a lossless HDR encoding (base64 of
	// the compressed V2 format; microseconds).
	Histograms map[string]string `json:"histograms"`
	// Client holds client-go's own hidden work (retries, limiter wait).
	Client ClientStats `json:"client"`
	// SeriesStart is the instant Result.Series' At offsets count from (the
	// recorder's start: in kb-bench's runs the end of the warm-up, so the
	// series covers the measured window only).
	SeriesStart time.Time `json:"seriesStart"`
}

// ClientStats is what client-go did that the engine cannot see directly.
type ClientStats struct {
	// Retries client-go made on its own (429/5xx with Retry-After).
	Retries int64 `json:"retries"`
	// RateLimiterWait is the total time requests waited in the client-side
	// rate limiter.
	RateLimiterWait time.Duration `json:"rateLimiterWait"`
	// RateLimited counts requests that waited in it (a millisecond or more).
	RateLimited int64 `json:"rateLimited,omitempty"`
	// StreamWait is the total time requests waited for a free stream of
	// their client's one HTTP/2 connection (the server allows so many at a
	// time, 100 on kube-apiserver); StreamWaited counts those requests.
	StreamWait   time.Duration `json:"streamWait,omitempty"`
	StreamWaited int64         `json:"streamWaited,omitempty"`
	// SentContent counts request bodies by content type, ReceivedContent
	// responses: what the clients and the apiserver negotiated.
	SentContent     map[string]int64 `json:"sentContent,omitempty"`
	ReceivedContent map[string]int64 `json:"receivedContent,omitempty"`
	// AddedLatency is the total round trip time kb-bench's transport
	// added to Delayed requests (spec.Client.Latency): what it actually
	// slept, overshoot included.
	AddedLatency time.Duration `json:"addedLatency,omitempty"`
	Delayed      int64         `json:"delayed,omitempty"`
}

// Plus returns c plus k times d (k = -1 takes d away); a count that
// comes to nothing is left out. c's maps are not changed.
func (c ClientStats) Plus(d ClientStats, k int64) ClientStats {
	kd := time.Duration(k)
	return ClientStats{
		Retries:         c.Retries + k*d.Retries,
		RateLimiterWait: c.RateLimiterWait + kd*d.RateLimiterWait, RateLimited: c.RateLimited + k*d.RateLimited,
		StreamWait: c.StreamWait + kd*d.StreamWait, StreamWaited: c.StreamWaited + k*d.StreamWaited,
		SentContent: AddCounts(c.SentContent, d.SentContent, k), ReceivedContent: AddCounts(c.ReceivedContent, d.ReceivedContent, k),
		AddedLatency: c.AddedLatency + kd*d.AddedLatency, Delayed: c.Delayed + k*d.Delayed,
	}
}

// AddCounts returns a copy of a plus k times b, without the keys that come
// to nothing; nil when nothing is left.
func AddCounts[K comparable](a, b map[K]int64, k int64) map[K]int64 {
	sum := map[K]int64{}
	maps.Copy(sum, a)
	for key, n := range b {
		sum[key] += k * n
	}
	maps.DeleteFunc(sum, func(_ K, n int64) bool { return n == 0 })
	if len(sum) == 0 {
		return nil
	}
	return sum
}

// Summary is the headline figures of a run. It is derived from Measurements
// and the measured duration (see Summarize) and never edited by hand.
type Summary struct {
	// Seconds is the measured duration.
	Seconds float64 `json:"seconds"`
	// Ops is the number of measured operations; Successes those that ended well.
	Ops       int64 `json:"ops"`
	Successes int64 `json:"successes"`
	// Throughput is operations per second; WriteThroughput successful writes per second.
	Throughput      float64 `json:"throughput"`
	WriteThroughput float64 `json:"writeThroughput"`
	// SuccessRatio is Successes / Ops.
	SuccessRatio float64 `json:"successRatio"`
	// Outcomes by class (copied from Measurements).
	Outcomes map[string]int64 `json:"outcomes"`
	// WriteAttempts is every write attempt, whatever its outcome (timed
	// out and failed ones included); Writes those that succeeded (2xx);
	// Conflicts those that got a 409 (version or field-manager conflict).
	WriteAttempts int64 `json:"writeAttempts"`
	Writes        int64 `json:"writes"`
	Conflicts     int64 `json:"conflicts"`
	// ConflictRate is Conflicts / WriteAttempts.
	ConflictRate float64 `json:"conflictRate"`
	// GaveUp counts operations whose retry strategy ran out of steps.
	GaveUp int64 `json:"gaveUp,omitempty"`
	// Attempts per operation.
	AttemptsP50 int64 `json:"attemptsP50"`
	AttemptsP99 int64 `json:"attemptsP99"`
	AttemptsMax int64 `json:"attemptsMax"`
	// Percentiles names how every percentile of the Result was computed
	// (Latency, RawLatency, the series): a Percentiles* constant.
	Percentiles string `json:"percentiles"`
	// Latency percentiles of operations, from the intended start (corrected
	// for coordinated omission in an open loop).
	Latency Latency `json:"latency"`
	// RawLatency is open-loop latency from the actual start (nil in a
	// closed loop, where it equals Latency).
	RawLatency *Latency `json:"rawLatency,omitempty"`
	// LostUpdates is what every check found together; nil (absent) when
	// it was not measured: no check was made, or one could not be made
	// (see LostUpdatesOf). Every reader shows nil as unknown, never as 0.
	LostUpdates *int64 `json:"lostUpdates,omitempty"`
}

// Latency is a set of percentiles.
type Latency struct {
	P50  time.Duration `json:"p50"`
	P90  time.Duration `json:"p90"`
	P99  time.Duration `json:"p99"`
	P999 time.Duration `json:"p999"`
	Max  time.Duration `json:"max"`
	Mean time.Duration `json:"mean"`
}

// Check is one correctness verdict.
type Check struct {
	// Name says what was checked, e.g. "counter kb-bench-0".
	Name string `json:"name"`
	// Passed is false when the invariant did not hold.
	Passed bool `json:"passed"`
	// Expected and Observed are the two sides of the comparison.
	Expected int64 `json:"expected"`
	Observed int64 `json:"observed"`
	// Lost is the number of lost updates this check found.
	Lost int64 `json:"lost,omitempty"`
	// Detail explains a failure in a sentence.
	Detail string `json:"detail,omitempty"`
}

// Fault is a fault injected into the measured window and what it cost,
// from the clients' side: the requests it left unanswered, the failovers
// to the living apiservers, and the per-second figures either side of it.
type Fault struct {
	// What was done ("kill -9 of apiserver 2 of 3, https://127.0.0.1:P").
	What string `json:"what"`
	// At is when, from the window's start; Error says why it could not
	// be done (then nothing else is set).
	At    time.Duration `json:"at"`
	Error string        `json:"error,omitempty"`
	// Down is when its clients first found the apiserver gone (a refused
	// connection), from the window's start; zero: they never did.
	Down time.Duration `json:"down,omitempty"`
	// Failovers are the requests sent again to a living apiserver after
	// theirs refused the connection; Moved the clients that failed over,
	// of Clients homed on it; FailoverTime from the fault to the last of
	// them moving.
	Failovers    int64         `json:"failovers"`
	Moved        int           `json:"moved"`
	Clients      int           `json:"clients"`
	FailoverTime time.Duration `json:"failoverTime,omitempty"`
	// Unanswered are the window's requests that got no answer (broken in
	// flight when it died, or refused with no apiserver left).
	Unanswered int64 `json:"unanswered"`
	// Before and After are the per-second figures of the whole seconds
	// before the fault, and of the seconds from it to the window's end:
	// mean throughput and 409s a second, and the highest second's p99
	// (the spike).
	Before FaultSpan `json:"before"`
	After  FaultSpan `json:"after"`
}

// FaultSpan is a stretch of the window either side of a fault.
type FaultSpan struct {
	Seconds      int           `json:"seconds"`
	OpsPerSec    float64       `json:"opsPerSec"`
	ConflictsPer float64       `json:"conflictsPerSec"`
	MaxP99       time.Duration `json:"maxP99"`
}

// Made reports whether the check was made: it passed, or it counted what
// it found lost. A check that failed and counted nothing could not be
// made (the objects could not be read back, the target stopped
// answering); its Detail says why.
func (c Check) Made() bool { return c.Passed || c.Lost > 0 }

// LostUpdatesOf is the lost updates checks found together, nil when that
// is not known: no check was made, or one could not be made (what those
// that were made found is then a floor, not the count).
func LostUpdatesOf(checks []Check) *int64 {
	if len(checks) == 0 {
		return nil
	}
	var lost int64
	for _, c := range checks {
		if !c.Made() {
			return nil
		}
		lost += c.Lost
	}
	return &lost
}

// UnknownLostUpdates says why checks do not give a count of lost
// updates: "1 of 1 checks could not be made"; "" when they do.
func UnknownLostUpdates(checks []Check) string {
	if len(checks) == 0 {
		return "not checked"
	}
	notMade := 0
	for _, c := range checks {
		if !c.Made() {
			notMade++
		}
	}
	if notMade == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d checks could not be made", notMade, len(checks))
}
