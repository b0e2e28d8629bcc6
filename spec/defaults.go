package spec

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults used where a Spec leaves a field at its zero value.
const (
	DefaultWriters   = 8
	DefaultDuration  = 10 * time.Second
	DefaultOpTimeout = 10 * time.Second
	// DefaultShardTimeout bounds how long a distributed run waits for
	// every shard to join (start, find the run, connect).
	DefaultShardTimeout = 2 * time.Minute
	// MaxWriters bounds Writers (and MaxInFlight): each writer is a
	// goroutine with its own state, and far past this one machine runs
	// out of memory before the apiserver is the bottleneck.
	MaxWriters = 100_000
	// MaxRate bounds an open loop's rate: far past what one apiserver
	// takes, and low enough that the schedule stays cheap to keep.
	MaxRate = 1e6
	// MaxShards bounds Shards: each shard is a process (or a pod) with
	// its own connections and a Lease of its own.
	MaxShards = 256
)

// Traits says which of the shared settings a scenario uses. Defaults fills
// only those, and Validate refuses the others with a message, so a setting
// is never silently ignored.
type Traits struct {
	// Strategies: the writers write with a Strategy and its options.
	Strategies bool
	// Driven: the engine's driver runs the scenario's operations, so a
	// Rate (open loop), MaxInFlight and ThinkTime mean something.
	Driven bool
	// Shardable: the scenario's writers can be spread over shard
	// processes (Shards).
	Shardable bool
	// Reads: the writers read before they write, from a Read source,
	// and the scenario measures Watchers.
	Reads bool
}

// Defaults fills every zero-valued field that has a default for a scenario
// with traits t. It never overrides a value that was set.
func (s *Spec) Defaults(t Traits) {
	s.Writers = cmp.Or(s.Writers, DefaultWriters)
	if s.Clients == 0 {
		s.Clients = 1
		if n := s.Target.APIServerCount(); n > 1 {
			// One client per apiserver, so that every apiserver serves.
			s.Clients = max(1, min(n, s.Writers))
		}
	}
	if t.Strategies {
		s.Strategy = cmp.Or(s.Strategy, StrategyUpdate)
		switch s.Strategy {
		case StrategyRetry:
			if s.Backoff == nil {
				s.Backoff = new(DefaultRetry)
			}
		case StrategyPatch:
			s.PatchType = cmp.Or(s.PatchType, PatchMerge)
		case StrategySSA:
			s.FieldManager = cmp.Or(s.FieldManager, ManagerPerWriter)
		}
	}
	if t.Reads {
		s.Read = cmp.Or(s.Read, ReadGet)
	}
	if t.Driven && s.Rate > 0 && s.MaxInFlight == 0 {
		s.MaxInFlight = s.Writers
	}
	if s.Duration.Duration == 0 && s.Operations == 0 {
		s.Duration = D(DefaultDuration)
	}
	s.OpTimeout = cmp.Or(s.OpTimeout, D(DefaultOpTimeout))
	if s.Shards > 0 {
		s.Runner = cmp.Or(s.Runner, RunnerProcess)
	}
	if s.Client.QPS == 0 {
		s.Client.QPS = -1 // no client-side limit, on purpose
	}
	s.Client.ContentType = cmp.Or(s.Client.ContentType, ContentDefault)
	s.Target.Kind = cmp.Or(s.Target.Kind, TargetLocal)
	if s.Target.Kind == TargetLocal {
		s.Target.Storage = cmp.Or(s.Target.Storage, StorageDisk)
	}
}

// Validate checks a defaulted Spec for a scenario with traits t and returns
// every problem found, each with the path of the field (as in a profile's
// spec) and what to change. Each part of the Spec validates itself.
func (s *Spec) Validate(t Traits) field.ErrorList {
	errs := slices.Concat(s.validateWriters(), s.validateStrategy(t), s.validateLoad(t), s.validateShards(t), s.validateRead(t),
		s.Client.validate(field.NewPath("client")), s.Target.Validate(field.NewPath("target")))
	if s.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(s.Namespace) {
			errs = append(errs, field.Invalid(field.NewPath("namespace"), s.Namespace, msg+" (--namespace names an existing namespace)"))
		}
	}
	return errs
}

func (s *Spec) validateShards(t Traits) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.Shards == 0 && s.Runner != "":
		errs = append(errs, field.Forbidden(field.NewPath("runner"), "starts shards: add --shards N, or drop --runner"))
	case s.Shards == 0:
	case !t.Shardable:
		errs = append(errs, field.Forbidden(field.NewPath("shards"), "this scenario runs in one process only: drop --shards (the counter scenario shards)"))
	case s.Shards < 0 || s.Shards > MaxShards:
		errs = append(errs, field.Invalid(field.NewPath("shards"), s.Shards, fmt.Sprintf("use 1 to %d shard processes, or 0 for none (--shards)", MaxShards)))
	case s.Shards > s.Workers():
		errs = append(errs, field.Invalid(field.NewPath("shards"), s.Shards, fmt.Sprintf("more shards than the %d writers to spread over them: use at most %d shards, or more writers", s.Workers(), s.Workers())))
	case s.Target.APIServerCount() > 1:
		errs = append(errs, field.Forbidden(field.NewPath("shards"), "a distributed run does not spread its shards over several apiservers yet: drop --shards or --apiservers"))
	case s.Shards > s.Clients && s.Clients > 1:
		errs = append(errs, field.Invalid(field.NewPath("clients"), s.Clients, fmt.Sprintf("fewer clients than the %d shards: each shard has at least one connection of its own; use --clients %d or more, or leave it at 1 (one per shard)", s.Shards, s.Shards)))
	}
	if s.Shards > 0 {
		errs = append(errs, OneOf(field.NewPath("runner"), s.Runner, Runners, "runner")...)
	}
	return errs
}

func (s *Spec) validateRead(t Traits) field.ErrorList {
	var errs field.ErrorList
	read, watchers := field.NewPath("read"), field.NewPath("watchers")
	if !t.Reads {
		if s.Read != "" && s.Read != ReadGet {
			errs = append(errs, field.Forbidden(read, "this scenario's writers read only with a live GET: drop --read (the counter and controller-status scenarios read from a cache or an informer)"))
		}
		if s.Watchers != 0 {
			errs = append(errs, field.Forbidden(watchers, "this scenario does not measure watch delay: drop --watchers (the counter scenario does)"))
		}
		return errs
	}
	errs = append(errs, OneOf(read, s.Read, ReadSources, "read")...)
	if s.Watchers < 0 || s.Watchers > MaxWatchers {
		errs = append(errs, field.Invalid(watchers, s.Watchers, fmt.Sprintf("use 0 (none) to %d (--watchers)", MaxWatchers)))
	}
	if s.Shards > 0 && (s.Read != ReadGet || s.Watchers > 0) {
		errs = append(errs, field.Forbidden(field.NewPath("shards"), "a 409's cause and a watch's delay are told from every successful write, which one process sees only of its own shard: drop --shards, or read with get and drop --watchers"))
	}
	return errs
}

// Workers is the number of workers a Driven scenario's writers run on,
// and the shards split: the writers, or in an open loop the operations
// allowed in flight.
func (s *Spec) Workers() int {
	if s.Rate > 0 && s.MaxInFlight > 0 {
		return s.MaxInFlight
	}
	return s.Writers
}

func (s *Spec) validateWriters() field.ErrorList {
	var errs field.ErrorList
	if s.Writers < 1 || s.Writers > MaxWriters {
		errs = append(errs, field.Invalid(field.NewPath("writers"), s.Writers, fmt.Sprintf("use 1 to %d (--writers)", MaxWriters)))
	}
	if s.Writers >= 1 && (s.Clients < 1 || s.Clients > s.Writers) {
		errs = append(errs, field.Invalid(field.NewPath("clients"), s.Clients, fmt.Sprintf("use 1 to the number of writers, %d (--clients)", s.Writers)))
	}
	if n := s.Target.APIServerCount(); n > 1 && s.Clients >= 1 && s.Clients < n && s.Clients < s.Writers {
		errs = append(errs, field.Invalid(field.NewPath("clients"), s.Clients, fmt.Sprintf("fewer clients than the %d apiservers: client i talks to apiserver i mod %d, so some apiserver would serve no writer; use --clients %d or more (or leave it out: it defaults to one per apiserver)", n, n, min(n, s.Writers))))
	}
	return errs
}

func (s *Spec) validateStrategy(t Traits) field.ErrorList {
	var errs field.ErrorList
	// The strategy, then each of its options with the strategy it is for.
	options := []struct {
		name string
		set  bool
		only Strategy
	}{
		{"strategy", s.Strategy != "", ""}, {"unconditional", s.Unconditional, StrategyUpdate}, {"backoff", s.Backoff != nil, StrategyRetry},
		{"patchType", s.PatchType != "", StrategyPatch}, {"patchPrecondition", s.PatchPrecondition, StrategyPatch},
		{"fieldManager", s.FieldManager != "", StrategySSA}, {"force", s.Force, StrategySSA},
	}
	if !t.Strategies {
		for _, o := range options {
			if o.set {
				errs = append(errs, field.Forbidden(field.NewPath(o.name), "this scenario has no write strategies: drop it"))
			}
		}
		return errs
	}
	errs = append(errs, OneOf(field.NewPath("strategy"), s.Strategy, Strategies, "strategy")...)
	if b := s.Backoff; s.Strategy == StrategyRetry && b != nil && (b.Steps < 1 || b.Duration < 0 || !(b.Factor >= 0) || !(b.Jitter >= 0)) {
		errs = append(errs, field.Invalid(field.NewPath("backoff"), b.String(), "needs at least 1 step and no negative duration, factor or jitter (--backoff)"))
	}
	for _, o := range options[1:] {
		if o.set && s.Strategy != o.only {
			errs = append(errs, field.Forbidden(field.NewPath(o.name), fmt.Sprintf("applies only to strategy %s, not %s: drop it", o.only, s.Strategy)))
		}
	}
	if s.Strategy == StrategyPatch {
		errs = append(errs, OneOf(field.NewPath("patchType"), s.PatchType, PatchTypes, "patch-type")...)
		if s.PatchPrecondition && s.PatchType == PatchJSON {
			errs = append(errs, field.Forbidden(field.NewPath("patchPrecondition"), "is for merge and strategic patches; a json patch already carries a test op: drop --patch-precondition"))
		}
	}
	if s.Strategy == StrategySSA {
		errs = append(errs, OneOf(field.NewPath("fieldManager"), s.FieldManager, FieldManagerModes, "field-manager")...)
	}
	return errs
}

func (s *Spec) validateLoad(t Traits) field.ErrorList {
	var errs field.ErrorList
	if !t.Driven {
		for _, f := range []struct {
			name string
			set  bool
		}{{"rate", s.Rate != 0}, {"maxInFlight", s.MaxInFlight != 0}, {"thinkTime", s.ThinkTime.Duration != 0}} {
			if f.set {
				errs = append(errs, field.Forbidden(field.NewPath(f.name), "this scenario paces its own requests (client-go's timers), so there is no loop to set: drop it"))
			}
		}
	}
	switch rate := field.NewPath("rate"); {
	case math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0):
		errs = append(errs, field.Invalid(rate, s.Rate, "must be a finite number (--rate)"))
	case s.Rate < 0 || s.Rate > MaxRate:
		errs = append(errs, field.Invalid(rate, s.Rate, fmt.Sprintf("use 0 for a closed loop or up to %g operations per second (--rate)", MaxRate)))
	case s.Rate > 0 && s.ThinkTime.Duration > 0:
		errs = append(errs, field.Forbidden(field.NewPath("thinkTime"), "an open loop (--rate) schedules arrivals itself: drop --think-time or --rate"))
	}
	if s.Rate == 0 && s.MaxInFlight != 0 {
		errs = append(errs, field.Forbidden(field.NewPath("maxInFlight"), "applies only to an open loop: set --rate or drop --max-in-flight"))
	}
	if s.MaxInFlight < 0 || s.MaxInFlight > MaxWriters {
		errs = append(errs, field.Invalid(field.NewPath("maxInFlight"), s.MaxInFlight, fmt.Sprintf("use 1 to %d (--max-in-flight)", MaxWriters)))
	}
	for _, f := range []struct {
		name string
		d    Duration
	}{{"thinkTime", s.ThinkTime}, {"duration", s.Duration}, {"warmup", s.Warmup}} {
		if f.d.Duration < 0 {
			errs = append(errs, field.Invalid(field.NewPath(f.name), f.d.String(), "cannot be negative"))
		}
	}
	if s.Operations < 0 {
		errs = append(errs, field.Invalid(field.NewPath("operations"), s.Operations, "use 0 for no bound or a positive count (--operations)"))
	}
	if s.Duration.Duration == 0 && s.Operations == 0 {
		errs = append(errs, field.Required(field.NewPath("duration"), "the run has no bound: set --duration or --operations"))
	}
	if s.OpTimeout.Duration < time.Millisecond {
		errs = append(errs, field.Invalid(field.NewPath("opTimeout"), s.OpTimeout.String(), "use at least 1ms, e.g. 10s (--op-timeout): a shorter one times out every request before it reaches the apiserver"))
	}
	return errs
}

func (c *Client) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q := float64(c.QPS); math.IsNaN(q) || math.IsInf(q, 0) {
		errs = append(errs, field.Invalid(p.Child("qps"), c.QPS, "must be a finite number (--qps)"))
	}
	if c.Burst < 0 {
		errs = append(errs, field.Invalid(p.Child("burst"), c.Burst, "cannot be negative (--burst)"))
	}
	if c.QPS > 0 && c.Burst < 1 {
		errs = append(errs, field.Invalid(p.Child("burst"), c.Burst, "a client-side limit (--qps) needs --burst of at least 1"))
	}
	errs = append(errs, OneOf(p.Child("contentType"), c.ContentType, ContentTypes, "content-type")...)
	errs = append(errs, validateDelay(p.Child("latency"), c.Latency, p.Child("jitter"), c.Jitter, "client")...)
	return errs
}

// MaxDelay bounds an injected round trip: past it the run measures the
// delay, not the apiserver.
const MaxDelay = time.Second

// validateDelay checks an injected round trip and its jitter (flags
// --PREFIX-latency and --PREFIX-jitter).
func validateDelay(lp *field.Path, latency Duration, jp *field.Path, jitter Duration, prefix string) field.ErrorList {
	var errs field.ErrorList
	if latency.Duration < 0 || latency.Duration > MaxDelay {
		errs = append(errs, field.Invalid(lp, latency.String(), fmt.Sprintf("use 0 (none) to %s (--%s-latency)", MaxDelay, prefix)))
	}
	switch {
	case jitter.Duration < 0:
		errs = append(errs, field.Invalid(jp, jitter.String(), fmt.Sprintf("cannot be negative (--%s-jitter)", prefix)))
	case jitter.Duration > 0 && latency.Duration == 0:
		errs = append(errs, field.Forbidden(jp, fmt.Sprintf("varies --%s-latency, which is not set: set it, or drop --%s-jitter", prefix, prefix)))
	case latency.Duration >= 0 && jitter.Duration > latency.Duration:
		errs = append(errs, field.Invalid(jp, jitter.String(), fmt.Sprintf("would make some round trips negative: use at most --%s-latency (%s)", prefix, latency)))
	}
	return errs
}

// Validate checks the target at p, for a run or for 'kb-bench local up'
// and 'kind up', which make one.
func (t *Target) Validate(p *field.Path) field.ErrorList {
	errs := OneOf(p.Child("kind"), t.Kind, TargetKinds, "target")
	if t.Kind == TargetKubeconfig && t.Kubeconfig == "" && t.Context == "" {
		errs = append(errs, field.Required(p.Child("kubeconfig"), "target kubeconfig needs the cluster named: pass --kubeconfig PATH and/or --context NAME"))
	}
	if t.Kind == TargetLocal {
		errs = append(errs, OneOf(p.Child("storage"), t.Storage, Storages, "storage")...)
	} else if t.Storage != "" {
		errs = append(errs, field.Forbidden(p.Child("storage"), "applies only to the local control plane: drop --storage"))
	}
	if t.Kind != TargetKindCluster && (t.KindNodeImage != "" || t.KindPull != "" || t.KeepCluster) {
		errs = append(errs, field.Forbidden(p.Child("kindNodeImage"), "--node-image, --pull and --keep-cluster are for a kind cluster created for the run: add --target kind, or drop them"))
	}
	if t.KindPull != "" {
		errs = append(errs, OneOf(p.Child("kindPull"), t.KindPull, PullPolicies, "pull")...)
	}
	if t.Kind != TargetLocal {
		if t.APIServers > 1 {
			errs = append(errs, field.Forbidden(p.Child("apiservers"), "applies only to the local control plane (other clusters have the apiservers they have): drop --apiservers"))
		}
		if t.EtcdLatency.Duration != 0 || t.EtcdJitter.Duration != 0 {
			errs = append(errs, field.Forbidden(p.Child("etcdLatency"), "applies only to the local control plane, whose etcd kb-bench runs: drop --etcd-latency (--client-latency delays kb-bench's own requests to any cluster)"))
		}
	}
	switch n := t.APIServerCount(); {
	case t.KillAPIServer == 0 && t.KillAPIServerAt.Duration != 0:
		errs = append(errs, field.Required(p.Child("killAPIServer"), "--kill-apiserver-at needs the apiserver to kill: add --kill-apiserver I"))
	case t.KillAPIServer == 0:
	case t.Kind != TargetLocal || n < 2:
		errs = append(errs, field.Forbidden(p.Child("killAPIServer"), "kills one apiserver of a local control plane of several: add --apiservers 2 or more (and the local target), or drop --kill-apiserver"))
	case t.KillAPIServer < 1 || t.KillAPIServer > n:
		errs = append(errs, field.Invalid(p.Child("killAPIServer"), t.KillAPIServer, fmt.Sprintf("use 1 to %d, the apiserver to kill (--kill-apiserver)", n)))
	case t.KillAPIServerAt.Duration <= 0:
		errs = append(errs, field.Required(p.Child("killAPIServerAt"), "say when to kill it, from the start of the measured window: --kill-apiserver-at 2s"))
	}
	if t.APIServers < 0 || t.APIServers > MaxAPIServers {
		errs = append(errs, field.Invalid(p.Child("apiservers"), t.APIServers, fmt.Sprintf("use 1 to %d (--apiservers)", MaxAPIServers)))
	}
	errs = append(errs, validateDelay(p.Child("etcdLatency"), t.EtcdLatency, p.Child("etcdJitter"), t.EtcdJitter, "etcd")...)
	if t.Kind != TargetLocal && t.ControllerManager {
		errs = append(errs, field.Forbidden(p.Child("controllerManager"), "applies only to the local control plane (other clusters run their own): drop --controller-manager"))
	}
	return errs
}

// OneOf returns an error at p unless v is one of allowed; flag names the
// command-line flag that sets it.
func OneOf[T ~string](p *field.Path, v T, allowed []T, flag string) field.ErrorList {
	if slices.Contains(allowed, v) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	e := field.NotSupported(p, string(v), names)
	e.Detail += " (--" + flag + ")"
	return field.ErrorList{e}
}

// Describe joins an ErrorList into one message, one problem a line, each
// as "path: what is wrong: what to do".
func Describe(errs field.ErrorList) string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}
