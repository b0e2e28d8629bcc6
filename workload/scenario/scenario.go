// Package scenario holds what the workload engine hands to a scenario other
// than the counter (leader election, quota, controller status), so that those
// scenario packages need not import the engine.
package scenario

import (
	"io"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// Env is everything a scenario's Run gets from the engine. The engine has
// already created Namespace and will delete it (unless Spec.Keep) after Run
// returns; it ticks Recorder once a second, turns its snapshot into the
// Result's Measurements and Summary, and fills the Result's identity fields.
// A scenario writes only in Namespace, records every request and operation in
// Recorder, and may fill its own Result fields (Checks, LeaderElection,
// Quota, Warnings).
//
// Only the scenario knows its measured window (after its own setup and
// warm-up, before its own checks), so it sets Result.Started and
// Result.Ended to it; the throughput is computed over that window. When it
// leaves them zero, the engine uses the time Run was called plus the
// warm-up, and the time Run returned.
type Env struct {
	// Config is the target's config with Spec.Client applied (QPS/Burst,
	// content type, user agent), for scenarios that build their own clients.
	Config *rest.Config
	// Clients are Spec.Clients clients, each with its own connections.
	Clients []kubernetes.Interface
	// Namespace is the run's namespace, already created.
	Namespace string
	// Spec is the defaulted, validated specification.
	Spec spec.Spec
	// Recorder has metrics.DefaultShards(Spec.Writers) shards; operations
	// intended before the end of the warm-up are counted as warm-up only.
	Recorder *metrics.Recorder
	// Result is the run's result, for the scenario's own fields.
	Result *results.Result
	// Log receives warnings and notes; never nil.
	Log io.Writer
}
