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
	"github.com/kb-bench/kb-bench/workload/reads"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Definition registers the counter scenario.
var Definition = scenario.Definition{
	Name:        "counter",
	Description: "writers read-modify-write shared ConfigMaps (or any object: --manifest) with a write strategy; lost updates are counted",
	Strategies:  true,
	Reads:       true,
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

	informers *reads.Informers // --read informer; nil otherwise
	watching  *watching        // --watchers or --read informer; nil otherwise
	acks      []reads.Acks     // per object, its successful writes
	causes    *reads.Causes    // the 409s by cause
}

var _ scenario.Sharded = (*counter)(nil)

func newCounter(env *scenario.Env, set *Settings) *counter {
	n := env.Writers()
	c := &counter{env: env, set: set, n: n, hi: n, names: objectNames(set.Objects), causes: reads.NewCauses(),
		objType: configMaps{env: env, admin: env.Admin.CoreV1().ConfigMaps(env.Namespace), namespace: env.Namespace}}
	if set.Manifest != "" {
		c.objType = newResource(env, set)
	}
	// A live GET is never stale: the acks' ring is for other reads and
	// for the watchers.
	c.acks = reads.NewAcks(set.Objects, env.Spec.Read != spec.ReadGet || watched(&env.Spec))
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
	if watched(&env.Spec) {
		c.watching = newWatching(c)
	}
	if env.Spec.Read == spec.ReadInformer {
		if c.informers, err = c.startInformers(ctx); err != nil {
			return err
		}
	}
	if c.watching != nil {
		c.watching.start(ctx, c)
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
		if err := r.resolve(ctx); err != nil {
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
	// Stale and Overtaken are the shard's 409s by cause: shards read
	// with get, whose reads are never stale, so a shard that sees only
	// its own acks classifies them as one process would.
	Stale     int64 `json:"stale,omitempty"`
	Overtaken int64 `json:"overtaken,omitempty"`
}

// Tally reports this shard's writes.
func (c *counter) Tally() ([]byte, error) {
	var t tally
	t.Stale, t.Overtaken = c.causes.Counts()
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
	c.causes.AddCounts(t.Stale, t.Overtaken)
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
	var storeKeys []string
	if c.informers != nil {
		for _, name := range c.names {
			storeKeys = append(storeKeys, env.Namespace+"/"+name)
		}
	}
	for local := range writers {
		i := c.lo + local // the writer's number in the run
		rv, store := c.reads(local)
		w := &writer{
			rv:        rv,
			store:     store,
			storeKeys: storeKeys,
			cached:    c.objType.cached,
			acks:      c.acks,
			causes:    c.causes,
			watching:  c.watching,
			id:        i,
			write:     write,
			objects:   c.objType.objects(local),
			measure:   env.Measurer(local, nil),
			choose:    newChooser(c.set, i, rand.New(rand.NewPCG(seed, uint64(i)+1))),
			names:     c.names,
			key:       counterKey,
			field:     c.objType.fieldOf(counterKey),
			shared:    c.shared,
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

var _ scenario.Live = (*counter)(nil)

// Live is the 409s by cause so far, for the live metrics.
func (c *counter) Live() []results.Figure { return c.causes.Figures() }

// Report is the counter scenario's report: its lost-update checks, one
// per object (or per object and writer), and its figures: the 409s by
// cause and, with watchers, watch delay (the engine's figures count the
// lost updates).
type Report struct {
	checks  []results.Check
	figures []results.Figure
}

// Checks are the lost-update checks.
func (r Report) Checks() []results.Check { return r.checks }

// Figures are the 409s by cause and the watchers' figures.
func (r Report) Figures() []results.Figure { return r.figures }

// catchUp bounds how long Finish waits for the watchers to see the last
// write.
const catchUp = 5 * time.Second

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
	r := Report{figures: c.causes.Figures()}
	if c.watching != nil {
		r.figures = append(r.figures, c.watching.finish(ctx, catchUp)...)
	}
	if c.informers != nil {
		c.informers.Stop()
	}
	objects, err := c.objType.readBack(ctx, env.RunID, c.keys)
	if r, ok := c.objType.(*resource); ok {
		if err := r.tearDown(ctx); err != nil {
			env.Warn("%v", err)
		}
	}
	switch {
	case err != nil:
		env.Warn("%v", err)
		r.checks = []results.Check{{Name: "objects read back", Detail: err.Error()}}
	case c.shared != nil:
		r.checks = sharedChecks(c.names, objects, counterKey, c.shared)
	default:
		own := make([][]fieldTally, len(c.writers))
		for i, w := range c.writers {
			own[i] = w.own
		}
		r.checks = disjointChecks(c.names, objects, c.keys, own)
	}
	return r, nil
}
