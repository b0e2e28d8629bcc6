package app

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kb-bench/kb-bench/spec"
)

// specFlags binds the run flags to a spec.Spec. A profile gives the base
// spec; only the flags the user actually set override it (apply), so the
// resolved spec is the profile plus the command line, then Defaults.
type specFlags struct {
	v        spec.Spec
	bindings []binding
}

// binding copies one flag's value from the flag-backed spec to the base.
type binding struct {
	name string
	copy func(dst, src *spec.Spec)
}

func (f *specFlags) bind(name string, copy func(dst, src *spec.Spec)) {
	f.bindings = append(f.bindings, binding{name, copy})
}

// duration registers a spec.Duration flag.
func durationVar(fs *pflag.FlagSet, p *spec.Duration, name, usage string) {
	fs.Var((*durationValue)(p), name, usage)
}

type durationValue spec.Duration

func (d *durationValue) String() string {
	if d.Duration == 0 {
		return "0s"
	}
	return d.Duration.String()
}
func (d *durationValue) Type() string { return "duration" }
func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (use e.g. 500ms, 10s, 2m)", s)
	}
	d.Duration = v
	return nil
}

// register adds every spec flag to fs. Leader-election, quota and
// controller sub-specs are allocated so their flags have somewhere to land.
func (f *specFlags) register(fs *pflag.FlagSet) {
	v := &f.v
	v.LeaderElection = &spec.LeaderElection{}
	v.Quota = &spec.Quota{}
	v.Controller = &spec.Controller{}

	fs.StringVar(&v.Scenario, "scenario", "", "what the writers do: counter (default), leader-election, quota, controller-status")
	f.bind("scenario", func(d, s *spec.Spec) { d.Scenario = s.Scenario })

	// Contention shape.
	fs.IntVar(&v.Writers, "writers", 0, fmt.Sprintf("concurrent writers (default %d)", spec.DefaultWriters))
	f.bind("writers", func(d, s *spec.Spec) { d.Writers = s.Writers })
	fs.IntVar(&v.Objects, "objects", 0, "shared objects created before the run (default 1)")
	f.bind("objects", func(d, s *spec.Spec) { d.Objects = s.Objects })
	fs.IntVar(&v.ObjectSize, "object-size", 0, "bytes of filler in each object, so writes cost what real objects cost")
	f.bind("object-size", func(d, s *spec.Spec) { d.ObjectSize = s.ObjectSize })
	fs.StringVar(&v.Distribution.Kind, "distribution", "", "which object an operation hits: uniform (default), zipf, hotspot")
	f.bind("distribution", func(d, s *spec.Spec) { d.Distribution.Kind = s.Distribution.Kind })
	fs.Float64Var(&v.Distribution.ZipfExponent, "zipf-exponent", 0, "zipf exponent s > 1 (default 1.1)")
	f.bind("zipf-exponent", func(d, s *spec.Spec) { d.Distribution.ZipfExponent = s.Distribution.ZipfExponent })
	fs.Float64Var(&v.Distribution.HotFraction, "hot-fraction", 0, "hotspot: fraction of objects that are hot (default 0.1)")
	f.bind("hot-fraction", func(d, s *spec.Spec) { d.Distribution.HotFraction = s.Distribution.HotFraction })
	fs.Float64Var(&v.Distribution.HotShare, "hot-share", 0, "hotspot: share of traffic to hot objects (default 0.9)")
	f.bind("hot-share", func(d, s *spec.Spec) { d.Distribution.HotShare = s.Distribution.HotShare })
	fs.IntVar(&v.WritersPerObject, "writers-per-object", 0, "pin fixed groups of K writers to each object instead of a distribution")
	f.bind("writers-per-object", func(d, s *spec.Spec) { d.WritersPerObject = s.WritersPerObject })
	fs.StringVar(&v.Fields, "fields", "", "shared (default: all writers increment one counter) or disjoint (each writer owns a field)")
	f.bind("fields", func(d, s *spec.Spec) { d.Fields = s.Fields })
	fs.IntVar(&v.Clients, "clients", 0, "separate client-go clients (connections) the writers are spread over (default 1)")
	f.bind("clients", func(d, s *spec.Spec) { d.Clients = s.Clients })

	// Strategy.
	fs.StringVar(&v.Strategy, "strategy", "", "update (default), retry, patch, ssa")
	f.bind("strategy", func(d, s *spec.Spec) { d.Strategy = s.Strategy })
	fs.BoolVar(&v.Unconditional, "unconditional", false, "update: PUT without resourceVersion (last write wins; shows lost updates)")
	f.bind("unconditional", func(d, s *spec.Spec) { d.Unconditional = s.Unconditional })
	fs.StringVar(&v.Backoff, "backoff", "", "retry: default-retry (default), default-backoff or STEPS,DURATION,FACTOR,JITTER")
	f.bind("backoff", func(d, s *spec.Spec) { d.Backoff = s.Backoff })
	fs.StringVar(&v.PatchType, "patch-type", "", "patch: merge (default), strategic, json (a test+replace compare-and-swap)")
	f.bind("patch-type", func(d, s *spec.Spec) { d.PatchType = s.PatchType })
	fs.BoolVar(&v.PatchPrecondition, "patch-precondition", false, "patch: carry metadata.resourceVersion (optimistic lock, 409 on stale)")
	f.bind("patch-precondition", func(d, s *spec.Spec) { d.PatchPrecondition = s.PatchPrecondition })
	fs.StringVar(&v.FieldManager, "field-manager", "", "ssa: per-writer (default) or shared")
	f.bind("field-manager", func(d, s *spec.Spec) { d.FieldManager = s.FieldManager })
	fs.BoolVar(&v.Force, "force", false, "ssa: force field ownership on conflicts")
	f.bind("force", func(d, s *spec.Spec) { d.Force = s.Force })

	// Load model and bounds.
	fs.Float64Var(&v.Rate, "rate", 0, "open loop: operations per second in total (0: closed loop)")
	f.bind("rate", func(d, s *spec.Spec) { d.Rate = s.Rate })
	fs.IntVar(&v.MaxInFlight, "max-in-flight", 0, "open loop: most operations in flight (default: writers)")
	f.bind("max-in-flight", func(d, s *spec.Spec) { d.MaxInFlight = s.MaxInFlight })
	durationVar(fs, &v.ThinkTime, "think-time", "closed loop: pause between a writer's operations")
	f.bind("think-time", func(d, s *spec.Spec) { d.ThinkTime = s.ThinkTime })
	durationVar(fs, &v.Duration, "duration", "measured duration, after the warm-up (default 10s)")
	f.bind("duration", func(d, s *spec.Spec) { d.Duration = s.Duration })
	fs.Int64Var(&v.Operations, "operations", 0, "stop after this many measured operations (0: no bound)")
	f.bind("operations", func(d, s *spec.Spec) { d.Operations = s.Operations })
	durationVar(fs, &v.Warmup, "warmup", "run this long first and leave it out of the figures")
	f.bind("warmup", func(d, s *spec.Spec) { d.Warmup = s.Warmup })
	durationVar(fs, &v.OpTimeout, "op-timeout", "bound on one operation, retries included (default 10s)")
	f.bind("op-timeout", func(d, s *spec.Spec) { d.OpTimeout = s.OpTimeout })

	// Client.
	fs.Float32Var(&v.Client.QPS, "qps", 0, "client-side QPS limit per client (default: no client-side limit)")
	f.bind("qps", func(d, s *spec.Spec) { d.Client.QPS = s.Client.QPS })
	fs.IntVar(&v.Client.Burst, "burst", 0, "client-side burst per client")
	f.bind("burst", func(d, s *spec.Spec) { d.Client.Burst = s.Client.Burst })
	fs.StringVar(&v.Client.ContentType, "content-type", "", "json (default) or protobuf")
	f.bind("content-type", func(d, s *spec.Spec) { d.Client.ContentType = s.Client.ContentType })
	fs.StringVar(&v.Client.UserAgent, "user-agent", "", "user agent (default kb-bench/<version>)")
	f.bind("user-agent", func(d, s *spec.Spec) { d.Client.UserAgent = s.Client.UserAgent })

	// Target.
	fs.StringVar(&v.Target.Kind, "target", "", "local (default: a real local control plane), kubeconfig, kind")
	f.bind("target", func(d, s *spec.Spec) { d.Target.Kind = s.Target.Kind })
	fs.StringVar(&v.Target.Kubeconfig, "kubeconfig", "", "run against the existing cluster in this kubeconfig (never used unless given)")
	f.bind("kubeconfig", func(d, s *spec.Spec) { d.Target.Kubeconfig = s.Target.Kubeconfig })
	fs.StringVar(&v.Target.Context, "context", "", "kubeconfig context to use; alone, a context of $KUBECONFIG or ~/.kube/config")
	f.bind("context", func(d, s *spec.Spec) { d.Target.Context = s.Target.Context })
	fs.StringVar(&v.Target.KindCluster, "kind-cluster", "", "kind cluster name for --target kind (default kind)")
	f.bind("kind-cluster", func(d, s *spec.Spec) { d.Target.KindCluster = s.Target.KindCluster })
	fs.StringVar(&v.Target.Storage, "storage", "", "local control plane etcd storage: disk (default) or memory (/dev/shm)")
	f.bind("storage", func(d, s *spec.Spec) { d.Target.Storage = s.Target.Storage })
	fs.StringVar(&v.Target.ControlPlaneBin, "control-plane-bin", "", "directory holding kube-apiserver and etcd")
	f.bind("control-plane-bin", func(d, s *spec.Spec) { d.Target.ControlPlaneBin = s.Target.ControlPlaneBin })
	fs.BoolVar(&v.Keep, "keep", false, "keep the run's namespace instead of deleting it")
	f.bind("keep", func(d, s *spec.Spec) { d.Keep = s.Keep })

	// Scenarios.
	le := v.LeaderElection
	leader := func(d *spec.Spec) *spec.LeaderElection {
		if d.LeaderElection == nil {
			d.LeaderElection = &spec.LeaderElection{}
		}
		return d.LeaderElection
	}
	durationVar(fs, &le.LeaseDuration, "lease-duration", "leader-election: lease duration (default 4s)")
	f.bind("lease-duration", func(d, s *spec.Spec) { leader(d).LeaseDuration = s.LeaderElection.LeaseDuration })
	durationVar(fs, &le.RenewDeadline, "renew-deadline", "leader-election: renew deadline (default 3s)")
	f.bind("renew-deadline", func(d, s *spec.Spec) { leader(d).RenewDeadline = s.LeaderElection.RenewDeadline })
	durationVar(fs, &le.RetryPeriod, "retry-period", "leader-election: retry period (default 500ms)")
	f.bind("retry-period", func(d, s *spec.Spec) { leader(d).RetryPeriod = s.LeaderElection.RetryPeriod })
	durationVar(fs, &le.FailoverEvery, "failover-every", "leader-election: stop the leader this often and restart it as a candidate")
	f.bind("failover-every", func(d, s *spec.Spec) { leader(d).FailoverEvery = s.LeaderElection.FailoverEvery })
	fs.BoolVar(&le.ReleaseOnCancel, "release-on-cancel", false, "leader-election: a stopped leader releases the lease")
	f.bind("release-on-cancel", func(d, s *spec.Spec) { leader(d).ReleaseOnCancel = s.LeaderElection.ReleaseOnCancel })

	quota := func(d *spec.Spec) *spec.Quota {
		if d.Quota == nil {
			d.Quota = &spec.Quota{}
		}
		return d.Quota
	}
	fs.StringVar(&v.Quota.Resource, "quota-resource", "", "quota: count/configmaps (default) or requests.nvidia.com/gpu")
	f.bind("quota-resource", func(d, s *spec.Spec) { quota(d).Resource = s.Quota.Resource })
	fs.Int64Var(&v.Quota.Hard, "quota-hard", 0, "quota: the hard limit H (default 50)")
	f.bind("quota-hard", func(d, s *spec.Spec) { quota(d).Hard = s.Quota.Hard })

	ctrl := func(d *spec.Spec) *spec.Controller {
		if d.Controller == nil {
			d.Controller = &spec.Controller{}
		}
		return d.Controller
	}
	fs.IntVar(&v.Controller.Controllers, "controllers", 0, "controller-status: number of controllers (default 4)")
	f.bind("controllers", func(d, s *spec.Spec) { ctrl(d).Controllers = s.Controller.Controllers })
	fs.IntVar(&v.Controller.ObjectsPerController, "objects-per-controller", 0, "controller-status: objects each controller owns (default 10)")
	f.bind("objects-per-controller", func(d, s *spec.Spec) { ctrl(d).ObjectsPerController = s.Controller.ObjectsPerController })
	fs.IntVar(&v.Controller.SharedObjects, "shared-objects", 0, "controller-status: objects every controller writes (default 2)")
	f.bind("shared-objects", func(d, s *spec.Spec) { ctrl(d).SharedObjects = s.Controller.SharedObjects })
}

// apply copies every flag the user set onto base.
func (f *specFlags) apply(fs *pflag.FlagSet, base *spec.Spec) {
	for _, b := range f.bindings {
		if fs.Changed(b.name) {
			b.copy(base, &f.v)
		}
	}
}
