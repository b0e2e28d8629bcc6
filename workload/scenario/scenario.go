// Package scenario is the contract between kb-bench's engine (package
// workload) and the scenarios it runs: counter, leader election, quota,
// controller status. The engine owns everything scenarios share (the
// namespace, the clients and their request counts, the warm-up, the
// measured window, the recorder and its per-second series, the /metrics
// cross-check and the Result); a scenario owns its settings, its objects,
// its operations and its verdicts.
//
// Adding a scenario is one new package plus one line in the registry
// (workload/registry.go):
//
//  1. Declare a Definition: name, one-line description, whether its
//     writers take a write strategy, its own Settings type (a struct
//     whose fields carry `json`, `flag` and `help` tags; flags and profile
//     fields follow from those tags), and its constructor, which says how
//     it runs: Driven, Sharded or Continuous.
//  2. Implement Scenario and the interface its constructor returns
//     (Driven, Sharded or Continuous); Finish returns a Report: its
//     checks and its own figures as data (results.Figure), which the
//     Result keeps and every reader renders without the scenario's code.
//  3. Measure every operation with its worker's Measurer (Env.Measurer),
//     or record the requests the scenario times itself (RecordRequest),
//     and send the load only through Env.Clients, whose requests the
//     server cross-check counts.
//
// The registry test runs every registered scenario briefly on the local
// control plane and checks its server cross-check, so a new scenario is
// tested end to end by adding its line.
package scenario

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// Definition is a scenario as the registry knows it.
type Definition struct {
	// Name is what --scenario and a profile's spec.scenario say.
	Name string
	// Description is one line for 'kb-bench scenarios' and help text.
	Description string
	// Strategies says the writers write with a Strategy and its options.
	Strategies bool
	// Reads says the writers read before they write, from Spec.Read,
	// and the scenario measures Spec.Watchers.
	Reads bool
	// NewSettings returns the scenario's settings at their zero values: a
	// pointer to a struct with `json`, `flag` and `help` tags on each field
	// (flat: no nested structs).
	NewSettings func() Settings
	// Exactly one of Driven, Sharded and Continuous builds the scenario
	// for one run: which one is how it runs, and so which shared settings
	// it takes (Traits). settings is NewSettings' type, decoded from the
	// spec, defaulted and validated.
	Driven     func(env *Env, settings Settings) Driven
	Sharded    func(env *Env, settings Settings) Sharded
	Continuous func(env *Env, settings Settings) Continuous
	// ServerResources are resources ("resourcequotas", "pods/status")
	// whose requests the server cross-check reports even when kb-bench's
	// clients did not send them: what the apiserver did on its own behalf,
	// such as quota admission updating the ResourceQuota's status.
	ServerResources []string
	// Rules are the permissions the scenario needs in the run's namespace
	// with these settings: what it reads and writes (the engine adds
	// deleting the kinds it creates). They make `kb-bench rbac`'s Role.
	Rules func(settings Settings) []rbacv1.PolicyRule
	// ClusterRules are the cluster-wide permissions a run of s with
	// these settings needs beside Rules (nil: none): what it installs
	// and removes, such as a CRD. They make `kb-bench rbac`'s ClusterRole.
	ClusterRules func(settings Settings, s spec.Spec) []rbacv1.PolicyRule
}

// Traits are the shared settings the scenario takes, which follow from
// how it runs.
func (d Definition) Traits() spec.Traits {
	return spec.Traits{Strategies: d.Strategies, Driven: d.Driven != nil || d.Sharded != nil, Shardable: d.Sharded != nil, Reads: d.Reads}
}

// Instance is one run of a scenario as the engine drives it: Driven or
// Continuous is set, and Sharded too when it runs in shards.
type Instance struct {
	Scenario
	Driven     Driven
	Sharded    Sharded
	Continuous Continuous
}

// New builds the scenario for one run.
func (d Definition) New(env *Env, settings Settings) Instance {
	switch {
	case d.Sharded != nil:
		s := d.Sharded(env, settings)
		return Instance{Scenario: s, Driven: s, Sharded: s}
	case d.Driven != nil:
		s := d.Driven(env, settings)
		return Instance{Scenario: s, Driven: s}
	}
	s := d.Continuous(env, settings)
	return Instance{Scenario: s, Continuous: s}
}

// Settings are a scenario's own settings.
type Settings interface {
	// Default fills the zero fields that have defaults; it may read the
	// shared settings in s (already defaulted).
	Default(s *spec.Spec)
	// Validate checks the defaulted settings; p is their path in a
	// profile (spec.settings), so errors point at the YAML line.
	Validate(s *spec.Spec, p *field.Path) field.ErrorList
	// Describe is the run in a few words, e.g. "8 writers on 1 object".
	Describe(s *spec.Spec) string
}

// Scenario is one run of a scenario.
type Scenario interface {
	// Setup creates the scenario's objects in Env.Namespace, before the
	// clock starts.
	Setup(ctx context.Context) error
	// Finish runs after the measured window, also after Ctrl-C (ctx is
	// then not cancelled, only bounded): it reads back what the run left
	// and returns the scenario's report.
	Finish(ctx context.Context) (Report, error)
}

// Checker is a Scenario that checks its settings against the target
// before the run creates anything (its namespace included): an error
// from Check is bad input, which the run reports with exit status 2.
type Checker interface {
	Check(ctx context.Context) error
}

// Live is a Scenario with figures of its own to show while it runs
// (leadership, admissions), beside the engine's, on the live metrics
// endpoint (kb-bench run --metrics-addr): each is exported as
// kb_bench_scenario_<name>, and named as its Report's figure is, whose
// final value replaces it when the run ends. Live is called at each
// scrape, from the scrape's goroutine, from Setup on and after Finish: it
// reads, never waits.
type Live interface {
	Live() []results.Figure
}

// Driven is a Scenario whose operations the engine's driver runs: Workers
// goroutines, each calling Do for its next operation, in a closed loop
// (with think time) or an open loop (at Spec.Rate).
type Driven interface {
	Scenario
	// Workers is how many workers the driver runs; worker w records in
	// Env.Recorder.Stripe(w).
	Workers() int
	// Do runs one operation of worker w that was due at intended, and
	// records it. Calls for one worker never overlap.
	Do(w int, intended time.Time)
}

// Sharded is a Driven scenario whose workers can be spread over several
// processes (kb-bench run --shards). The coordinator's
// instance runs Setup and, after adding every shard's Tally, Finish; it
// runs no operation. Each shard's instance runs Join instead of Setup,
// then its share of the workers, then Tally instead of Finish.
type Sharded interface {
	Driven
	// Join readies a shard that runs workers [lo, hi) of the run's
	// Workers() on the objects the coordinator's Setup made. From then on
	// Workers is hi-lo and Do's w counts from 0 for worker lo.
	Join(ctx context.Context, lo, hi int) error
	// Tally is what the shard's workers did that Finish's checks need,
	// as JSON.
	Tally() ([]byte, error)
	// AddTally adds a shard's Tally to the coordinator's instance, before
	// its Finish.
	AddTally(tally []byte) error
}

// Continuous is a Scenario that makes its requests from goroutines of its
// own (client-go's leader election): the engine starts it before the
// warm-up and stops it at the end of the measured window.
type Continuous interface {
	Scenario
	// Start starts the scenario and returns at once. done ends the run
	// early; the scenario calls it when Spec.Operations measured
	// operations have run.
	Start(ctx context.Context, done func())
	// Stop stops the scenario's goroutines and returns when they are gone.
	Stop()
}

// Report is what a scenario returns from Finish: its verdicts and its own
// figures, which the engine keeps in the Result.
type Report interface {
	// Checks are the scenario's correctness verdicts; a check with Lost > 0
	// counts lost updates.
	Checks() []results.Check
	// Figures are the scenario's own figures, each named, typed and
	// explained (results.Figure): all the summary, show, the HTML report,
	// compare and gate know of the scenario. One that does not validate
	// is left out with a warning.
	Figures() []results.Figure
}

// Env is what the engine gives a scenario for one run.
type Env struct {
	// Spec is the defaulted, validated specification.
	Spec spec.Spec
	// RunID names the run; derive random seeds from it (Seed).
	RunID string
	// Namespace is the run's namespace, already created; the engine
	// deletes it at the end.
	Namespace string
	// Clients are Spec.Clients clients with connections of their own.
	// Every request they send is counted for the server cross-check.
	Clients []kubernetes.Interface
	// Dynamic are the same clients as dynamic clients (any resource, in
	// JSON), over the same connections and counts: Dynamic[i] is
	// Clients[i]'s.
	Dynamic []dynamic.Interface
	// Admin is for Setup and Finish (creating, reading back): requests
	// apart from the load, on connections of their own, not counted;
	// AdminDynamic is the same as a dynamic client.
	Admin        kubernetes.Interface
	AdminDynamic dynamic.Interface
	// Recorder records attempts and operations; operations due before the
	// measured window are counted as warm-up only.
	Recorder *metrics.Recorder
	// Window opens when the measured window does.
	Window *Window
	// Log receives notes; never nil.
	Log io.Writer
	// Warn writes a warning and keeps it in the result.
	Warn func(format string, a ...any)
	// Gone is done once the target is declared lost (nil: never). Ops
	// derives operations' contexts from it.
	Gone context.Context
	// Owned is set when kb-bench made the target: the local control
	// plane, or a kind cluster `kb-bench kind up` or a run created. A
	// scenario may install cluster-wide things there unasked (a CRD).
	Owned bool
}

// Ops is the context every operation's own (timeout) context derives
// from: an interrupt does not cancel it, so an operation in flight
// finishes and is counted, but a target declared lost does, so nothing
// waits out its timeout on a dead apiserver.
func (e *Env) Ops() context.Context { return cmp.Or(e.Gone, context.Background()) }

// Writers is how many writers a scenario whose writers are its workers
// runs (Spec.Workers), noting when an open loop makes them other than
// Spec.Writers.
func (e *Env) Writers() int {
	n := e.Spec.Workers()
	if n != e.Spec.Writers {
		fmt.Fprintf(e.Log, "note: open loop: the %d workers allowed in flight (max-in-flight) are the writers\n", n)
	}
	return n
}

// Client returns the client worker w uses: the clients round-robin.
func (e *Env) Client(w int) kubernetes.Interface { return e.Clients[w%len(e.Clients)] }

// DynamicClient is Client(w) as a dynamic client.
func (e *Env) DynamicClient(w int) dynamic.Interface { return e.Dynamic[w%len(e.Dynamic)] }
