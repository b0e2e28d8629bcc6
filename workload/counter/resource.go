package counter

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// crdResource is where CustomResourceDefinitions are served.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// resource is the object type of a run's own manifest: any namespaced
// kind the target serves, through the dynamic client (JSON), the
// writers' field at a path, written to the main resource or its status
// subresource.
type resource struct {
	env   *scenario.Env
	m     *manifest
	field fieldRef
	sub   []string // the subresource writes go to: none, or "status"
	// install: the run installs the manifest's CRD and deletes it after.
	install bool
	gvr     schema.GroupVersionResource // once resolved
}

var _ objectType = (*resource)(nil)

// newResource is set's object type (set.Manifest is resolved and valid).
func newResource(env *scenario.Env, set *Settings) *resource {
	m, _ := parseManifest(set.Manifest)
	path, _ := parseFieldPath(set.FieldPath)
	f, _ := m.resolveField(path)
	r := &resource{env: env, m: m, field: f}
	if set.Subresource != "" {
		r.sub = []string{set.Subresource}
	}
	r.install = installsCRD(m, set, env.Owned)
	return r
}

// installsCRD says whether a run installs the manifest's CRD (and
// deletes it after): it has one, and the run is asked to or owns the
// target.
func installsCRD(m *manifest, set *Settings, owned bool) bool {
	return m.crd != nil && (set.InstallCRD || owned)
}

// crdRules are the cluster-wide rights installing, waiting for and
// deleting the manifest's CRD take (get and delete of that one only).
func (m *manifest) crdRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		k8s.Rule(crdResource.Group, []string{crdResource.Resource}, "create"),
		k8s.Named(crdResource.Group, []string{crdResource.Resource}, m.crd.GetName(), "get", "delete"),
	}
}

// check is the run's check against the target, before it creates
// anything: the kind is served (or its CRD is to be installed), with the
// subresource the writes go to.
func (r *resource) check(ctx context.Context) error {
	if r.install {
		return nil
	}
	return r.resolve(ctx)
}

// resolve sets r.gvr to the object's resource (and checks its
// subresource), from the CRD the run installs or through discovery.
func (r *resource) resolve(ctx context.Context) error {
	gvk := r.m.obj.GroupVersionKind()
	if r.gvr.Resource != "" {
		return nil
	}
	if r.install {
		r.gvr = gvk.GroupVersion().WithResource(r.m.crdPlural())
		return nil
	}
	list, err := r.env.Admin.Discovery().ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		list, err = &metav1.APIResourceList{}, nil
	}
	if err != nil {
		return fmt.Errorf("asking the target which kinds it serves: %w", err)
	}
	var plural string
	for _, res := range list.APIResources {
		if res.Kind == gvk.Kind && !strings.Contains(res.Name, "/") {
			if !res.Namespaced {
				return spec.Input(fmt.Errorf("%s is cluster-scoped: kb-bench writes objects in the run's namespace, so give a namespaced kind", gvk.Kind))
			}
			plural = res.Name
		}
	}
	hint := "install its CustomResourceDefinition, or put it in the manifest (and pass --install-crd on a cluster kb-bench did not make)"
	if r.m.crd != nil {
		hint = "pass --install-crd to install the manifest's CustomResourceDefinition for the run, or install it yourself"
	}
	switch {
	case plural == "":
		return spec.Input(fmt.Errorf("the target does not serve %s in %s: %s", gvk.Kind, gvk.GroupVersion(), hint))
	case len(r.sub) > 0 && !servesSub(list, plural+"/"+r.sub[0]):
		return spec.Input(fmt.Errorf("%s has no %s subresource on the target: drop --subresource", plural, r.sub[0]))
	}
	if w := scenario.WriteOf(&r.env.Spec); w.Kind == scenario.MergePatch && w.PatchType == types.StrategicMergePatchType {
		// Custom resources take no strategic merge patch; a CRD of that
		// name says the kind is one (unreadable: the apiserver will say).
		_, err := r.env.AdminDynamic.Resource(crdResource).Get(ctx, plural+"."+gvk.Group, metav1.GetOptions{})
		if err == nil {
			return spec.Input(fmt.Errorf("%s is a custom resource, which takes no strategic merge patch: use --patch-type merge or json", gvk.Kind))
		}
	}
	r.gvr = gvk.GroupVersion().WithResource(plural)
	return nil
}

func servesSub(list *metav1.APIResourceList, name string) bool {
	return slices.ContainsFunc(list.APIResources, func(res metav1.APIResource) bool { return res.Name == name })
}

// setUp installs the CRD when the run does, and waits until it is
// Established and its kind served.
func (r *resource) setUp(ctx context.Context) error {
	if !r.install {
		return r.resolve(ctx)
	}
	crd := r.m.crd.DeepCopy()
	labels := map[string]string{}
	maps.Copy(labels, crd.GetLabels())
	maps.Copy(labels, k8s.Labels(r.env.RunID))
	crd.SetLabels(labels)
	crds := r.env.AdminDynamic.Resource(crdResource)
	switch old, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{}); {
	case err == nil && old.GetLabels()[k8s.LabelManagedBy] != "kb-bench":
		// The user's own: the run uses it and leaves it.
		fmt.Fprintf(r.env.Log, "note: CustomResourceDefinition %s is already on the target: using it, not the manifest's\n", crd.GetName())
		r.install = false
		return r.resolve(ctx)
	case err == nil:
		// The janitor: a run killed before it could clean up left it.
		r.env.Warn("deleting CustomResourceDefinition %s, which run %s installed and left (it was killed before it could clean up)", crd.GetName(), old.GetLabels()[k8s.LabelRunID])
		if err := r.deleteCRD(ctx); err != nil {
			return err
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("looking for CustomResourceDefinition %s: %w", crd.GetName(), err)
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("installing CustomResourceDefinition %s: %w", crd.GetName(), err)
	}
	if err := r.resolve(ctx); err != nil {
		return err
	}
	// Established, then served: the first create can otherwise answer 404.
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
				_, err := r.env.AdminDynamic.Resource(r.gvr).Namespace(r.env.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
				return err == nil, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CustomResourceDefinition %s to be established: %w", crd.GetName(), err)
	}
	return nil
}

// tearDown deletes the CRD the run installed (and so every object of its
// kind), unless the run keeps what it made.
func (r *resource) tearDown(ctx context.Context) error {
	if !r.install || r.env.Spec.Keep {
		return nil
	}
	return r.deleteCRD(ctx)
}

// deleteCRD deletes the manifest's CRD and waits until it is gone (its
// objects with it), so that the next run can install it again.
func (r *resource) deleteCRD(ctx context.Context) error {
	name, crds := r.m.crd.GetName(), r.env.AdminDynamic.Resource(crdResource)
	err := crds.Delete(ctx, name, metav1.DeleteOptions{})
	if err == nil {
		err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting CustomResourceDefinition %s, which the run installed: %w (delete it by hand: kubectl delete crd %s)", name, err, name)
	}
	return nil
}

// value is v as the field holds it.
func (r *resource) value(v int64) any {
	if r.field.str {
		return strconv.FormatInt(v, 10)
	}
	return v
}

func (r *resource) create(ctx context.Context, name string, labels, data map[string]string) error {
	obj := r.m.obj.DeepCopy()
	// What a server set on the object the manifest was read from
	// (kubectl get -o yaml) is not for a new one.
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetManagedFields(nil)
	obj.SetOwnerReferences(nil)
	obj.SetGenerateName("")
	obj.SetName(name)
	obj.SetNamespace(r.env.Namespace)
	all := map[string]string{}
	maps.Copy(all, obj.GetLabels())
	maps.Copy(all, labels)
	obj.SetLabels(all)
	if filler, ok := data[fillerKey]; ok {
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[k8s.LabelRunID+"-filler"] = filler
		obj.SetAnnotations(ann)
	}
	_, counted := data[counterKey]
	if counted {
		if err := unstructured.SetNestedField(obj.Object, r.value(0), r.field.path...); err != nil {
			return fmt.Errorf("setting %s in %s: %w", r.field, name, err)
		}
	} else {
		unstructured.RemoveNestedField(obj.Object, r.field.path...)
	}
	ri := r.env.AdminDynamic.Resource(r.gvr).Namespace(r.env.Namespace)
	made, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating %s %s: %w", obj.GetKind(), name, err)
	}
	if len(r.sub) > 0 && counted {
		// A create ignores the status: start the field there.
		if err := unstructured.SetNestedField(made.Object, r.value(0), r.field.path...); err != nil {
			return err
		}
		if _, err := ri.UpdateStatus(ctx, made, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("starting %s's %s at 0: %w", name, r.field, err)
		}
	}
	return nil
}

func (r *resource) readBack(ctx context.Context, runID string, _ []string) (map[string]map[string]string, error) {
	objects := map[string]map[string]string{}
	ri := r.env.AdminDynamic.Resource(r.gvr).Namespace(r.env.Namespace)
	opts := metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + runID, Limit: 20}
	for {
		list, err := ri.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("reading the objects back to check them: %w", err)
		}
		for _, item := range list.Items {
			data := map[string]string{}
			if v, ok, _ := unstructured.NestedFieldNoCopy(item.Object, r.field.path...); ok {
				data[counterKey] = fmt.Sprint(v)
			}
			objects[item.GetName()] = data
		}
		if list.GetContinue() == "" {
			return objects, nil
		}
		opts.Continue = list.GetContinue()
	}
}

func (r *resource) fieldOf(string) fieldRef { return r.field }

func (r *resource) objects(w int) objects {
	return &resourceObjects{r: r, ri: r.env.DynamicClient(w).Resource(r.gvr).Namespace(r.env.Namespace)}
}

// resourceObjects is a writer's access to the run's objects.
type resourceObjects struct {
	r  *resource
	ri dynamic.ResourceInterface
}

func (o *resourceObjects) get(ctx context.Context, name, _, rv string) (version, error) {
	obj, err := o.ri.Get(ctx, name, metav1.GetOptions{ResourceVersion: rv})
	if err != nil {
		return version{}, err
	}
	return o.r.versionOf(obj)
}

// versionOf is obj as a writer read it: a GET's answer, or an informer's
// copy (cached).
func (r *resource) versionOf(obj *unstructured.Unstructured) (version, error) {
	v := version{obj: obj, rv: obj.GetResourceVersion()}
	raw, found, _ := unstructured.NestedFieldNoCopy(obj.Object, r.field.path...)
	var err error
	switch raw := raw.(type) {
	case int64:
		v.value = raw
	case float64:
		v.value = int64(raw)
	case string:
		v.value, err = strconv.ParseInt(raw, 10, 64)
	default:
		if found {
			err = fmt.Errorf("it holds %v", raw)
		}
	}
	if err != nil {
		err = fmt.Errorf("%s's %s is not a number (%w): another client wrote the object; run again in a fresh namespace", obj.GetName(), r.field, err)
	}
	return v, err
}

// The pieces a read source over an informer needs (issue 38): the run's
// objects listed and watched through writer w's client, an empty object
// of the type, and a cached object as a writer's version.

// listWatch lists and watches the objects of run runID through writer
// w's client.
func (r *resource) listWatch(w int, runID string) cache.ListerWatcher {
	ri, selector := r.env.DynamicClient(w).Resource(r.gvr).Namespace(r.env.Namespace), k8s.LabelRunID+"="+runID
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return ri.Watch(ctx, o)
		},
	}
}

// example is an empty object of the type, as an informer wants one.
func (r *resource) example() runtime.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.m.obj.GroupVersionKind())
	return u
}

// cached is an informer's object as a writer's version: a deep copy,
// which the writer may modify.
func (r *resource) cached(obj any, _ string) (version, error) {
	return r.versionOf(obj.(*unstructured.Unstructured).DeepCopy())
}

func (o *resourceObjects) update(ctx context.Context, v version, _ string, value int64, precondition bool) (string, error) {
	obj := v.obj.(*unstructured.Unstructured)
	if err := unstructured.SetNestedField(obj.Object, o.r.value(value), o.r.field.path...); err != nil {
		return "", err
	}
	if !precondition {
		obj.SetResourceVersion("")
	}
	return madeVersion(o.ri.Update(ctx, obj, metav1.UpdateOptions{}, o.r.sub...))
}

func (o *resourceObjects) patch(ctx context.Context, name string, pt types.PatchType, body []byte) (string, error) {
	return madeVersion(o.ri.Patch(ctx, name, pt, body, metav1.PatchOptions{}, o.r.sub...))
}

func (o *resourceObjects) apply(ctx context.Context, name, _ string, value int64, opts metav1.ApplyOptions) (string, error) {
	a := &unstructured.Unstructured{}
	a.SetGroupVersionKind(o.r.m.obj.GroupVersionKind())
	a.SetName(name)
	a.SetNamespace(o.r.env.Namespace)
	if err := unstructured.SetNestedField(a.Object, o.r.value(value), o.r.field.path...); err != nil {
		return "", err
	}
	return madeVersion(o.ri.Apply(ctx, name, a, opts, o.r.sub...))
}

// madeVersion is the resourceVersion a write made, "" when it failed.
func madeVersion(obj *unstructured.Unstructured, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return obj.GetResourceVersion(), nil
}
