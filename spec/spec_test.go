package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The traits of the kinds of scenario kb-bench has: the counter (and
// controller-status) write with strategies in the engine's loop, quota runs
// in the engine's loop without strategies, leader election paces itself.
var (
	strategiesDriven = Traits{Strategies: true, Driven: true}
	sharded          = Traits{Strategies: true, Driven: true, Shardable: true}
	reads            = Traits{Strategies: true, Driven: true, Shardable: true, Reads: true}
	drivenOnly       = Traits{Driven: true}
	selfPaced        = Traits{}
)

// defaulted returns a Spec{} defaulted for t.
func defaulted(t Traits) Spec {
	var s Spec
	s.Defaults(t)
	return s
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name   string
		traits Traits
		in     Spec
		check  func(s Spec) string // "" when s is as expected
		want   []fieldErr          // what Validate then says; none: valid
	}{
		{"shared defaults", strategiesDriven, Spec{}, func(s Spec) string {
			if s.Writers != DefaultWriters || s.Clients != 1 || s.Duration.Duration != DefaultDuration || s.OpTimeout.Duration != DefaultOpTimeout {
				return "writers, clients, duration or opTimeout not defaulted"
			}
			if s.Client.QPS != -1 || s.Client.ContentType != ContentDefault || s.Client.Burst != 0 {
				return "client not defaulted to no client-side limit and client-go's content type"
			}
			if s.Target.Kind != TargetLocal || s.Target.Storage != StorageDisk {
				return "target not defaulted to a local control plane on disk"
			}
			if s.Strategy != StrategyUpdate || s.Backoff != nil || s.PatchType != "" || s.FieldManager != "" {
				return "strategy not defaulted to update alone"
			}
			if s.Rate != 0 || s.MaxInFlight != 0 || s.Scenario != "" || s.Settings != nil {
				return "a closed loop got open-loop settings, or a scenario was chosen"
			}
			return ""
		}, nil},
		{"a client per apiserver", strategiesDriven, Spec{Target: Target{APIServers: 3}}, func(s Spec) string {
			if s.Clients != 3 {
				return fmt.Sprintf("3 apiservers got %d clients, want one each", s.Clients)
			}
			return ""
		}, nil},
		{"no more clients than writers", strategiesDriven, Spec{Writers: 2, Target: Target{APIServers: 3}}, func(s Spec) string {
			if s.Clients != 2 {
				return fmt.Sprintf("2 writers on 3 apiservers got %d clients, want 2", s.Clients)
			}
			return ""
		}, nil},
		{"no strategy without strategies", selfPaced, Spec{}, func(s Spec) string {
			if s.Strategy != "" {
				return "a scenario without strategies got one"
			}
			return ""
		}, nil},
		{"retry gets client-go's default retry", strategiesDriven, Spec{Strategy: StrategyRetry}, func(s Spec) string {
			if s.Backoff == nil || *s.Backoff != DefaultRetry || s.Backoff.String() != "default-retry" {
				return "backoff is not default-retry"
			}
			return ""
		}, nil},
		{"patch gets merge", strategiesDriven, Spec{Strategy: StrategyPatch}, func(s Spec) string {
			if s.PatchType != PatchMerge || s.Backoff != nil || s.FieldManager != "" {
				return "patch is not a plain merge patch"
			}
			return ""
		}, nil},
		{"ssa gets a manager per writer", strategiesDriven, Spec{Strategy: StrategySSA}, func(s Spec) string {
			if s.FieldManager != ManagerPerWriter || s.PatchType != "" {
				return "ssa does not use a field manager per writer"
			}
			return ""
		}, nil},
		{"open loop takes writers in flight", strategiesDriven, Spec{Writers: 5, Rate: 50}, func(s Spec) string {
			if s.MaxInFlight != 5 {
				return "maxInFlight is not the number of writers"
			}
			return ""
		}, nil},
		{"rate on a self-paced scenario is left for Validate", selfPaced, Spec{Rate: 50}, func(s Spec) string {
			if s.MaxInFlight != 0 {
				return "a scenario with no loop got a maxInFlight"
			}
			return ""
		}, []fieldErr{{"rate", "no loop to set"}}},
		{"operations alone bound the run", strategiesDriven, Spec{Operations: 100}, func(s Spec) string {
			if s.Duration.Duration != 0 {
				return "a duration was added to a run bounded by operations"
			}
			return ""
		}, nil},
		{"no storage for a kubeconfig target", strategiesDriven, Spec{Target: Target{Kind: TargetKubeconfig, Context: "c"}}, func(s Spec) string {
			if s.Target.Storage != "" {
				return "a kubeconfig target got a storage"
			}
			return ""
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.in
			s.Defaults(tt.traits)
			if msg := tt.check(s); msg != "" {
				t.Errorf("%s: %+v", msg, s)
			}
			checkErrs(t, s.Validate(tt.traits), tt.want)
		})
	}
}

func TestDefaultsKeepSetValues(t *testing.T) {
	b := DefaultBackoff
	s := Spec{
		Writers: 3, Clients: 2, Strategy: StrategyRetry, Backoff: &b, Rate: 10, MaxInFlight: 1,
		Duration: D(time.Second), OpTimeout: D(time.Second),
		Client: Client{QPS: 5, Burst: 7, ContentType: ContentCBOR},
		Target: Target{Kind: TargetLocal, Storage: StorageMemory},
	}
	want := s
	s.Defaults(strategiesDriven)
	if s.Writers != want.Writers || s.Clients != want.Clients || s.Strategy != want.Strategy || s.Rate != want.Rate ||
		s.MaxInFlight != want.MaxInFlight || s.Duration != want.Duration || s.OpTimeout != want.OpTimeout ||
		s.Client != want.Client || s.Target != want.Target {
		t.Fatalf("Defaults overrode set values:\n got %+v\nwant %+v", s, want)
	}
	// The backoff was parsed once, when it was read: Defaults keeps that
	// value, it does not replace or re-parse it.
	if s.Backoff != &b || b != DefaultBackoff {
		t.Fatalf("Defaults replaced the backoff: %v", s.Backoff)
	}
}

// fieldErr is an expected validation error: its field path and a part of
// its message (what the user is told to do).
type fieldErr struct {
	path, detail string
}

// checkErrs compares errs with want, ignoring order.
func checkErrs(t *testing.T, errs field.ErrorList, want []fieldErr) {
	t.Helper()
	used := make([]bool, len(errs))
next:
	for _, w := range want {
		for i, e := range errs {
			if !used[i] && e.Field == w.path && strings.Contains(e.Error(), w.detail) {
				used[i] = true
				continue next
			}
		}
		t.Errorf("no error at %s saying %q", w.path, w.detail)
	}
	for i, e := range errs {
		if !used[i] {
			t.Errorf("unexpected error: %v", e)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		traits Traits
		edit   func(*Spec)
		want   []fieldErr // none: valid
	}{
		{"default", strategiesDriven, func(*Spec) {}, nil},
		{"default self-paced", selfPaced, func(*Spec) {}, nil},

		// writers and clients
		{"negative writers", strategiesDriven, func(s *Spec) { s.Writers = -1 },
			[]fieldErr{{"writers", "writers: Invalid value: -1: use 1 to 100000 (--writers)"}}},
		{"too many writers", strategiesDriven, func(s *Spec) { s.Writers = MaxWriters + 1 },
			[]fieldErr{{"writers", "use 1 to 100000 (--writers)"}}},
		{"most writers", strategiesDriven, func(s *Spec) { s.Writers = MaxWriters }, nil},
		{"more clients than writers", strategiesDriven, func(s *Spec) { s.Clients = 9 },
			[]fieldErr{{"clients", "clients: Invalid value: 9: use 1 to the number of writers, 8 (--clients)"}}},
		{"no clients", strategiesDriven, func(s *Spec) { s.Clients = 0 },
			[]fieldErr{{"clients", "(--clients)"}}},

		// the local control plane's shape
		{"three apiservers, a client each", strategiesDriven, func(s *Spec) { s.Target.APIServers, s.Clients = 3, 3 }, nil},
		{"fewer clients than apiservers", strategiesDriven, func(s *Spec) { s.Target.APIServers, s.Clients = 3, 2 },
			[]fieldErr{{"clients", "fewer clients than the 3 apiservers: client i talks to apiserver i mod 3"}}},
		{"too many apiservers", strategiesDriven, func(s *Spec) { s.Target.APIServers, s.Clients = MaxAPIServers+1, 8 },
			[]fieldErr{{"target.apiservers", "use 1 to 16 (--apiservers)"}}},
		{"apiservers of a kubeconfig", strategiesDriven, func(s *Spec) {
			s.Target.Kind, s.Target.Kubeconfig, s.Target.Storage, s.Target.APIServers, s.Clients = TargetKubeconfig, "k", "", 2, 2
		}, []fieldErr{{"target.apiservers", "applies only to the local control plane"}}},
		{"etcd latency of a kubeconfig", strategiesDriven, func(s *Spec) {
			s.Target.Kind, s.Target.Kubeconfig, s.Target.Storage, s.Target.EtcdLatency = TargetKubeconfig, "k", "", D(time.Millisecond)
		}, []fieldErr{{"target.etcdLatency", "drop --etcd-latency (--client-latency delays kb-bench's own requests to any cluster)"}}},
		{"latencies with jitter", strategiesDriven, func(s *Spec) {
			s.Target.EtcdLatency, s.Target.EtcdJitter, s.Client.Latency, s.Client.Jitter = D(2*time.Millisecond), D(time.Millisecond), D(time.Millisecond), D(time.Millisecond)
		}, nil},
		{"jitter without latency", strategiesDriven, func(s *Spec) { s.Client.Jitter = D(time.Millisecond) },
			[]fieldErr{{"client.jitter", "varies --client-latency, which is not set"}}},
		{"jitter past latency", strategiesDriven, func(s *Spec) { s.Target.EtcdLatency, s.Target.EtcdJitter = D(time.Millisecond), D(2*time.Millisecond) },
			[]fieldErr{{"target.etcdJitter", "would make some round trips negative: use at most --etcd-latency (1ms)"}}},
		{"negative and huge latency", strategiesDriven, func(s *Spec) { s.Client.Latency, s.Target.EtcdLatency = D(-time.Millisecond), D(time.Minute) },
			[]fieldErr{{"client.latency", "use 0 (none) to 1s (--client-latency)"}, {"target.etcdLatency", "use 0 (none) to 1s (--etcd-latency)"}}},
		{"kill one of three apiservers", strategiesDriven, func(s *Spec) {
			s.Target.APIServers, s.Clients, s.Target.KillAPIServer, s.Target.KillAPIServerAt = 3, 3, 1, D(2*time.Second)
		}, nil},
		{"kill the only apiserver", strategiesDriven, func(s *Spec) { s.Target.KillAPIServer, s.Target.KillAPIServerAt = 1, D(time.Second) },
			[]fieldErr{{"target.killAPIServer", "add --apiservers 2 or more"}}},
		{"kill an apiserver that is not there", strategiesDriven, func(s *Spec) {
			s.Target.APIServers, s.Clients, s.Target.KillAPIServer, s.Target.KillAPIServerAt = 2, 2, 3, D(time.Second)
		}, []fieldErr{{"target.killAPIServer", "use 1 to 2, the apiserver to kill"}}},
		{"kill an apiserver, never", strategiesDriven, func(s *Spec) { s.Target.APIServers, s.Clients, s.Target.KillAPIServer = 2, 2, 1 },
			[]fieldErr{{"target.killAPIServerAt", "say when to kill it"}}},
		{"when, but no apiserver to kill", strategiesDriven, func(s *Spec) { s.Target.KillAPIServerAt = D(time.Second) },
			[]fieldErr{{"target.killAPIServer", "needs the apiserver to kill"}}},
		{"shards on several apiservers", sharded, func(s *Spec) { s.Shards, s.Runner, s.Target.APIServers, s.Clients = 2, RunnerProcess, 2, 2 },
			[]fieldErr{{"shards", "does not spread its shards over several apiservers yet"}}},

		// shards
		{"three shards", sharded, func(s *Spec) { s.Shards, s.Runner = 3, RunnerProcess }, nil},
		{"shards of a one-process scenario", strategiesDriven, func(s *Spec) { s.Shards, s.Runner = 3, RunnerProcess },
			[]fieldErr{{"shards", "shards: Forbidden: this scenario runs in one process only: drop --shards"}}},
		{"more shards than writers", sharded, func(s *Spec) { s.Shards, s.Runner = 9, RunnerProcess },
			[]fieldErr{{"shards", "more shards than the 8 writers to spread over them: use at most 8 shards, or more writers"}}},
		{"too many shards", sharded, func(s *Spec) { s.Writers, s.Shards, s.Runner = 1000, MaxShards+1, RunnerProcess },
			[]fieldErr{{"shards", "use 1 to 256 shard processes"}}},
		{"fewer clients than shards", sharded, func(s *Spec) { s.Shards, s.Runner, s.Clients = 4, RunnerProcess, 2 },
			[]fieldErr{{"clients", "fewer clients than the 4 shards"}}},
		{"runner without shards", sharded, func(s *Spec) { s.Runner = RunnerJob },
			[]fieldErr{{"runner", "runner: Forbidden: starts shards: add --shards N, or drop --runner"}}},
		{"unknown runner", sharded, func(s *Spec) { s.Shards, s.Runner = 2, "ssh" },
			[]fieldErr{{"runner", `supported values: "process", "job" (--runner)`}}},

		// strategy and its options
		{"unknown strategy", strategiesDriven, func(s *Spec) { s.Strategy = "put" },
			[]fieldErr{{"strategy", `strategy: Unsupported value: "put": supported values: "update", "retry", "patch", "ssa" (--strategy)`}}},
		{"unconditional patch", strategiesDriven, func(s *Spec) { s.Strategy, s.PatchType, s.Unconditional = StrategyPatch, PatchMerge, true },
			[]fieldErr{{"unconditional", "unconditional: Forbidden: applies only to strategy update, not patch: drop it"}}},
		{"backoff on update", strategiesDriven, func(s *Spec) { b := DefaultRetry; s.Backoff = &b },
			[]fieldErr{{"backoff", "applies only to strategy retry, not update"}}},
		{"backoff built with no steps", strategiesDriven, func(s *Spec) { s.Strategy, s.Backoff = StrategyRetry, &Backoff{} },
			[]fieldErr{{"backoff", "needs at least 1 step"}}},
		{"patch options on ssa", strategiesDriven, func(s *Spec) {
			s.Strategy, s.FieldManager, s.PatchType, s.PatchPrecondition = StrategySSA, ManagerShared, PatchJSON, true
		}, []fieldErr{
			{"patchType", "applies only to strategy patch, not ssa"},
			{"patchPrecondition", "applies only to strategy patch, not ssa"},
		}},
		{"ssa options on retry", strategiesDriven, func(s *Spec) {
			b := DefaultRetry
			s.Strategy, s.Backoff, s.FieldManager, s.Force = StrategyRetry, &b, ManagerShared, true
		}, []fieldErr{
			{"fieldManager", "applies only to strategy ssa, not retry"},
			{"force", "applies only to strategy ssa, not retry"},
		}},
		{"unknown patch type", strategiesDriven, func(s *Spec) { s.Strategy, s.PatchType = StrategyPatch, "xml" },
			[]fieldErr{{"patchType", `supported values: "merge", "strategic", "json" (--patch-type)`}}},
		{"json patch precondition", strategiesDriven, func(s *Spec) { s.Strategy, s.PatchType, s.PatchPrecondition = StrategyPatch, PatchJSON, true },
			[]fieldErr{{"patchPrecondition", "a json patch already carries a test op: drop --patch-precondition"}}},
		{"strategic patch precondition", strategiesDriven, func(s *Spec) {
			s.Strategy, s.PatchType, s.PatchPrecondition = StrategyPatch, PatchStrategic, true
		}, nil},
		{"unknown field manager", strategiesDriven, func(s *Spec) { s.Strategy, s.FieldManager = StrategySSA, "each" },
			[]fieldErr{{"fieldManager", `supported values: "per-writer", "shared" (--field-manager)`}}},

		// Traits: a scenario without strategies refuses every strategy
		// setting, so none is silently ignored.
		{"strategy without strategies", drivenOnly, func(s *Spec) { s.Strategy = StrategyUpdate },
			[]fieldErr{{"strategy", "strategy: Forbidden: this scenario has no write strategies: drop it"}}},
		{"every strategy setting without strategies", selfPaced, func(s *Spec) {
			b := DefaultRetry
			s.Strategy, s.Unconditional, s.Backoff, s.PatchType, s.PatchPrecondition, s.FieldManager, s.Force =
				StrategyRetry, true, &b, PatchMerge, true, ManagerShared, true
		}, []fieldErr{
			{"strategy", "no write strategies"},
			{"unconditional", "no write strategies"},
			{"backoff", "no write strategies"},
			{"patchType", "no write strategies"},
			{"patchPrecondition", "no write strategies"},
			{"fieldManager", "no write strategies"},
			{"force", "no write strategies"},
		}},

		// load: Traits refuse a loop's settings where there is no loop
		{"rate self-paced", selfPaced, func(s *Spec) { s.Rate = 10 },
			[]fieldErr{{"rate", "rate: Forbidden: this scenario paces its own requests (client-go's timers), so there is no loop to set: drop it"}}},
		{"think time self-paced", selfPaced, func(s *Spec) { s.ThinkTime = D(time.Millisecond) },
			[]fieldErr{{"thinkTime", "no loop to set"}}},
		{"max in flight self-paced", selfPaced, func(s *Spec) { s.Rate, s.MaxInFlight = 10, 2 },
			[]fieldErr{{"rate", "no loop to set"}, {"maxInFlight", "no loop to set"}}},
		{"rate without strategies", drivenOnly, func(s *Spec) { s.Rate, s.MaxInFlight = 10, 2 }, nil},
		{"rate with think time", strategiesDriven, func(s *Spec) { s.Rate, s.MaxInFlight, s.ThinkTime = 10, 1, D(time.Millisecond) },
			[]fieldErr{{"thinkTime", "an open loop (--rate) schedules arrivals itself: drop --think-time or --rate"}}},
		{"rate NaN", strategiesDriven, func(s *Spec) { s.Rate = math.NaN() },
			[]fieldErr{{"rate", "must be a finite number (--rate)"}}},
		{"rate infinite", strategiesDriven, func(s *Spec) { s.Rate, s.MaxInFlight = math.Inf(1), 1 },
			[]fieldErr{{"rate", "must be a finite number (--rate)"}}},
		{"rate negative", strategiesDriven, func(s *Spec) { s.Rate = -1 },
			[]fieldErr{{"rate", "use 0 for a closed loop or up to 1e+06 operations per second (--rate)"}}},
		{"rate too high", strategiesDriven, func(s *Spec) { s.Rate, s.MaxInFlight = MaxRate*2, 1 },
			[]fieldErr{{"rate", "up to 1e+06 operations per second"}}},
		{"highest rate", strategiesDriven, func(s *Spec) { s.Rate, s.MaxInFlight = MaxRate, 1 }, nil},
		{"max in flight closed loop", strategiesDriven, func(s *Spec) { s.MaxInFlight = 4 },
			[]fieldErr{{"maxInFlight", "applies only to an open loop: set --rate or drop --max-in-flight"}}},
		{"max in flight too many", strategiesDriven, func(s *Spec) { s.Rate, s.MaxInFlight = 10, MaxWriters+1 },
			[]fieldErr{{"maxInFlight", "use 1 to 100000 (--max-in-flight)"}}},
		{"negative durations", strategiesDriven, func(s *Spec) { s.ThinkTime, s.Warmup = D(-time.Second), D(-time.Second) },
			[]fieldErr{{"thinkTime", `Invalid value: "-1s": cannot be negative`}, {"warmup", "cannot be negative"}}},
		{"negative duration", strategiesDriven, func(s *Spec) { s.Duration = D(-time.Second) },
			[]fieldErr{{"duration", "cannot be negative"}}},
		{"negative operations", strategiesDriven, func(s *Spec) { s.Operations = -1 },
			[]fieldErr{{"operations", "use 0 for no bound or a positive count (--operations)"}}},
		{"no bound", strategiesDriven, func(s *Spec) { s.Duration = Duration{} },
			[]fieldErr{{"duration", "duration: Required value: the run has no bound: set --duration or --operations"}}},
		{"operations only", strategiesDriven, func(s *Spec) { s.Duration, s.Operations = Duration{}, 10 }, nil},
		{"op timeout too short", strategiesDriven, func(s *Spec) { s.OpTimeout = D(time.Microsecond) },
			[]fieldErr{{"opTimeout", "use at least 1ms, e.g. 10s (--op-timeout)"}}},

		// client
		{"qps without burst", strategiesDriven, func(s *Spec) { s.Client.QPS = 5 },
			[]fieldErr{{"client.burst", "client.burst: Invalid value: 0: a client-side limit (--qps) needs --burst of at least 1"}}},
		{"negative burst", strategiesDriven, func(s *Spec) { s.Client.Burst = -1 },
			[]fieldErr{{"client.burst", "cannot be negative (--burst)"}}},
		{"qps NaN", strategiesDriven, func(s *Spec) { s.Client.QPS = float32(math.NaN()) },
			[]fieldErr{{"client.qps", "must be a finite number (--qps)"}}},
		{"unknown content type", strategiesDriven, func(s *Spec) { s.Client.ContentType = "yaml" },
			[]fieldErr{{"client.contentType", `supported values: "default", "json", "protobuf", "cbor" (--content-type)`}}},

		// where writers read, and the watchers
		{"reads from an informer with watchers", reads, func(s *Spec) { s.Read, s.Watchers = ReadInformer, 64 }, nil},
		{"unknown read source", reads, func(s *Spec) { s.Read = "lister" },
			[]fieldErr{{"read", `supported values: "get", "cache", "informer" (--read)`}}},
		{"too many watchers", reads, func(s *Spec) { s.Watchers = MaxWatchers + 1 },
			[]fieldErr{{"watchers", "use 0 (none) to 1000 (--watchers)"}}},
		{"a cache read in a scenario that reads with GET", strategiesDriven, func(s *Spec) { s.Read = ReadCache },
			[]fieldErr{{"read", "this scenario's writers read only with a live GET: drop --read"}}},
		{"get said in a scenario that reads with GET", strategiesDriven, func(s *Spec) { s.Read = ReadGet }, nil},
		{"watchers in a scenario without", selfPaced, func(s *Spec) { s.Watchers = 1 },
			[]fieldErr{{"watchers", "drop --watchers"}}},
		{"informer reads in shards", reads, func(s *Spec) { s.Read, s.Shards, s.Runner = ReadInformer, 2, RunnerProcess },
			[]fieldErr{{"shards", "drop --shards, or read with get and drop --watchers"}}},
		{"get reads in shards", reads, func(s *Spec) { s.Shards, s.Runner = 2, RunnerProcess }, nil},

		// target
		{"unknown target", strategiesDriven, func(s *Spec) { s.Target = Target{Kind: "cloud"} },
			[]fieldErr{{"target.kind", `supported values: "local", "kubeconfig", "kind" (--target)`}}},
		{"kubeconfig unnamed", strategiesDriven, func(s *Spec) { s.Target = Target{Kind: TargetKubeconfig} },
			[]fieldErr{{"target.kubeconfig", "pass --kubeconfig PATH and/or --context NAME"}}},
		{"context only", strategiesDriven, func(s *Spec) { s.Target = Target{Kind: TargetKubeconfig, Context: "staging"} }, nil},
		{"storage for kind", strategiesDriven, func(s *Spec) { s.Target = Target{Kind: TargetKindCluster, Storage: StorageMemory} },
			[]fieldErr{{"target.storage", "target.storage: Forbidden: applies only to the local control plane: drop --storage"}}},
		{"unknown storage", strategiesDriven, func(s *Spec) { s.Target.Storage = "tmpfs" },
			[]fieldErr{{"target.storage", `supported values: "disk", "memory" (--storage)`}}},

		// Each part validates itself: one bad field in each is one error
		// at each path.
		{"one error per part", strategiesDriven, func(s *Spec) {
			s.Writers, s.Strategy, s.OpTimeout, s.Client.Burst, s.Target.Storage = 0, "put", Duration{}, -1, "tmpfs"
		}, []fieldErr{
			{"writers", "(--writers)"},
			{"strategy", "(--strategy)"},
			{"opTimeout", "(--op-timeout)"},
			{"client.burst", "(--burst)"},
			{"target.storage", "(--storage)"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := defaulted(tt.traits)
			tt.edit(&s)
			checkErrs(t, s.Validate(tt.traits), tt.want)
		})
	}
}

// Validate reports the parts in a fixed order (the order of a profile's
// spec), so messages read the same from run to run.
func TestValidateOrder(t *testing.T) {
	s := defaulted(strategiesDriven)
	s.Writers, s.Strategy, s.Rate, s.Client.Burst, s.Target = -1, "put", -1, -1, Target{Kind: "cloud"}
	var got []string
	for _, e := range s.Validate(strategiesDriven) {
		got = append(got, e.Field)
	}
	want := []string{"writers", "strategy", "rate", "client.burst", "target.kind"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("error paths %v, want %v", got, want)
	}
}

func TestOneOf(t *testing.T) {
	p := field.NewPath("client", "contentType")
	for _, c := range ContentTypes {
		if errs := OneOf(p, c, ContentTypes, "content-type"); errs != nil {
			t.Errorf("OneOf refuses %q: %v", c, errs)
		}
	}
	errs := OneOf(p, ContentType("xml"), ContentTypes, "content-type")
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeNotSupported || errs[0].Field != "client.contentType" {
		t.Fatalf("got %v, want one not-supported error at client.contentType", errs)
	}
	want := `client.contentType: Unsupported value: "xml": supported values: "default", "json", "protobuf", "cbor" (--content-type)`
	if got := errs[0].Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// Every enum's list holds every value, so OneOf never refuses one.
	for _, ok := range []bool{
		len(Strategies) == 4 && OneOf(p, StrategySSA, Strategies, "x") == nil,
		len(PatchTypes) == 3 && OneOf(p, PatchStrategic, PatchTypes, "x") == nil,
		len(FieldManagerModes) == 2 && OneOf(p, ManagerShared, FieldManagerModes, "x") == nil,
		len(TargetKinds) == 3 && OneOf(p, TargetKindCluster, TargetKinds, "x") == nil,
		len(Storages) == 2 && OneOf(p, StorageMemory, Storages, "x") == nil,
	} {
		if !ok {
			t.Errorf("an enum list is missing a value")
		}
	}
}

func TestDescribe(t *testing.T) {
	if got := Describe(nil); got != "" {
		t.Errorf("Describe(nil) = %q, want empty", got)
	}
	errs := field.ErrorList{
		field.Invalid(field.NewPath("writers"), -1, "use 1 to 100000 (--writers)"),
		field.Forbidden(field.NewPath("settings", "zipfExponent"), "applies only to distribution zipf"),
	}
	want := "writers: Invalid value: -1: use 1 to 100000 (--writers)\n" +
		"settings.zipfExponent: Forbidden: applies only to distribution zipf"
	if got := Describe(errs); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseBackoff(t *testing.T) {
	tests := []struct {
		in      string
		want    Backoff
		wantErr string // part of the error; "" means valid
	}{
		{"default-retry", DefaultRetry, ""},
		{"default-backoff", DefaultBackoff, ""},
		{"10,5ms,1.5,0.2", Backoff{Steps: 10, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 0.2}, ""},
		{" 3 , 1s , 2 , 0 ", Backoff{Steps: 3, Duration: time.Second, Factor: 2}, ""},
		// The same numbers as default-retry are not the named schedule:
		// they are written back as numbers, as given.
		{"5,10ms,1,0.1", Backoff{Steps: 5, Duration: 10 * time.Millisecond, Factor: 1, Jitter: 0.1}, ""},
		{"0,5ms,1,0", Backoff{}, "STEPS must be a whole number >= 1"},
		{"3,x,1,0", Backoff{}, "DURATION must be a duration such as 10ms"},
		{"3,-1ms,1,0", Backoff{}, "DURATION must be a duration"},
		{"3,5ms,-1,0", Backoff{}, "FACTOR must be a number >= 0"},
		{"3,5ms,NaN,0", Backoff{}, "FACTOR must be a number >= 0"},
		{"3,5ms,1,Inf", Backoff{}, "JITTER must be a number >= 0"},
		{"3,5ms,1", Backoff{}, `"3,5ms,1" is not a backoff: use default-retry, default-backoff or STEPS,DURATION,FACTOR,JITTER such as 10,5ms,1.5,0.1`},
		{"fast", Backoff{}, `"fast" is not a backoff`},
		{"", Backoff{}, `"" is not a backoff`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBackoff(tt.in)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("got %+v, want an error saying %q", got, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not say %q", err, tt.wantErr)
			case got != tt.want:
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A backoff is parsed once, where it is read, and written back the way it
// was given, so a result records what the user asked for and reads back to
// the same schedule: as text, in JSON and in YAML.
func TestBackoffRoundTrip(t *testing.T) {
	tests := []struct{ in, text string }{
		{"default-retry", "default-retry"},
		{"default-backoff", "default-backoff"},
		{"10,5ms,1.5,0.1", "10,5ms,1.5,0.1"},
		{"5,10ms,1,0.1", "5,10ms,1,0.1"},
		{" 3 , 1.5s , 2 , 0 ", "3,1.5s,2,0"},
		{"1,0s,0,1e-07", "1,0s,0,1e-07"},
	}
	type doc struct {
		Backoff *Backoff `json:"backoff,omitempty" yaml:"backoff,omitempty"`
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			b, err := ParseBackoff(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.text {
				t.Errorf("String() = %q, want %q", got, tt.text)
			}
			if again, err := ParseBackoff(b.String()); err != nil || again != b {
				t.Errorf("String() %q parses to %+v (%v), want %+v", b.String(), again, err, b)
			}

			j, err := json.Marshal(doc{&b})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"backoff":"` + tt.text + `"}`; string(j) != want {
				t.Errorf("JSON %s, want %s", j, want)
			}
			var fromJSON doc
			if err := json.Unmarshal(j, &fromJSON); err != nil || fromJSON.Backoff == nil || *fromJSON.Backoff != b {
				t.Errorf("JSON %s reads back as %v (%v), want %+v", j, fromJSON.Backoff, err, b)
			}

			y, err := yaml.Marshal(doc{&b})
			if err != nil {
				t.Fatal(err)
			}
			var fromYAML doc
			if err := yaml.Unmarshal(y, &fromYAML); err != nil || fromYAML.Backoff == nil || *fromYAML.Backoff != b {
				t.Errorf("YAML %q reads back as %v (%v), want %+v", y, fromYAML.Backoff, err, b)
			}
			if !strings.Contains(string(y), tt.text) {
				t.Errorf("YAML %q does not hold the backoff as given, %q", y, tt.text)
			}
		})
	}

	// A bad backoff fails where it is read, with the parser's message; a
	// backoff that is not there stays nil.
	for _, in := range []string{`{"backoff":"3,x,1,0"}`, `{"backoff":5}`, `{"backoff":"fast"}`} {
		var d doc
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("JSON %s read as %v, want an error", in, d.Backoff)
		}
	}
	var d doc
	if err := yaml.Unmarshal([]byte("backoff: 3,x,1,0\n"), &d); err == nil || !strings.Contains(err.Error(), "DURATION must be a duration") {
		t.Errorf("YAML with a bad backoff: got %v, want the parser's error", err)
	}
	d = doc{}
	if err := json.Unmarshal([]byte(`{}`), &d); err != nil || d.Backoff != nil {
		t.Errorf("no backoff read as %v (%v), want nil", d.Backoff, err)
	}
	if j, _ := json.Marshal(doc{}); string(j) != `{}` {
		t.Errorf("no backoff written as %s, want it left out", j)
	}
}

// A Spec reads back from its JSON (as a result records it) unchanged,
// with the typed values and the scenario's settings as plain data.
func TestSpecJSONRoundTrip(t *testing.T) {
	b, err := ParseBackoff("10,5ms,1.5,0.1")
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Scenario: "counter", Strategy: StrategyRetry, Backoff: &b, Settings: map[string]any{"objects": 3.0, "distribution": "zipf"}}
	s.Defaults(strategiesDriven)
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"strategy":"retry"`, `"backoff":"10,5ms,1.5,0.1"`, `"duration":"10s"`, `"settings":{"distribution":"zipf","objects":3}`, `"contentType":"default"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON %s does not hold %s", data, want)
		}
	}
	var back Spec
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Backoff == nil || *back.Backoff != b || back.Strategy != s.Strategy || back.Duration != s.Duration ||
		back.Client != s.Client || back.Target != s.Target || back.Settings["objects"] != 3.0 || back.Settings["distribution"] != "zipf" {
		t.Errorf("read back\n%+v\nwant\n%+v", back, s)
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(struct{ D Duration }{D(1500 * time.Millisecond)})
	if err != nil || string(b) != `{"D":"1.5s"}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var v struct{ D Duration }
	if err := json.Unmarshal([]byte(`{"D":"2m"}`), &v); err != nil || v.D.Duration != 2*time.Minute {
		t.Fatalf("unmarshal: %v %v", v.D, err)
	}
	if err := json.Unmarshal([]byte(`{"D":1000}`), &v); err != nil || v.D.Duration != time.Microsecond {
		t.Fatalf("unmarshal nanoseconds: %v %v", v.D, err)
	}
	err = json.Unmarshal([]byte(`{"D":"soon"}`), &v)
	if err == nil || !strings.Contains(err.Error(), `"soon" is not a duration (use e.g. 500ms, 10s, 2m)`) {
		t.Fatalf("invalid duration: got %v, want an error saying how to write one", err)
	}
	if err := json.Unmarshal([]byte(`{"D":true}`), &v); err == nil || !strings.Contains(err.Error(), `duration must be a string such as "10s"`) {
		t.Fatalf("a duration of the wrong type: got %v", err)
	}
}

func TestDurationYAML(t *testing.T) {
	var v struct {
		D Duration `yaml:"d"`
	}
	if err := yaml.Unmarshal([]byte("d: 1m30s\n"), &v); err != nil || v.D.Duration != 90*time.Second {
		t.Fatalf("unmarshal: %v %v", v.D, err)
	}
	out, err := yaml.Marshal(v)
	if err != nil || string(out) != "d: 1m30s\n" {
		t.Fatalf("marshal: %q %v", out, err)
	}
	if err := yaml.Unmarshal([]byte("d: 10\n"), &v); err == nil || !strings.Contains(err.Error(), `"10" is not a duration`) {
		t.Fatalf("a bare number: got %v, want an error", err)
	}
}

func TestInputError(t *testing.T) {
	if IsInput(nil) || Input(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	err := Input(errFake("bad flag"))
	if !IsInput(err) || err.Error() != "bad flag" {
		t.Fatalf("got %v", err)
	}
}

type errFake string

func (e errFake) Error() string { return string(e) }
