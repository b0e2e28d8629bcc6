package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// cleanupTimeout bounds deleting the namespace (and verifying) after a run,
// which use a context of their own so that they happen after Ctrl-C too.
const cleanupTimeout = 30 * time.Second

// createNamespace creates the run's namespace.
func createNamespace(ctx context.Context, kube kubernetes.Interface, name, runID string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: scenario.Labels(runID)}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: scenario.SetupManager})
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
