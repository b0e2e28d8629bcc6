// Package spec defines the resolved benchmark specification: the one plain
// value that profiles and command-line flags produce, the engine runs, and
// every result records. It has no dependency on client-go, files or terminals.
package spec

import (
	"encoding/json"
	"fmt"
	"time"
)

// Scenario names what the writers do.
const (
	// ScenarioCounter is read-modify-write of shared objects with a strategy.
	ScenarioCounter = "counter"
	// ScenarioLeaderElection runs client-go leader election candidates on a Lease.
	ScenarioLeaderElection = "leader-election"
	// ScenarioQuota creates objects concurrently under a ResourceQuota.
	ScenarioQuota = "quota"
	// ScenarioControllerStatus has controllers update the status of objects they own.
	ScenarioControllerStatus = "controller-status"
)

// Write strategies.
const (
	StrategyUpdate = "update" // GET, modify, PUT with the read resourceVersion
	StrategyRetry  = "retry"  // retry.RetryOnConflict around GET+modify+PUT
	StrategyPatch  = "patch"  // merge, strategic or JSON patch
	StrategySSA    = "ssa"    // server-side apply
)

// Patch types for StrategyPatch.
const (
	PatchMerge     = "merge"
	PatchStrategic = "strategic"
	PatchJSON      = "json"
)

// Key distributions.
const (
	DistUniform = "uniform"
	DistZipf    = "zipf"
	DistHotspot = "hotspot"
)

// Field layouts.
const (
	FieldsShared   = "shared"   // all writers increment the same counter field
	FieldsDisjoint = "disjoint" // each writer owns its own field
)

// Field manager modes for StrategySSA.
const (
	ManagerPerWriter = "per-writer"
	ManagerShared    = "shared"
)

// Target kinds.
const (
	TargetLocal      = "local"
	TargetKind       = "kind"
	TargetKubeconfig = "kubeconfig"
)

// etcd storage for the local control plane.
const (
	StorageDisk   = "disk"
	StorageMemory = "memory"
)

// Content types for the client.
const (
	ContentJSON     = "json"
	ContentProtobuf = "protobuf"
)

// Spec is everything that decides what a run does. Zero values mean "use the
// default"; Defaults fills them in, Validate checks the result.
type Spec struct {
	// Scenario is one of the Scenario* constants.
	Scenario string `json:"scenario" yaml:"scenario"`

	// Writers is the number of concurrent writers.
	Writers int `json:"writers" yaml:"writers"`
	// Objects is the number of shared objects created before the run.
	Objects int `json:"objects" yaml:"objects"`
	// ObjectSize is the filler, in bytes, added to each object.
	ObjectSize int `json:"objectSize" yaml:"objectSize"`
	// Distribution picks the object each operation hits.
	Distribution Distribution `json:"distribution" yaml:"distribution"`
	// WritersPerObject, when > 0, pins fixed groups of K writers to each
	// object instead of choosing by Distribution.
	WritersPerObject int `json:"writersPerObject,omitempty" yaml:"writersPerObject"`
	// Fields is FieldsShared or FieldsDisjoint.
	Fields string `json:"fields" yaml:"fields"`
	// Clients is the number of separate client-go clients (connections);
	// writers are spread over them round-robin.
	Clients int `json:"clients" yaml:"clients"`

	// Strategy is one of the Strategy* constants.
	Strategy string `json:"strategy" yaml:"strategy"`
	// Unconditional makes StrategyUpdate PUT without a resourceVersion.
	Unconditional bool `json:"unconditional,omitempty" yaml:"unconditional"`
	// Backoff for StrategyRetry: "default-retry", "default-backoff" or
	// "STEPS,DURATION,FACTOR,JITTER".
	Backoff string `json:"backoff,omitempty" yaml:"backoff"`
	// PatchType for StrategyPatch.
	PatchType string `json:"patchType,omitempty" yaml:"patchType"`
	// PatchPrecondition adds metadata.resourceVersion to merge/strategic patches.
	PatchPrecondition bool `json:"patchPrecondition,omitempty" yaml:"patchPrecondition"`
	// FieldManager for StrategySSA: ManagerPerWriter or ManagerShared.
	FieldManager string `json:"fieldManager,omitempty" yaml:"fieldManager"`
	// Force takes field ownership on apply conflicts.
	Force bool `json:"force,omitempty" yaml:"force"`

	// Rate, when > 0, runs an open loop at this many operations per second
	// in total; 0 is a closed loop.
	Rate float64 `json:"rate,omitempty" yaml:"rate"`
	// MaxInFlight bounds concurrent operations in an open loop (default: Writers).
	MaxInFlight int `json:"maxInFlight,omitempty" yaml:"maxInFlight"`
	// ThinkTime is the pause between a closed-loop writer's operations.
	ThinkTime Duration `json:"thinkTime,omitempty" yaml:"thinkTime"`
	// Duration bounds the measured part of the run (after Warmup).
	Duration Duration `json:"duration" yaml:"duration"`
	// Operations, when > 0, bounds the number of measured operations.
	Operations int64 `json:"operations,omitempty" yaml:"operations"`
	// Warmup runs before the measured part and is excluded from the figures.
	Warmup Duration `json:"warmup,omitempty" yaml:"warmup"`
	// OpTimeout bounds one operation, retries included.
	OpTimeout Duration `json:"opTimeout" yaml:"opTimeout"`

	// Client holds the client-go settings.
	Client Client `json:"client" yaml:"client"`
	// Target says which apiserver to run against.
	Target Target `json:"target" yaml:"target"`
	// Keep leaves the run's namespace in place at the end.
	Keep bool `json:"keep,omitempty" yaml:"keep"`

	// LeaderElection configures ScenarioLeaderElection.
	LeaderElection *LeaderElection `json:"leaderElection,omitempty" yaml:"leaderElection"`
	// Quota configures ScenarioQuota.
	Quota *Quota `json:"quota,omitempty" yaml:"quota"`
	// Controller configures ScenarioControllerStatus.
	Controller *Controller `json:"controller,omitempty" yaml:"controller"`
}

// Distribution picks which object an operation hits.
type Distribution struct {
	// Kind is DistUniform, DistZipf or DistHotspot.
	Kind string `json:"kind" yaml:"kind"`
	// ZipfExponent (s > 1) for DistZipf.
	ZipfExponent float64 `json:"zipfExponent,omitempty" yaml:"zipfExponent"`
	// HotFraction of the objects that are hot, for DistHotspot (0..1).
	HotFraction float64 `json:"hotFraction,omitempty" yaml:"hotFraction"`
	// HotShare of the traffic that goes to hot objects, for DistHotspot (0..1).
	HotShare float64 `json:"hotShare,omitempty" yaml:"hotShare"`
}

// Client holds client-go settings, set on purpose and recorded.
type Client struct {
	// QPS is the client-side rate limit; a negative value means no limit.
	QPS float32 `json:"qps" yaml:"qps"`
	// Burst is the client-side burst.
	Burst int `json:"burst" yaml:"burst"`
	// ContentType is ContentJSON or ContentProtobuf.
	ContentType string `json:"contentType" yaml:"contentType"`
	// UserAgent sent with every request (default kb-bench/<version>).
	UserAgent string `json:"userAgent,omitempty" yaml:"userAgent"`
}

// Target says which apiserver to run against.
type Target struct {
	// Kind is TargetLocal, TargetKind or TargetKubeconfig.
	Kind string `json:"kind" yaml:"kind"`
	// Kubeconfig path, for TargetKubeconfig.
	Kubeconfig string `json:"kubeconfig,omitempty" yaml:"kubeconfig"`
	// Context in the kubeconfig, for TargetKubeconfig.
	Context string `json:"context,omitempty" yaml:"context"`
	// KindCluster names the kind cluster, for TargetKind.
	KindCluster string `json:"kindCluster,omitempty" yaml:"kindCluster"`
	// Storage is StorageDisk or StorageMemory, for TargetLocal.
	Storage string `json:"storage,omitempty" yaml:"storage"`
	// ControlPlaneBin is a directory holding kube-apiserver and etcd.
	ControlPlaneBin string `json:"controlPlaneBin,omitempty" yaml:"controlPlaneBin"`
}

// LeaderElection configures ScenarioLeaderElection.
type LeaderElection struct {
	LeaseDuration   Duration `json:"leaseDuration" yaml:"leaseDuration"`
	RenewDeadline   Duration `json:"renewDeadline" yaml:"renewDeadline"`
	RetryPeriod     Duration `json:"retryPeriod" yaml:"retryPeriod"`
	FailoverEvery   Duration `json:"failoverEvery,omitempty" yaml:"failoverEvery"`
	ReleaseOnCancel bool     `json:"releaseOnCancel,omitempty" yaml:"releaseOnCancel"`
}

// Quota configures ScenarioQuota.
type Quota struct {
	// Resource is the quota'd resource name, e.g. "count/configmaps".
	Resource string `json:"resource" yaml:"resource"`
	// Hard is the limit H.
	Hard int64 `json:"hard" yaml:"hard"`
}

// Controller configures ScenarioControllerStatus.
type Controller struct {
	// Controllers is the number of controllers (K).
	Controllers int `json:"controllers" yaml:"controllers"`
	// ObjectsPerController is how many objects each controller owns alone.
	ObjectsPerController int `json:"objectsPerController" yaml:"objectsPerController"`
	// SharedObjects is how many objects every controller writes.
	SharedObjects int `json:"sharedObjects" yaml:"sharedObjects"`
}

// Duration is a time.Duration that reads and writes as "10s" in JSON and YAML.
type Duration struct{ time.Duration }

// D returns d as a Duration.
func D(d time.Duration) Duration { return Duration{d} }

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads "1m30s" (or a number of nanoseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration must be a string such as \"10s\": %w", err)
		}
		d.Duration = time.Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q (use e.g. \"500ms\", \"10s\", \"2m\"): %w", s, err)
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes the duration as a string such as "1m30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalText reads "1m30s"; used by YAML decoders.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use e.g. \"500ms\", \"10s\", \"2m\")", string(b))
	}
	d.Duration = v
	return nil
}
