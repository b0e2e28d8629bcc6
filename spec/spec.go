// Package spec defines the resolved benchmark specification: the one plain
// value that profiles and command-line flags produce, the engine runs, and
// every result records. It has no dependency on client-go, files or terminals.
//
// A Spec holds the settings every scenario shares (writers, load, strategy,
// client, target) as typed fields, and the scenario's own settings as plain
// data in Settings: the scenario package owns their type, defaults and
// validation (see workload/scenario).
//
// Each field's struct tags say everything about it once: `json`/`yaml` its
// name in results and profiles, `flag` its command-line flag and `help` the
// flag's usage (cmd/kb-bench/app binds the flags from them).
package spec

import (
	"encoding/json"
	"fmt"
	"time"
)

// Strategy is how a writer writes after it reads.
type Strategy string

// Write strategies.
const (
	StrategyUpdate Strategy = "update" // GET, modify, PUT with the read resourceVersion
	StrategyRetry  Strategy = "retry"  // retry.RetryOnConflict around GET+modify+PUT
	StrategyPatch  Strategy = "patch"  // merge, strategic or JSON patch
	StrategySSA    Strategy = "ssa"    // server-side apply
)

// Strategies lists every strategy, in the order help text shows them.
var Strategies = []Strategy{StrategyUpdate, StrategyRetry, StrategyPatch, StrategySSA}

// PatchType is the kind of patch StrategyPatch sends.
type PatchType string

// Patch types for StrategyPatch.
const (
	PatchMerge     PatchType = "merge"
	PatchStrategic PatchType = "strategic"
	PatchJSON      PatchType = "json"
)

// PatchTypes lists every patch type.
var PatchTypes = []PatchType{PatchMerge, PatchStrategic, PatchJSON}

// FieldManagerMode says which field managers StrategySSA's writers use.
type FieldManagerMode string

// Field manager modes for StrategySSA.
const (
	ManagerPerWriter FieldManagerMode = "per-writer"
	ManagerShared    FieldManagerMode = "shared"
)

// FieldManagerModes lists every field manager mode.
var FieldManagerModes = []FieldManagerMode{ManagerPerWriter, ManagerShared}

// ReadSource is where a writer reads the object it is about to write.
type ReadSource string

// Read sources.
const (
	// ReadGet is a live GET, a quorum read from etcd (the default).
	ReadGet ReadSource = "get"
	// ReadCache is a GET with resourceVersion "0", which the apiserver
	// serves from its watch cache, as stale as it allows.
	ReadCache ReadSource = "cache"
	// ReadInformer reads a client-go informer's lister: each client runs
	// one informer (list and watch) on the run's objects, shared by its
	// writers, as a controller process shares one.
	ReadInformer ReadSource = "informer"
)

// ReadSources lists every read source.
var ReadSources = []ReadSource{ReadGet, ReadCache, ReadInformer}

// MaxWatchers bounds Spec.Watchers: each is a watch of its own, on a
// connection of its own.
const MaxWatchers = 1000

// TargetKind names where the apiserver comes from.
type TargetKind string

// Target kinds.
const (
	TargetLocal       TargetKind = "local"
	TargetKindCluster TargetKind = "kind"
	TargetKubeconfig  TargetKind = "kubeconfig"
)

// TargetKinds lists every target kind.
var TargetKinds = []TargetKind{TargetLocal, TargetKubeconfig, TargetKindCluster}

// Runner says what starts a distributed run's shards.
type Runner string

// Runners for Spec.Shards.
const (
	RunnerProcess Runner = "process" // kb-bench shard processes on this machine
	RunnerJob     Runner = "job"     // an Indexed Job in the run's namespace
)

// Runners lists every runner.
var Runners = []Runner{RunnerProcess, RunnerJob}

// Storage is where the local control plane keeps etcd's data.
type Storage string

// etcd storage for the local control plane.
const (
	StorageDisk   Storage = "disk"
	StorageMemory Storage = "memory" // /dev/shm
)

// Storages lists every storage.
var Storages = []Storage{StorageDisk, StorageMemory}

// PullPolicy says when kb-bench pulls the images of a kind cluster it
// creates.
type PullPolicy string

// Pull policies, as `docker run --pull` names them.
const (
	PullMissing PullPolicy = "missing" // pull what the runtime does not hold (kind's own behaviour)
	PullNever   PullPolicy = "never"   // never pull: a missing image is an error
	PullAlways  PullPolicy = "always"  // pull every time, for a tag that moves
)

// PullPolicies lists every pull policy.
var PullPolicies = []PullPolicy{PullMissing, PullNever, PullAlways}

// ContentType is the encoding the clients send and ask for.
type ContentType string

// Content types for the client.
const (
	// ContentDefault is client-go's own choice, what real clients send:
	// protobuf for built-in types, JSON where protobuf does not apply
	// (apply patches, custom resources).
	ContentDefault  ContentType = "default"
	ContentJSON     ContentType = "json"
	ContentProtobuf ContentType = "protobuf"
	// ContentCBOR asks for CBOR, falling back to JSON where the apiserver
	// does not serve it (feature gate CBORServingAndStorage, alpha and off
	// by default in 1.37).
	ContentCBOR ContentType = "cbor"
)

// ContentTypes lists every content type.
var ContentTypes = []ContentType{ContentDefault, ContentJSON, ContentProtobuf, ContentCBOR}

// Spec is everything that decides what a run does. Zero values mean "use the
// default"; Defaults fills them in, Validate checks the result.
type Spec struct {
	// Scenario names the registered scenario that runs.
	Scenario string `json:"scenario" yaml:"scenario" flag:"scenario" help:"what the writers do: counter (the default), leader-election, quota, controller-status (see 'kb-bench scenarios')"`
	// Writers is the number of concurrent writers.
	Writers int `json:"writers" yaml:"writers" flag:"writers" help:"concurrent writers"`
	// Clients is the number of client-go clients the writers share, round-robin.
	Clients int `json:"clients" yaml:"clients" flag:"clients" help:"separate client-go clients (connections) the writers are spread over"`

	// Strategy is how writers write, for scenarios that have strategies.
	Strategy Strategy `json:"strategy,omitempty" yaml:"strategy" flag:"strategy" help:"update, retry, patch or ssa (default update, where the scenario has strategies)"`
	// Unconditional makes StrategyUpdate PUT without a resourceVersion.
	Unconditional bool `json:"unconditional,omitempty" yaml:"unconditional" flag:"unconditional" help:"update: PUT without resourceVersion (last write wins; shows lost updates)"`
	// Backoff is StrategyRetry's schedule.
	Backoff *Backoff `json:"backoff,omitempty" yaml:"backoff" flag:"backoff" help:"retry: default-retry (the default), default-backoff or STEPS,DURATION,FACTOR,JITTER"`
	// PatchType for StrategyPatch.
	PatchType PatchType `json:"patchType,omitempty" yaml:"patchType" flag:"patch-type" help:"patch: merge (the default), strategic, or json (a test+replace compare-and-swap)"`
	// PatchPrecondition adds metadata.resourceVersion to merge/strategic patches.
	PatchPrecondition bool `json:"patchPrecondition,omitempty" yaml:"patchPrecondition" flag:"patch-precondition" help:"patch: carry metadata.resourceVersion (optimistic lock, 409 on stale)"`
	// FieldManager for StrategySSA.
	FieldManager FieldManagerMode `json:"fieldManager,omitempty" yaml:"fieldManager" flag:"field-manager" help:"ssa: per-writer (the default) or shared field managers"`
	// Force takes field ownership on apply conflicts.
	Force bool `json:"force,omitempty" yaml:"force" flag:"force" help:"ssa: force field ownership on conflicts"`

	// Read is where writers read before they write, for scenarios that
	// read (the default ReadGet).
	Read ReadSource `json:"read,omitempty" yaml:"read" flag:"read" help:"where a writer reads before it writes: get (a live GET, the default), cache (GET resourceVersion=0, from the apiserver's watch cache) or informer (a client-go informer per client, list+watch; a writer whose informer has not yet seen its own last write reads and writes what the informer holds, as a controller does, and its 409 is counted as a stale read)"`
	// Watchers is how many plain watches on the run's objects measure
	// how long each successful write takes to reach a watcher.
	Watchers int `json:"watchers,omitempty" yaml:"watchers" flag:"watchers" help:"open this many plain watches on the run's objects (on the run's clients in turn) and report watch delay: from each successful write's response to each watcher seeing it (with --read informer the informers are measured too)"`

	// Rate, when > 0, runs an open loop at this many operations per second.
	Rate float64 `json:"rate,omitempty" yaml:"rate" flag:"rate" help:"open loop: operations per second in total (0: closed loop)"`
	// MaxInFlight bounds concurrent operations in an open loop (default: Writers).
	MaxInFlight int `json:"maxInFlight,omitempty" yaml:"maxInFlight" flag:"max-in-flight" help:"open loop: most operations in flight (default: writers)"`
	// ThinkTime is the pause between a closed-loop writer's operations.
	ThinkTime Duration `json:"thinkTime,omitempty" yaml:"thinkTime" flag:"think-time" help:"closed loop: pause between a writer's operations"`
	// Duration bounds the measured part of the run (after Warmup).
	Duration Duration `json:"duration" yaml:"duration" flag:"duration" help:"measured duration, after the warm-up"`
	// Operations, when > 0, bounds the number of measured operations.
	Operations int64 `json:"operations,omitempty" yaml:"operations" flag:"operations" help:"stop after this many measured operations (0: no bound)"`
	// Warmup runs before the measured part and is excluded from the figures.
	Warmup Duration `json:"warmup,omitempty" yaml:"warmup" flag:"warmup" help:"run this long first and leave it out of the figures"`
	// OpTimeout bounds one operation, retries included.
	OpTimeout Duration `json:"opTimeout" yaml:"opTimeout" flag:"op-timeout" help:"bound on one operation, retries included"`

	// Shards, when > 0, spreads the writers (and an open loop's rate)
	// over this many shard processes started by Runner.
	Shards int `json:"shards,omitempty" yaml:"shards" flag:"shards" help:"spread the writers over this many shard processes (kb-bench shard) started by --runner and merge their results exactly (0: all in this process)"`
	// Runner starts the shards (default process).
	Runner Runner `json:"runner,omitempty" yaml:"runner" flag:"runner" help:"with --shards: process (local processes, the default) or job (an Indexed Job in the run's namespace)"`

	// Client holds the client-go settings.
	Client Client `json:"client" yaml:"client"`
	// Target says which apiserver to run against.
	Target Target `json:"target" yaml:"target"`
	// Keep leaves the run's namespace in place at the end.
	Keep bool `json:"keep,omitempty" yaml:"keep" flag:"keep" help:"keep the run's namespace (or, with --namespace, its objects) instead of deleting it"`
	// Namespace is an existing namespace to run in ("": one of the run's own).
	Namespace string `json:"namespace,omitempty" yaml:"namespace" flag:"namespace" help:"run in this existing namespace, with only the permissions 'kb-bench rbac' lists: kb-bench creates and deletes only its own labelled objects there, never the namespace (default: a namespace of its own, kb-bench-<run-id>)"`

	// Settings are the scenario's own settings as plain data (JSON
	// values); the scenario decodes, defaults and validates them.
	Settings map[string]any `json:"settings,omitempty" yaml:"settings"`
}

// Client holds client-go settings, set on purpose and recorded.
type Client struct {
	// QPS is the client-side rate limit; a negative value means no limit.
	QPS float32 `json:"qps" yaml:"qps" flag:"qps" help:"client-side QPS limit per client (default: no client-side limit)"`
	// Burst is the client-side burst.
	Burst int `json:"burst" yaml:"burst" flag:"burst" help:"client-side burst per client"`
	// ContentType is what the clients send and ask for.
	ContentType ContentType `json:"contentType" yaml:"contentType" flag:"content-type" help:"default (client-go's own: protobuf for built-in types, JSON for apply patches), json, protobuf or cbor; the result records what was negotiated"`
	// UserAgent sent with every request (default kb-bench/<version>).
	UserAgent string `json:"userAgent,omitempty" yaml:"userAgent" flag:"user-agent" help:"user agent (default kb-bench/<version>)"`
	// Latency is a round trip added to every request in kb-bench's own
	// transport, half each way; Jitter varies each half by up to half of it.
	Latency Duration `json:"latency,omitzero" yaml:"latency" flag:"client-latency" help:"round trip added to every request between the clients and the apiserver (half each way, in kb-bench's transport), e.g. 1ms for a controller in the same region (default none)"`
	Jitter  Duration `json:"jitter,omitzero" yaml:"jitter" flag:"client-jitter" help:"with --client-latency: each request's round trip varies uniformly by up to this much either way"`
}

// Target says which apiserver to run against.
type Target struct {
	// Kind is where the apiserver comes from.
	Kind TargetKind `json:"kind" yaml:"kind" flag:"target" help:"local (a real local control plane), kubeconfig or kind"`
	// Kubeconfig path, for TargetKubeconfig.
	Kubeconfig string `json:"kubeconfig,omitempty" yaml:"kubeconfig" flag:"kubeconfig" help:"run against the existing cluster in this kubeconfig (never used unless given)"`
	// Context in the kubeconfig, for TargetKubeconfig.
	Context string `json:"context,omitempty" yaml:"context" flag:"context" help:"kubeconfig context to use; alone, a context of $KUBECONFIG or ~/.kube/config"`
	// KindCluster names the kind cluster, for TargetKindCluster.
	KindCluster string `json:"kindCluster,omitempty" yaml:"kindCluster" flag:"kind-cluster" help:"kind cluster name for --target kind (default kind); created for the run when it does not exist"`
	// KindNodeImage, KindPull and KeepCluster are for a kind cluster
	// created for the run: its node image, when to pull it, and keeping it.
	KindNodeImage string     `json:"kindNodeImage,omitempty" yaml:"kindNodeImage" flag:"node-image" help:"kind target: node image of a cluster created for the run (default: kind's own, kindest/node pinned by the kind kb-bench links)"`
	KindPull      PullPolicy `json:"kindPull,omitempty" yaml:"kindPull" flag:"pull" help:"kind target: pull the node image of a cluster created for the run when it is missing (as kind does), never (air-gapped: load it first) or always"`
	KeepCluster   bool       `json:"keepCluster,omitempty" yaml:"keepCluster" flag:"keep-cluster" help:"kind target: keep a cluster created for the run (see 'kb-bench kind down')"`
	// Storage is where the local control plane keeps etcd's data.
	Storage Storage `json:"storage,omitempty" yaml:"storage" flag:"storage" help:"local control plane etcd storage: disk or memory (/dev/shm)"`
	// ControlPlaneBin is a directory holding kube-apiserver and etcd.
	ControlPlaneBin string `json:"controlPlaneBin,omitempty" yaml:"controlPlaneBin" flag:"control-plane-bin" help:"directory holding kube-apiserver and etcd"`
	// ControllerManager adds upstream kube-controller-manager to the local
	// control plane.
	ControllerManager bool `json:"controllerManager,omitempty" yaml:"controllerManager" flag:"controller-manager" help:"local target: also run upstream kube-controller-manager, so the real controllers delete namespaces, fill quota status and collect garbage"`
	// APIServers is how many kube-apiservers the local control plane runs
	// on its one etcd (0 means 1); client i talks to apiserver i mod N.
	APIServers int `json:"apiservers,omitempty" yaml:"apiservers" flag:"apiservers" help:"local target: run this many kube-apiservers on one etcd; client i sticks to apiserver i mod N (default 1; --clients defaults to N)"`
	// EtcdLatency and EtcdJitter delay the local apiservers' etcd, as
	// Client's delay its requests, through a TCP proxy.
	EtcdLatency Duration `json:"etcdLatency,omitzero" yaml:"etcdLatency" flag:"etcd-latency" help:"local target: round trip added between the apiservers and etcd by a delaying TCP proxy (half each way), e.g. 2ms for etcd across zones, 10ms for slow disks (default none)"`
	EtcdJitter  Duration `json:"etcdJitter,omitzero" yaml:"etcdJitter" flag:"etcd-jitter" help:"with --etcd-latency: each round trip varies uniformly by up to this much either way"`
	// KillAPIServer is a fault: apiserver KillAPIServer (from 1) of a
	// local control plane of several is killed (SIGKILL) KillAPIServerAt
	// into the measured window; its clients fail over to the others.
	KillAPIServer   int      `json:"killAPIServer,omitempty" yaml:"killAPIServer" flag:"kill-apiserver" help:"fault, local target with --apiservers N >= 2: kill -9 apiserver I (1 to N) at --kill-apiserver-at into the measured window; its clients fail over to the living, as behind a load balancer, and the run goes on (default none)"`
	KillAPIServerAt Duration `json:"killAPIServerAt,omitzero" yaml:"killAPIServerAt" flag:"kill-apiserver-at" help:"with --kill-apiserver: when, from the start of the measured window, e.g. 2s"`
}

// MaxAPIServers bounds Target.APIServers: each is a kube-apiserver
// process of several hundred MB.
const MaxAPIServers = 16

// APIServerCount is how many apiservers the local control plane runs.
func (t Target) APIServerCount() int { return max(t.APIServers, 1) }

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
	return d.UnmarshalText([]byte(s))
}

// MarshalYAML writes the duration as a string such as "1m30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalText reads "1m30s"; YAML decoders and flags use it.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (use e.g. 500ms, 10s, 2m)", string(b))
	}
	d.Duration = v
	return nil
}

// TargetInfo is the apiserver a run used, as found when it was opened;
// every result records it.
type TargetInfo struct {
	// Kind is local, kind or kubeconfig.
	Kind TargetKind `json:"kind"`
	// Server is the apiserver URL.
	Server string `json:"server"`
	// ServerVersion is what /version reported, e.g. v1.37.1.
	ServerVersion string `json:"serverVersion"`
	// Context is the kubeconfig context, for kubeconfig targets.
	Context string `json:"context,omitempty"`
	// Storage is the local control plane's etcd storage (disk or memory).
	Storage Storage `json:"storage,omitempty"`
	// EtcdVersion is the local control plane's etcd version.
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Reused is set when a `kb-bench local up` control plane was reused.
	Reused bool `json:"reused,omitempty"`
	// ControllerManager is set when the local control plane ran upstream
	// kube-controller-manager.
	ControllerManager bool `json:"controllerManager,omitempty"`
	// KindConfig is the configuration of a kind cluster that `kb-bench
	// kind up` made (nodes, apiserver flags, etcd storage), as kind reads it.
	KindConfig string `json:"kindConfig,omitempty"`
	// NodeImage is the node image a kind cluster's control plane runs
	// (ServerVersion is the Kubernetes version it serves).
	NodeImage string `json:"nodeImage,omitempty"`
	// APIServers are the URLs of every apiserver of a local control plane
	// that runs more than one (Server is the first); client i used
	// APIServers[i mod len].
	APIServers []string `json:"apiservers,omitempty"`
	// EtcdProxy is what the delaying proxy in front of etcd observed,
	// when the run asked for etcd latency.
	EtcdProxy *DelayObserved `json:"etcdProxy,omitempty"`
}

// DelayObserved is the delay a delaying link actually added: over Count
// round trips (a proxy: chunks each way, paired), the mean and the
// largest round trip it added.
type DelayObserved struct {
	Count int64    `json:"count"`
	Mean  Duration `json:"mean"`
	Max   Duration `json:"max"`
}
