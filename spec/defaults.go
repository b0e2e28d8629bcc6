package spec

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Defaults used where a Spec leaves a field at its zero value.
const (
	DefaultWriters   = 8
	DefaultDuration  = 10 * time.Second
	DefaultOpTimeout = 10 * time.Second
	DefaultBackoff   = "default-retry"
)

// Default returns a fully defaulted counter Spec.
func Default() Spec {
	s := Spec{}
	s.Defaults()
	return s
}

// Defaults fills every zero-valued field that has a default. It never
// overrides a value that was set.
func (s *Spec) Defaults() {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&s.Scenario, ScenarioCounter)
	if s.Writers == 0 {
		s.Writers = DefaultWriters
	}
	if s.Objects == 0 {
		s.Objects = 1
	}
	def(&s.Distribution.Kind, DistUniform)
	if s.Distribution.Kind == DistZipf && s.Distribution.ZipfExponent == 0 {
		s.Distribution.ZipfExponent = 1.1
	}
	if s.Distribution.Kind == DistHotspot {
		if s.Distribution.HotFraction == 0 {
			s.Distribution.HotFraction = 0.1
		}
		if s.Distribution.HotShare == 0 {
			s.Distribution.HotShare = 0.9
		}
	}
	def(&s.Fields, FieldsShared)
	if s.Clients == 0 {
		s.Clients = 1
	}
	def(&s.Strategy, StrategyUpdate)
	switch s.Strategy {
	case StrategyRetry:
		def(&s.Backoff, DefaultBackoff)
	case StrategyPatch:
		def(&s.PatchType, PatchMerge)
	case StrategySSA:
		def(&s.FieldManager, ManagerPerWriter)
	}
	if s.Rate > 0 && s.MaxInFlight == 0 {
		s.MaxInFlight = s.Writers
	}
	if s.Duration.Duration == 0 && s.Operations == 0 {
		s.Duration = D(DefaultDuration)
	}
	if s.OpTimeout.Duration == 0 {
		s.OpTimeout = D(DefaultOpTimeout)
	}
	if s.Client.QPS == 0 {
		s.Client.QPS = -1 // no client-side limit, on purpose
	}
	def(&s.Client.ContentType, ContentJSON)
	def(&s.Target.Kind, TargetLocal)
	if s.Target.Kind == TargetLocal {
		def(&s.Target.Storage, StorageDisk)
	}
	switch s.Scenario {
	case ScenarioLeaderElection:
		if s.LeaderElection == nil {
			s.LeaderElection = &LeaderElection{}
		}
		le := s.LeaderElection
		if le.LeaseDuration.Duration == 0 {
			le.LeaseDuration = D(4 * time.Second)
		}
		if le.RenewDeadline.Duration == 0 {
			le.RenewDeadline = D(3 * time.Second)
		}
		if le.RetryPeriod.Duration == 0 {
			le.RetryPeriod = D(500 * time.Millisecond)
		}
	case ScenarioQuota:
		if s.Quota == nil {
			s.Quota = &Quota{}
		}
		if s.Quota.Resource == "" {
			s.Quota.Resource = "count/configmaps"
		}
		if s.Quota.Hard == 0 {
			s.Quota.Hard = 50
		}
	case ScenarioControllerStatus:
		if s.Controller == nil {
			s.Controller = &Controller{}
		}
		c := s.Controller
		if c.Controllers == 0 {
			c.Controllers = 4
		}
		if c.ObjectsPerController == 0 {
			c.ObjectsPerController = 10
		}
		if c.SharedObjects == 0 {
			c.SharedObjects = 2
		}
	}
}

// leaderJitterFactor is client-go's leaderelection.JitterFactor: the renew
// deadline must exceed it times the retry period.
const leaderJitterFactor = 1.2

// Validate checks a defaulted Spec and returns every problem found, each
// saying what to change. The names are the profile field and the flag.
func (s *Spec) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	oneOf := func(name, flag, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad("%s %q is not known (--%s): use one of %s", name, v, flag, strings.Join(allowed, ", "))
	}

	oneOf("scenario", "scenario", s.Scenario, ScenarioCounter, ScenarioLeaderElection, ScenarioQuota, ScenarioControllerStatus)
	// NaN and infinities pass every comparison below unnoticed.
	for _, f := range []struct {
		name, flag string
		v          float64
	}{
		{"rate", "rate", s.Rate},
		{"distribution.zipfExponent", "zipf-exponent", s.Distribution.ZipfExponent},
		{"distribution.hotFraction", "hot-fraction", s.Distribution.HotFraction},
		{"distribution.hotShare", "hot-share", s.Distribution.HotShare},
		{"client.qps", "qps", float64(s.Client.QPS)},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			bad("%s is %g (--%s): it must be a finite number", f.name, f.v, f.flag)
		}
	}
	if s.Writers < 1 {
		bad("writers is %d (--writers): it must be at least 1", s.Writers)
	}
	if s.Objects < 1 {
		bad("objects is %d (--objects): it must be at least 1", s.Objects)
	}
	if s.ObjectSize < 0 || s.ObjectSize > 900*1024 {
		bad("objectSize is %d (--object-size): use 0 to 921600 bytes (a ConfigMap holds at most 1 MiB)", s.ObjectSize)
	}
	oneOf("distribution.kind", "distribution", s.Distribution.Kind, DistUniform, DistZipf, DistHotspot)
	if s.Distribution.Kind == DistZipf && s.Distribution.ZipfExponent <= 1 {
		bad("distribution.zipfExponent is %g (--zipf-exponent): it must be greater than 1, e.g. 1.1", s.Distribution.ZipfExponent)
	}
	if s.Distribution.Kind == DistHotspot {
		if f := s.Distribution.HotFraction; f <= 0 || f >= 1 {
			bad("distribution.hotFraction is %g (--hot-fraction): use a fraction between 0 and 1, e.g. 0.1", f)
		}
		if f := s.Distribution.HotShare; f <= 0 || f > 1 {
			bad("distribution.hotShare is %g (--hot-share): use a fraction above 0 and at most 1, e.g. 0.9", f)
		}
	}
	if s.WritersPerObject < 0 {
		bad("writersPerObject is %d (--writers-per-object): it must be 0 (use the distribution) or at least 1", s.WritersPerObject)
	}
	if s.WritersPerObject > 0 && s.Distribution.Kind != DistUniform {
		bad("writersPerObject pins writers to objects, so distribution %q cannot apply: set one or the other", s.Distribution.Kind)
	}
	oneOf("fields", "fields", s.Fields, FieldsShared, FieldsDisjoint)
	if s.Writers >= 1 && (s.Clients < 1 || s.Clients > s.Writers) {
		bad("clients is %d (--clients): use 1 to the number of writers (%d)", s.Clients, s.Writers)
	}

	oneOf("strategy", "strategy", s.Strategy, StrategyUpdate, StrategyRetry, StrategyPatch, StrategySSA)
	if s.Unconditional && s.Strategy != StrategyUpdate {
		bad("unconditional applies only to strategy update, not %q: drop --unconditional", s.Strategy)
	}
	if s.Backoff != "" && s.Strategy != StrategyRetry {
		bad("backoff applies only to strategy retry, not %q: drop --backoff", s.Strategy)
	}
	if s.Strategy == StrategyRetry {
		if _, err := ParseBackoff(s.Backoff); err != nil {
			errs = append(errs, err)
		}
	}
	if s.PatchType != "" && s.Strategy != StrategyPatch {
		bad("patchType applies only to strategy patch, not %q: drop --patch-type", s.Strategy)
	}
	if s.Strategy == StrategyPatch {
		oneOf("patchType", "patch-type", s.PatchType, PatchMerge, PatchStrategic, PatchJSON)
		if s.PatchPrecondition && s.PatchType == PatchJSON {
			bad("patchPrecondition is for merge and strategic patches; a json patch already carries a test op: drop --patch-precondition")
		}
	}
	if s.PatchPrecondition && s.Strategy != StrategyPatch {
		bad("patchPrecondition applies only to strategy patch: drop --patch-precondition")
	}
	if s.FieldManager != "" && s.Strategy != StrategySSA {
		bad("fieldManager applies only to strategy ssa, not %q: drop --field-manager", s.Strategy)
	}
	if s.Strategy == StrategySSA {
		oneOf("fieldManager", "field-manager", s.FieldManager, ManagerPerWriter, ManagerShared)
	}
	if s.Force && s.Strategy != StrategySSA {
		bad("force applies only to strategy ssa: drop --force")
	}

	if s.Rate < 0 {
		bad("rate is %g (--rate): use 0 for a closed loop or a positive number of operations per second", s.Rate)
	}
	if s.Rate > 0 && s.ThinkTime.Duration > 0 {
		bad("rate and thinkTime both set: an open loop (--rate) schedules arrivals itself; drop --think-time or --rate")
	}
	if s.Rate == 0 && s.MaxInFlight != 0 {
		bad("maxInFlight applies only to an open loop: set --rate or drop --max-in-flight")
	}
	if s.MaxInFlight < 0 {
		bad("maxInFlight is %d (--max-in-flight): it must be at least 1", s.MaxInFlight)
	}
	if s.ThinkTime.Duration < 0 {
		bad("thinkTime is %s (--think-time): it cannot be negative", s.ThinkTime)
	}
	if s.Duration.Duration < 0 || s.Warmup.Duration < 0 {
		bad("duration and warmup cannot be negative")
	}
	if s.Operations < 0 {
		bad("operations is %d (--operations): use 0 for no bound or a positive count", s.Operations)
	}
	if s.Duration.Duration == 0 && s.Operations == 0 {
		bad("the run has no bound: set --duration or --operations")
	}
	if s.OpTimeout.Duration <= 0 {
		bad("opTimeout is %s (--op-timeout): it must be positive, e.g. 10s", s.OpTimeout)
	}

	if s.Client.Burst < 0 {
		bad("client.burst is %d (--burst): it cannot be negative", s.Client.Burst)
	}
	if s.Client.QPS > 0 && s.Client.Burst < 1 {
		bad("client.qps is %g but client.burst is %d: a client-side limit needs --burst of at least 1", s.Client.QPS, s.Client.Burst)
	}
	oneOf("client.contentType", "content-type", s.Client.ContentType, ContentJSON, ContentProtobuf)

	oneOf("target.kind", "target", s.Target.Kind, TargetLocal, TargetKind, TargetKubeconfig)
	if s.Target.Kind == TargetKubeconfig && s.Target.Kubeconfig == "" && s.Target.Context == "" {
		bad("target kubeconfig needs the cluster named: pass --kubeconfig PATH and/or --context NAME")
	}
	if s.Target.Kind == TargetLocal {
		oneOf("target.storage", "storage", s.Target.Storage, StorageDisk, StorageMemory)
	} else if s.Target.Storage != "" {
		bad("target.storage applies only to the local control plane: drop --storage")
	}

	if s.Scenario == ScenarioLeaderElection && s.LeaderElection != nil {
		le := s.LeaderElection
		// client-go's rules, plus one of the Lease's: it records the lease
		// duration in whole seconds, and followers wait that long.
		recorded := le.LeaseDuration.Truncate(time.Second)
		switch {
		case le.LeaseDuration.Duration < time.Second:
			bad("leaderElection.leaseDuration is %s: the Lease records whole seconds, so use at least 1s (--lease-duration)", le.LeaseDuration)
		case recorded <= le.RenewDeadline.Duration:
			bad("leaderElection.leaseDuration %s is recorded as %s in the Lease, which is not longer than renewDeadline %s: raise --lease-duration or lower --renew-deadline",
				le.LeaseDuration, recorded, le.RenewDeadline)
		case le.RetryPeriod.Duration <= 0 || float64(le.RenewDeadline.Duration) <= leaderJitterFactor*float64(le.RetryPeriod.Duration):
			bad("leaderElection.renewDeadline %s must be longer than %g x retryPeriod %s (client-go's rule): lower --retry-period or raise --renew-deadline",
				le.RenewDeadline, leaderJitterFactor, le.RetryPeriod)
		}
		if le.FailoverEvery.Duration < 0 {
			bad("leaderElection.failoverEvery cannot be negative")
		}
	}
	if s.Scenario == ScenarioQuota && s.Quota != nil {
		if s.Quota.Hard < 1 {
			bad("quota.hard is %d: it must be at least 1", s.Quota.Hard)
		}
		if s.Quota.Resource != "count/configmaps" && s.Quota.Resource != "requests.nvidia.com/gpu" {
			bad("quota.resource %q is not supported: use count/configmaps or requests.nvidia.com/gpu", s.Quota.Resource)
		}
	}
	if s.Scenario == ScenarioControllerStatus && s.Controller != nil {
		c := s.Controller
		if c.Controllers < 1 || c.ObjectsPerController < 0 || c.SharedObjects < 0 || c.ObjectsPerController+c.SharedObjects < 1 {
			bad("controller needs controllers >= 1 and at least one object (objectsPerController + sharedObjects)")
		}
	}
	return errors.Join(errs...)
}
