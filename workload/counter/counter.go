// Package counter is the counter scenario: writers read-modify-write shared
// objects with a write strategy (update, retry, patch, server-side
// apply), incrementing a counter field, and every object is read back at
// the end to find lost updates. The objects are ConfigMaps (typed
// client), or the user's own of any kind (--manifest: dynamic client),
// a custom resource's CRD installed for the run when it comes along.
package counter

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Definition registers the counter scenario.
var Definition = scenario.Definition{
	Name:        "counter",
	Description: "writers read-modify-write shared ConfigMaps (or any object: --manifest) with a write strategy; lost updates are counted",
	Strategies:  true,
	NewSettings: func() scenario.Settings { return &Settings{} },
	Sharded: func(env *scenario.Env, settings scenario.Settings) scenario.Sharded {
		return newCounter(env, settings.(*Settings))
	},
	Rules: func(settings scenario.Settings) []rbacv1.PolicyRule {
		set := settings.(*Settings)
		m, err := parseManifest(set.Manifest)
		if set.Manifest == "" || err != nil {
			return []rbacv1.PolicyRule{k8s.Rule("", []string{"configmaps"}, "get", "list", "create", "update", "patch")}
		}
		gr := m.resource()
		rules := []rbacv1.PolicyRule{k8s.Rule(gr.Group, []string{gr.Resource}, "get", "list", "create", "update", "patch")}
		if set.Subresource != "" {
			rules = append(rules, k8s.Rule(gr.Group, []string{gr.Resource + "/" + set.Subresource}, "update", "patch"))
		}
		return rules
	},
	ClusterRules: func(settings scenario.Settings, s spec.Spec) []rbacv1.PolicyRule {
		set := settings.(*Settings)
		m, err := parseManifest(set.Manifest)
		// Offline, only the local control plane is known to be kb-bench's.
		if set.Manifest == "" || err != nil || !installsCRD(m, set, s.Target.Kind == spec.TargetLocal) {
			return nil
		}
		return m.crdRules()
	},
}

// counter is one run of the scenario: its objects, writers and the
// correctness tallies.
type counter struct {
	env     *scenario.Env
	set     *Settings
	n       int           // the run's writers
	lo, hi  int           // the writers this instance runs: [lo, hi) (a shard's share; else all)
	objType objectType    // what the objects are
	names   []string      // object names
	keys    []string      // the fields the writers increment: counterKey, or one per writer
	shared  []sharedTally // FieldsShared: per object
	writers []*writer
}

var _ scenario.Sharded = (*counter)(nil)

func newCounter(env *scenario.Env, set *Settings) *counter {
	n := env.Writers()
	c := &counter{env: env, set: set, n: n, hi: n, names: objectNames(set.Objects),
		objType: configMaps{env: env, admin: env.Admin.CoreV1().ConfigMaps(env.Namespace), namespace: env.Namespace}}
	if set.Manifest != "" {
		c.objType = newResource(env, set)
	}
	if set.Fields == FieldsDisjoint {
		for w := range n {
			c.keys = append(c.keys, fieldKey(w))
		}
	} else {
		c.keys = []string{counterKey}
		c.shared = make([]sharedTally, set.Objects)
	}
	if k := set.WritersPerObject; k > 0 {
		if groups := (n + k - 1) / k; groups != set.Objects {
			fmt.Fprintf(env.Log, "note: %d writers in groups of %d make %d groups for %d objects: groups wrap round the objects\n", n, k, groups, set.Objects)
		}
	}
	return c
}

// Workers is the number of writers this instance runs.
func (c *counter) Workers() int { return c.hi - c.lo }

// Do runs writer w's next read-modify-write.
func (c *counter) Do(w int, intended time.Time) { c.writers[w].do(intended) }

// Setup creates the objects and the writers.
func (c *counter) Setup(ctx context.Context) error {
	env := c.env
	seed := scenario.Seed(env.RunID)
	filler := makeFiller(c.set.ObjectSize, rand.New(rand.NewPCG(seed, 0)))
	labels, data := k8s.Labels(env.RunID), initialData(&env.Spec, c.keys, filler)
	if r, ok := c.objType.(*resource); ok {
		if err := r.setUp(ctx); err != nil {
			return err
		}
	}
	err := k8s.CreateAll(ctx, "objects", c.names, func(ctx context.Context, name string) error {
		return c.objType.create(ctx, name, labels, data)
	})
	if err != nil {
		return err
	}
	c.writers = c.newWriters(seed)
	return nil
}

// Join readies a shard that runs writers [lo, hi) on the objects the
// coordinator made. Each writer keeps its run-wide number, so its field,
// field manager, object and random choices are what they would be in
// one process.
func (c *counter) Join(ctx context.Context, lo, hi int) error {
	if lo < 0 || hi > c.n || lo >= hi {
		return fmt.Errorf("shard writers [%d, %d) are not within the run's %d writers", lo, hi, c.n)
	}
	c.lo, c.hi = lo, hi
	if r, ok := c.objType.(*resource); ok {
		if _, err := r.resolve(ctx); err != nil {
			return err
		}
	}
	c.writers = c.newWriters(scenario.Seed(c.env.RunID))
	return nil
}

// tally is a shard's writes as Finish counts them: per object (shared
// fields), or per writer and object (disjoint fields), successes and
// uncertain writes.
type tally struct {
	Shared []fieldTally         `json:"shared,omitempty"`
	Fields map[int][]fieldTally `json:"fields,omitempty"`
}

// Tally reports this shard's writes.
func (c *counter) Tally() ([]byte, error) {
	var t tally
	if c.shared != nil {
		for i := range c.shared {
			t.Shared = append(t.Shared, fieldTally{c.shared[i].successes.Load(), c.shared[i].uncertain.Load()})
		}
	} else {
		t.Fields = map[int][]fieldTally{}
		for i, w := range c.writers {
			t.Fields[c.lo+i] = w.own
		}
	}
	return json.Marshal(t)
}

// AddTally adds a shard's writes to the coordinator's counts.
func (c *counter) AddTally(b []byte) error {
	var t tally
	if err := json.Unmarshal(b, &t); err != nil {
		return fmt.Errorf("a shard's counter tally: %w", err)
	}
	switch {
	case c.shared != nil && len(t.Shared) != len(c.shared):
		return fmt.Errorf("a shard's counter tally has %d objects, the run %d", len(t.Shared), len(c.shared))
	case c.shared != nil:
		for i, f := range t.Shared {
			c.shared[i].successes.Add(f.Successes)
			c.shared[i].uncertain.Add(f.Uncertain)
		}
		return nil
	}
	for w, own := range t.Fields {
		if w < 0 || w >= len(c.writers) || len(own) != len(c.writers[w].own) {
			return fmt.Errorf("a shard's counter tally names writer %d with %d objects, which the run does not have", w, len(own))
		}
		for j, f := range own {
			c.writers[w].own[j].Successes += f.Successes
			c.writers[w].own[j].Uncertain += f.Uncertain
		}
	}
	return nil
}

// newWriters builds the writers over the run's clients (round robin) and
// the recorder's stripes.
func (c *counter) newWriters(seed uint64) []*writer {
	env := c.env
	s := &env.Spec
	write := scenario.WriteOf(s)
	writers := make([]*writer, c.hi-c.lo)
	for local := range writers {
		i := c.lo + local // the writer's number in the run
		w := &writer{
			id:      i,
			write:   write,
			objects: c.objType.objects(local),
			measure: env.Measurer(local, nil),
			choose:  newChooser(c.set, i, rand.New(rand.NewPCG(seed, uint64(i)+1))),
			names:   c.names,
			key:     counterKey,
			field:   c.objType.fieldOf(counterKey),
			shared:  c.shared,
		}
		if c.set.Fields == FieldsDisjoint {
			w.key, w.field = c.keys[i], c.objType.fieldOf(c.keys[i])
			w.own = make([]fieldTally, len(c.names))
		}
		if write.Kind == scenario.Apply {
			w.applyOpts = metav1.ApplyOptions{FieldManager: fieldManager(s, i), Force: write.Force}
		}
		writers[local] = w
	}
	return writers
}

// Report is the counter scenario's report: its lost-update checks, one
// per object (or per object and writer), and no figures of its own (the
// engine's count the lost updates).
type Report []results.Check

// Checks are the lost-update checks.
func (r Report) Checks() []results.Check { return r }

// Figures are none: the engine's figures say all the counter does.
func (r Report) Figures() []results.Figure { return nil }

// Check checks the run's own object against the target (its kind is
// served, with its subresource) before anything is created.
func (c *counter) Check(ctx context.Context) error {
	if r, ok := c.objType.(*resource); ok {
		return r.check(ctx)
	}
	return nil
}

// Finish reads every object back and checks it against the writes, then
// deletes the CRD the run installed.
func (c *counter) Finish(ctx context.Context) (scenario.Report, error) {
	env := c.env
	objects, err := c.objType.readBack(ctx, env.RunID, c.keys)
	if r, ok := c.objType.(*resource); ok {
		if err := r.tearDown(ctx); err != nil {
			env.Warn("%v", err)
		}
	}
	if err != nil {
		env.Warn("%v", err)
		return Report{{Name: "objects read back", Detail: err.Error()}}, nil
	}
	if c.shared != nil {
		return Report(sharedChecks(c.names, objects, counterKey, c.shared)), nil
	}
	own := make([][]fieldTally, len(c.writers))
	for i, w := range c.writers {
		own[i] = w.own
	}
	return Report(disjointChecks(c.names, objects, c.keys, own)), nil
}
