package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kb-bench/kb-bench/spec"
)

// Labels on everything kb-bench creates.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelRunID     = "kb-bench.io/run-id"
	setupManager   = "kb-bench-setup" // field manager of the objects' creation
)

// cleanupTimeout bounds deleting the namespace (and verifying) after a run,
// which use a context of their own so that they happen after Ctrl-C too.
const cleanupTimeout = 30 * time.Second

func runLabels(runID string) map[string]string {
	return map[string]string{labelManagedBy: "kb-bench", labelRunID: runID}
}

// createNamespace creates the run's namespace.
func createNamespace(ctx context.Context, kube kubernetes.Interface, name, runID string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: runLabels(runID)}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: setupManager})
	switch {
	case err == nil:
		return nil
	case apierrors.IsAlreadyExists(err):
		return spec.Input(fmt.Errorf("namespace %s already exists: another run used run id %q; pick another run id or delete the namespace", name, runID))
	case apierrors.IsInvalid(err):
		return spec.Input(fmt.Errorf("run id %q does not make a valid namespace name %s: use lowercase letters, digits and '-', at most 54 characters: %w", runID, name, err))
	}
	return fmt.Errorf("creating namespace %s: %w (check that the credentials may create namespaces)", name, err)
}

// deleteNamespace deletes the run's namespace with a fresh context, so it
// happens after Ctrl-C too. The kinds of object kb-bench's scenarios create
// there are deleted first, one call each: a namespace's contents are removed
// by the namespace controller, which a bare local control plane does not
// run. With finalize set (the target runs no namespace controller), the
// namespace's finalizer is then removed as that controller would, so the
// namespace is really gone instead of staying Terminating. Everything in the
// namespace is the run's own.
func deleteNamespace(ctx context.Context, kube kubernetes.Interface, name string, finalize bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	all, opts := metav1.ListOptions{}, metav1.DeleteOptions{}
	errs := []error{
		kube.CoreV1().ConfigMaps(name).DeleteCollection(ctx, opts, all),
		kube.CoreV1().Pods(name).DeleteCollection(ctx, opts, all),
		kube.CoordinationV1().Leases(name).DeleteCollection(ctx, opts, all),
		kube.CoreV1().ResourceQuotas(name).DeleteCollection(ctx, opts, all),
		kube.CoreV1().ServiceAccounts(name).DeleteCollection(ctx, opts, all),
		kube.CoreV1().Namespaces().Delete(ctx, name, opts),
	}
	for i, err := range errs {
		if apierrors.IsNotFound(err) {
			errs[i] = nil
		}
	}
	if finalize && errors.Join(errs...) == nil {
		errs = append(errs, finalizeNamespace(ctx, kube, name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting namespace %s: %w (delete it by hand: kubectl delete namespace %s)", name, err, name)
	}
	return nil
}

// finalizeNamespace clears a deleted namespace's finalizers, the namespace
// controller's last step; the apiserver then removes the namespace.
func finalizeNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	ns, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ns.Spec.Finalizers = nil
	if _, err := kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizing: %w", err)
	}
	return nil
}

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
func initialData(s spec.Spec, keys []string, filler string) map[string]string {
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

// createObjects creates the benchmark ConfigMaps, a few at a time.
func createObjects(ctx context.Context, cms corev1client.ConfigMapInterface, names []string, labels, data map[string]string) error {
	const parallel = 8
	next := make(chan string)
	errs := make(chan error, parallel)
	var wg sync.WaitGroup
	for range min(parallel, len(names)) {
		wg.Go(func() {
			for name := range next {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}
				if _, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: setupManager}); err != nil {
					errs <- fmt.Errorf("creating ConfigMap %s: %w", name, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for _, name := range names {
		select {
		case next <- name:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	if err != nil {
		return fmt.Errorf("%w (the objects are created before the run; check the credentials and the apiserver)", err)
	}
	return nil
}

// readObjects lists the run's objects and keeps, for each, only the data
// under keys (not the filler), so memory stays small for large objects.
func readObjects(ctx context.Context, cms corev1client.ConfigMapInterface, runID string, keys []string) (map[string]map[string]string, error) {
	objects := map[string]map[string]string{}
	opts := metav1.ListOptions{LabelSelector: labelRunID + "=" + runID, Limit: 20}
	for {
		list, err := cms.List(ctx, opts)
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
