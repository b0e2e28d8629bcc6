package workload

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// writerCount is how many writers a run has. In an open loop the workers
// that take the arrivals are the writers, so there are MaxInFlight of them.
func writerCount(s spec.Spec) int {
	if s.Rate > 0 {
		return s.MaxInFlight
	}
	return s.Writers
}

// seedOf derives the writers' random seeds from the run id, so a run's key
// choices can be replayed.
func seedOf(runID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(runID))
	return h.Sum64()
}

// counterRun is the counter scenario's state: its objects, writers and the
// correctness tallies.
type counterRun struct {
	names   []string
	keys    []string      // the fields the writers increment: counterKey, or one per writer
	shared  []sharedTally // FieldsShared: per object
	writers []*writer
}

// newCounterRun lays out the objects and fields n writers of s increment.
func newCounterRun(s spec.Spec, n int) *counterRun {
	c := &counterRun{names: objectNames(s.Objects)}
	if s.Fields == spec.FieldsDisjoint {
		for w := range n {
			c.keys = append(c.keys, fieldKey(w))
		}
	} else {
		c.keys = []string{counterKey}
		c.shared = make([]sharedTally, s.Objects)
	}
	return c
}

// runCounter is the counter scenario: writers read-modify-write shared
// ConfigMaps with the Spec's strategy, then every object is checked for lost
// updates.
func runCounter(ctx context.Context, r *run) error {
	s := r.spec
	n := writerCount(s)
	if n != s.Writers {
		fmt.Fprintf(r.log, "note: open loop: the %d workers allowed in flight (max-in-flight) are the writers\n", n)
	}
	if s.WritersPerObject > 0 {
		if groups := (n + s.WritersPerObject - 1) / s.WritersPerObject; groups != s.Objects {
			fmt.Fprintf(r.log, "note: %d writers in groups of %d make %d groups for %d objects: groups wrap round the objects\n", n, s.WritersPerObject, groups, s.Objects)
		}
	}
	seed := seedOf(r.opts.RunID)
	c := newCounterRun(s, n)
	filler := makeFiller(s.ObjectSize, rand.New(rand.NewPCG(seed, 0)))
	cms := r.admin.CoreV1().ConfigMaps(r.ns)
	if err := createObjects(ctx, cms, c.names, runLabels(r.opts.RunID), initialData(s, c.keys, filler)); err != nil {
		return err
	}

	// The warm-up is a phase of its own: it runs, its operations in flight
	// finish, and only then is the server's first /metrics scrape taken and
	// the measured window started. No operation is issued in between, so
	// the server cross-check covers exactly the measured operations.
	start := time.Now()
	measureFrom := start.Add(s.Warmup.Duration)
	rec := metrics.NewRecorder(measureFrom, metrics.DefaultShards(n), s.Rate > 0)
	c.writers = c.newWriters(ctx, r, n, rec, seed)
	do := func(w int, intended time.Time) { c.writers[w].do(intended) }
	loop := func(p plan) {
		if s.Rate > 0 {
			openLoop(ctx, p, n, constantPacer{rate: s.Rate}, rec, do)
		} else {
			closedLoop(ctx, p, n, do)
		}
	}
	if s.Warmup.Duration > 0 {
		loop(plan{start: start, measureFrom: measureFrom, deadline: measureFrom, thinkTime: s.ThinkTime.Duration})
	}
	if ctx.Err() != nil {
		r.result.Interrupted = true
		r.result.Server = results.UnavailableServerCheck("the run stopped before the warm-up ended, so there is no measured window to compare")
		r.measure(rec.Snapshot(time.Now()), results.ClientStats{}, measureFrom, measureFrom)
		r.result.Checks = c.verify(ctx, r)
		return r.summarize()
	}
	server := scrapeServer(ctx, r.admin.CoreV1().RESTClient())

	// Every operation of the warm-up was due before measureFrom; every
	// measured one is due from here on, which is no earlier.
	started := time.Now()
	p := plan{start: started, measureFrom: started, operations: s.Operations, thinkTime: s.ThinkTime.Duration}
	if s.Duration.Duration > 0 {
		p.deadline = started.Add(s.Duration.Duration)
	}
	// The writers are idle here, so these readings are exact.
	counts0, requests0 := readClientCounts(r.clients), c.requests()
	stopTicks := tick(rec, started, r.opts.Progress)
	loop(p)
	ended := time.Now()
	stopTicks()
	r.result.Interrupted = ctx.Err() != nil

	stats := clientStats(counts0, readClientCounts(r.clients), c.requests()-requests0)
	r.measure(rec.Snapshot(ended), stats, started, ended)
	r.result.Server = server.check(ctx, r.result.Measurements, "configmaps", r.log)
	r.result.Checks = c.verify(ctx, r)
	return r.summarize()
}

// newWriters builds n writers over the run's clients (round robin) and the
// recorder's shards.
func (c *counterRun) newWriters(ctx context.Context, r *run, n int, rec *metrics.Recorder, seed uint64) []*writer {
	s := r.spec
	base := context.WithoutCancel(ctx)
	strat := strategyOf(s)
	var backoff spec.Backoff
	if strat == strategyRetry {
		backoff, _ = spec.ParseBackoff(s.Backoff) // validated with the Spec
	}
	patchType := types.MergePatchType
	if s.PatchType == spec.PatchStrategic {
		patchType = types.StrategicMergePatchType
	}
	writers := make([]*writer, n)
	for i := range writers {
		w := &writer{
			id:           i,
			strategy:     strat,
			cms:          r.clients[i%len(r.clients)].kube.CoreV1().ConfigMaps(r.ns),
			shard:        rec.Shard(i),
			choose:       newChooser(s, i, rand.New(rand.NewPCG(seed, uint64(i)+1))),
			names:        c.names,
			key:          counterKey,
			base:         base,
			opTimeout:    s.OpTimeout.Duration,
			patchType:    patchType,
			precondition: s.PatchPrecondition,
			backoff:      toWaitBackoff(backoff),
			shared:       c.shared,
		}
		if s.Fields == spec.FieldsDisjoint {
			w.key = c.keys[i]
			w.own = make([]fieldTally, len(c.names))
		}
		if strat == strategyApply {
			w.applyOpts = metav1.ApplyOptions{FieldManager: fieldManager(s, i), Force: s.Force}
			w.apply = applycorev1.ConfigMap(c.names[0], r.ns).WithData(map[string]string{w.key: "0"})
		}
		writers[i] = w
	}
	return writers
}

// requests is how many requests the writers have sent; call it while they
// are idle.
func (c *counterRun) requests() int64 {
	var n int64
	for _, w := range c.writers {
		n += w.requests
	}
	return n
}

// verify reads every object back and checks it against the writes, with a
// context of its own so that it runs after Ctrl-C too.
func (c *counterRun) verify(ctx context.Context, r *run) []results.Check {
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	objects, err := readObjects(vctx, r.admin.CoreV1().ConfigMaps(r.ns), r.opts.RunID, c.keys)
	if err != nil {
		r.warn("%v", err)
		return []results.Check{{Name: "objects read back", Detail: err.Error()}}
	}
	if c.shared != nil {
		return sharedChecks(c.names, objects, counterKey, c.shared)
	}
	own := make([][]fieldTally, len(c.writers))
	for i, w := range c.writers {
		own[i] = w.own
	}
	return disjointChecks(c.names, objects, c.keys, own)
}
