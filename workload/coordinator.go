package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/distributed"
)

// coordinator is a distributed run's coordinator: the scenario's Setup
// and Finish are its, the load is the shards', and so are the figures,
// merged exactly.
type coordinator struct {
	e *engine
	c *distributed.Coordinator

	// The shards' live figures, set once they joined.
	live atomic.Pointer[shardsLive]
}

// shardsLive are where the shards serve their live figures, and each
// one's last read.
type shardsLive struct {
	urls []string
	mu   sync.Mutex
	// scrapes counts the coordinator's scrapes; last[i] is shard i's
	// reading from the latest scrape that got one.
	scrapes uint64
	last    []shardReading
}

// shardReading is one shard's figures and the number of the scrape that
// read them.
type shardReading struct {
	f      live.Figures
	scrape uint64
}

func (r *coordinator) ready(ctx context.Context) error {
	e, s := r.e, r.e.Spec
	e.record(e.sc.Driven.Workers())
	if err := e.sc.Setup(ctx); err != nil {
		return err
	}
	specJSON, err := json.Marshal(s)
	if err != nil {
		return err
	}
	timeout := e.opts.ShardTimeout
	if timeout <= 0 {
		timeout = spec.DefaultShardTimeout
	}
	r.c, err = distributed.Coordinate(ctx, distributed.CoordinatorOptions{
		Kube: e.admin, Namespace: e.env.Namespace, RunID: e.opts.RunID, Spec: specJSON, Shards: s.Shards, Version: e.opts.Version,
		Length: s.Warmup.Duration + s.Duration.Duration, OpTimeout: s.OpTimeout.Duration,
		Runner: e.opts.Runner, Rules: shardRules(e.rules()), JoinTimeout: timeout, Log: e.log, Warn: e.warn,
		Live: e.opts.Live != nil,
	})
	if err == nil {
		urls := r.c.LiveURLs()
		r.live.Store(&shardsLive{urls: urls, last: make([]shardReading, len(urls))})
	}
	return err
}

// liveFigures add up the shards' figures as they serve them, for the
// coordinator's live endpoint; a shard that does not answer (it ended
// and uploaded, or it is slow) counts with its last figures, so the sum
// never goes down. Once the run is saved its Result replaces them.
func (r *coordinator) liveFigures() live.Figures {
	var sum live.Figures
	l := r.live.Load()
	if l == nil {
		return sum
	}
	// Two scrapes may overlap (two Prometheus replicas): a reading from
	// an earlier one that comes back later must not replace a later one's,
	// or a counter would step back, which Prometheus takes for a reset.
	l.mu.Lock()
	l.scrapes++
	scrape := l.scrapes
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), liveShardTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, u := range l.urls {
		wg.Go(func() {
			if f, err := live.FetchShard(ctx, http.DefaultClient, u+"live"); err == nil {
				l.mu.Lock()
				if scrape > l.last[i].scrape {
					l.last[i] = shardReading{f: f, scrape: scrape}
				}
				l.mu.Unlock()
			}
		})
	}
	wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.last {
		sum.Add(r.f)
	}
	return sum
}

// liveShardTimeout bounds the read of a shard's live figures within a
// scrape of the coordinator's.
const liveShardTimeout = 2 * time.Second

func (r *coordinator) warmup(ctx context.Context) error {
	return r.c.Warmup(ctx, r.e.Spec.Warmup.Duration)
}

func (r *coordinator) open(ctx context.Context) (start, end time.Time, err error) {
	return r.c.Window(ctx, r.e.Spec.Duration.Duration)
}

// load waits for the shards' window. A target lost meanwhile (the
// shards say so, or the coordinator cannot reach it) ends the window as
// it ends a run alone: the run goes on to its figures, which the shards
// hand over without the apiserver when their runner can.
func (r *coordinator) load(ctx context.Context, _, end time.Time) (time.Time, bool, error) {
	stopped, err := r.c.AwaitWindow(ctx, end, r.e.opts.Progress)
	if errors.Is(err, spec.ErrTargetLost) {
		r.e.lose(err) // a no-op when ctx already ended with the loss
		return time.Time{}, false, nil
	}
	return time.Time{}, stopped, err // the shards' results say when it ended
}

// figures collects the shards' results and merges them exactly, and adds
// their tallies to the coordinator's scenario, for its checks over every
// shard's writes. After a lost target they are what the shards handed
// over directly, up to the loss.
func (r *coordinator) figures(ctx context.Context, _ window) (figures, error) {
	var shards []*results.Result
	var err error
	if cause := context.Cause(ctx); errors.Is(cause, spec.ErrTargetLost) {
		var notes []string
		if shards, notes, err = r.c.Salvage(ctx); err != nil {
			r.e.warn("%v", err) // the result is saved without figures: say why
			return figures{}, fmt.Errorf("%w; %w", cause, err)
		}
		for _, n := range notes {
			r.e.warn("%s", n)
		}
	} else if shards, err = r.c.Collect(ctx); err != nil {
		return figures{}, err
	}
	f := figures{requests: map[metrics.RequestKey]int64{}}
	var late []time.Duration
	for _, sh := range shards {
		for k, w := range sh.Warnings {
			sh.Warnings[k] = fmt.Sprintf("shard %d: %s", sh.Shard.Index, w)
		}
		if err := r.e.sc.Sharded.AddTally(sh.Shard.Tally); err != nil {
			return figures{}, fmt.Errorf("shard %d: %w", sh.Shard.Index, err)
		}
		info := *sh.Shard
		for _, c := range info.Requests {
			f.requests[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: c.Verb, Group: c.Group, Resource: c.Resource, Subresource: c.Subresource}, Code: c.Code}] += c.Count
		}
		info.Requests, info.Tally = nil, nil
		f.shards = append(f.shards, info)
		late = append(late, info.StartLate)
	}
	merged, err := analysis.Merge(shards...)
	if err != nil {
		return figures{}, fmt.Errorf("merging the shards' results: %w", err)
	}
	f.started, f.ended, f.measurements, f.series, f.warnings = merged.Started, merged.Ended, merged.Measurements, merged.Series, merged.Warnings
	if skew := slices.Max(late) - slices.Min(late); skew > 100*time.Millisecond {
		r.e.warn("the shards started %s apart (each shard's start, by its own clock): the window's edges are that much blurred", skew.Round(time.Millisecond))
	}
	return f, nil
}

func (r *coordinator) close(ctx context.Context, err error) error {
	if r.c == nil {
		return nil
	}
	return r.c.Close(ctx, err)
}

// ShardOptions are what RunShard needs: Config (the target the
// coordinator runs on), RunID, Version, Log and ClientLog as in Options,
// and which shard this is.
type ShardOptions struct {
	Options
	// Namespace and Options.RunID find the run's coordination Lease.
	Namespace string
	// Index is the shard's number, from 0.
	Index int
	// Name is the process or pod running the shard, for messages.
	Name string
	// LiveListener, when set, is where the shard serves its figures to the
	// coordinator as the run goes (distributed.ShardRun.Live). Named apart
	// from Options.Live, the exporter the shard serves from it.
	LiveListener net.Listener
	// ResultOut, when set, receives the shard's result (JSON) however the
	// run ended, once its figures are made: the way a coordinator that
	// lost the apiserver gets them (distributed.Handoff).
	ResultOut io.Writer
}

// RunShard runs shard o.Index of the distributed run o.RunID: it reads the
// spec from the run's coordination Lease, runs its share of the writers
// through each phase the coordinator publishes, and uploads its result
// for the coordinator to merge. A failure is reported to the coordinator
// (the shard's Lease says failed, and why) and returned.
func RunShard(ctx context.Context, o ShardOptions) (err error) {
	// No client-side limit: the protocol's polls must not queue behind
	// client-go's default 5 QPS.
	adminCfg := k8s.ClientConfig(o.Config, spec.Client{QPS: -1}, o.Version)
	adminCfg.Timeout = spec.DefaultOpTimeout
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		return fmt.Errorf("building the shard's client: %w", err)
	}
	sh, err := distributed.Join(ctx, admin, o.Namespace, o.RunID, o.Index, o.Name, spec.DefaultOpTimeout)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && !errors.Is(err, distributed.ErrAborted) && !errors.Is(err, spec.ErrTargetLost) {
			sh.Fail(ctx, err, spec.DefaultOpTimeout)
		}
	}()
	var s spec.Spec
	if err := json.Unmarshal(sh.Spec, &s); err != nil {
		return fmt.Errorf("the run's spec: %w", err)
	}
	r, errs := Resolve(s)
	if len(errs) > 0 {
		return fmt.Errorf("the run's spec: %s", spec.Describe(errs))
	}
	// Before any load: a shard that may not write would otherwise run a
	// whole window of refused requests, and one that may not report
	// would fail only at its end.
	missing, err := missingPermissions(ctx, admin, o.Namespace, shardRules(r.rules()))
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("this shard may not %s in namespace %s, which every shard of this run needs: grant them to its credentials (with --runner job, the shards' Role does, unless it was changed)",
			strings.Join(missing, ", "), o.Namespace)
	}
	lo, hi := sh.Share(r.Spec.Clients)
	e, err := newEngine(r, o.Options, max(1, hi-lo))
	if err != nil {
		return err
	}
	e.result.Namespace, e.env.Namespace = o.Namespace, o.Namespace
	if sh.Version != o.Version {
		e.warn("this shard runs kb-bench %s, the coordinator %s", o.Version, sh.Version)
	}
	e.role = &inProcess{e: e, sh: sh, name: o.Name}
	if o.LiveListener != nil {
		// Its own figures, raw, for the coordinator to add up.
		e.opts.Live = live.NewExporter().Add(live.Labels{})
		srv := &http.Server{Handler: live.ShardHandler(e.opts.Live), ReadHeaderTimeout: liveShardTimeout}
		go func() { _ = srv.Serve(o.LiveListener) }()
		defer srv.Close()
	}
	err = e.execute(ctx)
	if o.ResultOut != nil && e.result.Shard != nil {
		// Whatever became of the apiserver: the coordinator reads it there
		// when it cannot download it.
		if werr := json.NewEncoder(o.ResultOut).Encode(e.result); werr != nil {
			e.warn("handing the result to the coordinator directly: %v", werr)
		}
	}
	if err != nil {
		return err
	}
	return sh.Upload(ctx, e.result)
}

// clientRequests lists a window's requests for the coordinator, in a
// stable order.
func clientRequests(m map[metrics.RequestKey]int64) []results.ClientRequests {
	out := make([]results.ClientRequests, 0, len(m))
	for k, n := range m {
		out = append(out, results.ClientRequests{Verb: k.Verb, Group: k.Group, Resource: k.Resource, Subresource: k.Subresource, Code: k.Code, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return fmt.Sprint(a.Resource, a.Subresource, a.Verb, a.Code) < fmt.Sprint(b.Resource, b.Subresource, b.Verb, b.Code)
	})
	return out
}
