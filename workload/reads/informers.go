package reads

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/spec"
)

// Where a writer reads (spec.Read): a live GET, a GET the apiserver
// answers from its watch cache (resourceVersion "0", RV), or an
// informer's store (Informers).

// RV is the resourceVersion a writer's GETs ask for when it reads from
// read: "0" (any version: the watch cache) for cache, "" (the newest: a
// quorum read) otherwise.
func RV(read spec.ReadSource) string {
	if read == spec.ReadCache {
		return "0"
	}
	return ""
}

// Informers are a run's informers, one per client, shared by the
// client's writers as a controller process shares one.
type Informers struct {
	stores []cache.Store
	stop   context.CancelFunc
}

// StartInformers starts n informers of example's type, informer i on
// listWatch(i) and handed to hook (when not nil) before it starts, and
// waits until each has listed.
func StartInformers(ctx context.Context, n int, listWatch func(i int) cache.ListerWatcher, example runtime.Object,
	hook func(cache.SharedIndexInformer) error) (*Informers, error) {
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	in := &Informers{stop: stop}
	synced := make([]cache.InformerSynced, n)
	for i := range n {
		inf := cache.NewSharedIndexInformer(listWatch(i), example, 0, cache.Indexers{})
		in.stores = append(in.stores, inf.GetStore())
		synced[i] = inf.HasSynced
		if hook != nil {
			if err := hook(inf); err != nil {
				stop()
				return nil, fmt.Errorf("watching the writers' informers: %w", err)
			}
		}
		go inf.RunWithContext(run)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		stop()
		return nil, fmt.Errorf("starting the writers' informers (--read informer): %w", context.Cause(ctx))
	}
	return in, nil
}

// Store is the store of informer i (of as many as were started, in turn).
func (in *Informers) Store(i int) cache.Store { return in.stores[i%len(in.stores)] }

// Stop stops the informers.
func (in *Informers) Stop() { in.stop() }
