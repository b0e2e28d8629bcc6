package counter

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/spec"
)

// Where a writer reads (spec.Read): a live GET, a GET the apiserver
// answers from its watch cache, or an informer's store. The first two
// are the objects' get with another resourceVersion; the informers are
// built from the object type's list and watch, so any type reads all
// three ways.

// informers are the run's informers, one per client, shared by the
// client's writers as a controller process shares one.
type informers struct {
	stores []cache.Store
	stop   context.CancelFunc
}

// startInformers starts one informer per client on the run's objects,
// each a watcher of c.watching, and waits until each has listed them.
func (c *counter) startInformers(ctx context.Context) (*informers, error) {
	env := c.env
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	in := &informers{stop: stop}
	synced := make([]cache.InformerSynced, len(env.Clients))
	for i := range env.Clients {
		inf := cache.NewSharedIndexInformer(c.objType.listWatch(i, env.RunID), c.objType.example(), 0, cache.Indexers{})
		in.stores = append(in.stores, inf.GetStore())
		synced[i] = inf.HasSynced
		if err := c.watching.hook(inf); err != nil {
			stop()
			return nil, fmt.Errorf("watching the writers' informers: %w", err)
		}
		go inf.RunWithContext(run)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		stop()
		return nil, fmt.Errorf("starting the writers' informers (--read informer): %w", context.Cause(ctx))
	}
	return in, nil
}

// reads returns how writer local reads: the resourceVersion its GETs ask
// for, or the store of its client's informer.
func (c *counter) reads(local int) (rv string, store cache.Store) {
	switch c.env.Spec.Read {
	case spec.ReadCache:
		return "0", nil
	case spec.ReadInformer:
		return "", c.informers.stores[local%len(c.informers.stores)]
	}
	return "", nil
}

// read reads object obj where the writer reads.
func (w *writer) read(ctx context.Context, obj int) (version, error) {
	if w.store == nil {
		return w.objects.get(ctx, w.names[obj], w.key, w.rv)
	}
	o, ok, err := w.store.GetByKey(w.storeKeys[obj])
	switch {
	case err != nil:
		return version{}, err
	case !ok:
		return version{}, apierrors.NewNotFound(schema.GroupResource{}, w.names[obj])
	}
	return w.cached(o, w.key)
}
