package counter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// objectNames returns the names of the m benchmark objects.
func objectNames(m int) []string {
	names := make([]string, m)
	for i := range names {
		names[i] = "kb-bench-" + strconv.Itoa(i)
	}
	return names
}

// initialData is what every benchmark object starts with: the filler, and
// the fields the writers increment at 0. For server-side apply the
// incremented fields start absent (read as 0): a field set at creation is
// owned by the creating field manager, and every writer's first apply would
// conflict with it.
func initialData(s *spec.Spec, keys []string, filler string) map[string]string {
	data := map[string]string{}
	if filler != "" {
		data[fillerKey] = filler
	}
	if s.Strategy == spec.StrategySSA {
		return data
	}
	for _, k := range keys {
		data[k] = "0"
	}
	return data
}

// makeFiller returns n bytes of letters and digits, random so that HTTP
// compression does not make a large object cheap on the wire.
func makeFiller(n int, r *rand.Rand) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// The object seam: what the writers contend on is an objectType, and each
// writer reaches the objects through its client's objects. The writer's
// loop (read, add one, write with the strategy, count) knows neither the
// type nor the client: the typed ConfigMaps below are the default, with
// the cost they have always had.

// objectType is the type of the run's objects: it creates them, reads
// them back for the lost-update checks, and opens a writer's access
// through one of the run's clients.
type objectType interface {
	// create creates object name with the given labels and its counted
	// fields (and the filler) set as data says.
	create(ctx context.Context, name string, labels, data map[string]string) error
	// readBack reads every object of run runID and keeps, for each, only
	// the fields under keys, so memory stays small for large objects.
	readBack(ctx context.Context, runID string, keys []string) (map[string]map[string]string, error)
	// objects is the access of the instance's writer w, through its
	// client (Env.Client(w)).
	objects(w int) objects
	// fieldOf is the field a writer whose key is key changes.
	fieldOf(key string) fieldRef
	// listWatch lists and watches the objects of run runID through
	// writer w's client, for its informer and the watchers (--read
	// informer, --watchers); example is an empty object of the type, as
	// an informer wants one.
	listWatch(w int, runID string) cache.ListerWatcher
	example() runtime.Object
	// cached is an object an informer holds as a writer's version: a
	// deep copy, which the writer may modify.
	cached(obj any, key string) (version, error)
}

// version is an object as a writer read it: the object itself (which
// update writes back, and the writer then owns), its resourceVersion, and
// the value of the writer's field.
type version struct {
	obj   any
	rv    string
	value int64
}

// objects is one writer's access to the run's objects, through its
// client. Each write returns the resourceVersion it made.
type objects interface {
	// get reads object name and the value of its field key, at
	// resourceVersion rv: "" for a quorum read, "0" for what the
	// apiserver's watch cache holds.
	get(ctx context.Context, name, key, rv string) (version, error)
	// update writes v back with field key set to value; without
	// precondition it carries no resourceVersion (last write wins).
	update(ctx context.Context, v version, key string, value int64, precondition bool) (string, error)
	// patch sends a patch of type pt to object name.
	patch(ctx context.Context, name string, pt types.PatchType, body []byte) (string, error)
	// apply applies field key = value to object name with opts' field
	// manager.
	apply(ctx context.Context, name, key string, value int64, opts metav1.ApplyOptions) (string, error)
}

// configMaps is the default object type: ConfigMaps in the run's
// namespace, their counted fields data keys holding decimal strings.
type configMaps struct {
	env       *scenario.Env
	admin     corev1client.ConfigMapInterface // Setup's and Finish's, not counted
	namespace string
}

var _ objectType = configMaps{}

func (t configMaps) create(ctx context.Context, name string, labels, data map[string]string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}
	// No field manager of its own: the apiserver names the creator after
	// the user agent, as it names the writers' updates, so the object's
	// managedFields hold one entry, as an object one controller creates
	// and updates does. A second manager's entry costs the apiserver about
	// 5% of every update's time (measured against a bare client-go loop).
	if _, err := t.admin.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating ConfigMap %s: %w", name, err)
	}
	return nil
}

func (t configMaps) readBack(ctx context.Context, runID string, keys []string) (map[string]map[string]string, error) {
	objects := map[string]map[string]string{}
	opts := metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + runID, Limit: 20}
	for {
		list, err := t.admin.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("reading the objects back to check them: %w", err)
		}
		for _, cm := range list.Items {
			data := make(map[string]string, len(keys))
			for _, k := range keys {
				if v, ok := cm.Data[k]; ok {
					data[k] = v
				}
			}
			objects[cm.Name] = data
		}
		if list.Continue == "" {
			return objects, nil
		}
		opts.Continue = list.Continue
	}
}

func (t configMaps) fieldOf(key string) fieldRef {
	return fieldRef{path: []string{"data", key}, str: true}
}

func (t configMaps) objects(w int) objects {
	return &configMapObjects{cms: t.env.Client(w).CoreV1().ConfigMaps(t.namespace), namespace: t.namespace,
		applies: map[string]*applycorev1.ConfigMapApplyConfiguration{}}
}

// configMapObjects is a writer's access to the ConfigMaps.
type configMapObjects struct {
	cms       corev1client.ConfigMapInterface
	namespace string
	// applies are the writer's apply configurations, one per object,
	// reused: Apply marshals one before it returns.
	applies map[string]*applycorev1.ConfigMapApplyConfiguration
}

func (t configMaps) listWatch(w int, runID string) cache.ListerWatcher {
	selector := k8s.LabelRunID + "=" + runID
	return cache.NewFilteredListWatchFromClient(t.env.Client(w).CoreV1().RESTClient(), "configmaps", t.namespace,
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
}

func (configMaps) example() runtime.Object { return &corev1.ConfigMap{} }

func (configMaps) cached(obj any, key string) (version, error) {
	cm := obj.(*corev1.ConfigMap).DeepCopy()
	return configMapVersion(cm, key)
}

func (c *configMapObjects) get(ctx context.Context, name, key, rv string) (version, error) {
	cm, err := c.cms.Get(ctx, name, metav1.GetOptions{ResourceVersion: rv})
	if err != nil {
		return version{}, err
	}
	return configMapVersion(cm, key)
}

// configMapVersion is ConfigMap cm as a writer read it.
func configMapVersion(cm *corev1.ConfigMap, key string) (version, error) {
	v, err := counterValue(cm.Data, cm.Name, key)
	return version{obj: cm, rv: cm.ResourceVersion, value: v}, err
}

func (c *configMapObjects) update(ctx context.Context, v version, key string, value int64, precondition bool) (string, error) {
	cm := v.obj.(*corev1.ConfigMap)
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[key] = strconv.FormatInt(value, 10)
	if !precondition {
		cm.ResourceVersion = ""
	}
	return resourceVersion(c.cms.Update(ctx, cm, metav1.UpdateOptions{}))
}

func (c *configMapObjects) patch(ctx context.Context, name string, pt types.PatchType, body []byte) (string, error) {
	return resourceVersion(c.cms.Patch(ctx, name, pt, body, metav1.PatchOptions{}))
}

func (c *configMapObjects) apply(ctx context.Context, name, key string, value int64, opts metav1.ApplyOptions) (string, error) {
	a := c.applies[name]
	if a == nil {
		a = applycorev1.ConfigMap(name, c.namespace)
		a.Data = map[string]string{}
		c.applies[name] = a
	}
	a.Data[key] = strconv.FormatInt(value, 10)
	return resourceVersion(c.cms.Apply(ctx, a, opts))
}

// resourceVersion is the resourceVersion a write made, "" when it failed.
func resourceVersion(cm *corev1.ConfigMap, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return cm.ResourceVersion, nil
}
