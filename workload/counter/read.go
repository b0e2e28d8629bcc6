package counter

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/workload/reads"
)

// Where a writer reads (spec.Read, reads.RV and reads.Informers): the
// informers are built from the object type's list and watch, so any type
// reads all three ways.

// startInformers starts one informer per client on the run's objects,
// each a watcher of c.watching, and waits until each has listed them.
func (c *counter) startInformers(ctx context.Context) (*reads.Informers, error) {
	return reads.StartInformers(ctx, len(c.env.Clients), func(i int) cache.ListerWatcher { return c.objType.listWatch(i, c.env.RunID) },
		c.objType.example(), c.watching.hook)
}

// reads returns how writer local reads: the resourceVersion its GETs ask
// for, or the store of its client's informer.
func (c *counter) reads(local int) (rv string, store cache.Store) {
	if c.informers != nil {
		return "", c.informers.Store(local)
	}
	return reads.RV(c.env.Spec.Read), nil
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
