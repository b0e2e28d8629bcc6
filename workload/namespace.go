package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
)

// cleanupTimeout bounds deleting the namespace (and verifying) after a run,
// which use a context of their own so that they happen after Ctrl-C too.
const cleanupTimeout = 30 * time.Second

// createNamespace creates the run's namespace.
func createNamespace(ctx context.Context, kube kubernetes.Interface, name, runID string, timeout time.Duration) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: k8s.Labels(runID)}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: k8s.SetupManager})
	switch {
	case err == nil:
		return nil
	case apierrors.IsAlreadyExists(err):
		return spec.Input(fmt.Errorf("namespace %s already exists: another run used run id %q; pick another run id or delete the namespace", name, runID))
	case apierrors.IsInvalid(err):
		return spec.Input(fmt.Errorf("run id %q does not make a valid namespace name %s: use lowercase letters, digits and '-', at most 54 characters: %w", runID, name, err))
	}
	err = fmt.Errorf("creating namespace %s: %w%s", name, err, k8s.Why(err, "create namespaces (or run in an existing one: --namespace, see 'kb-bench rbac')", timeout))
	if apierrors.IsForbidden(err) {
		return spec.Input(err) // the user can fix it
	}
	return err
}

// rootCAWait bounds the wait for kube-controller-manager's ConfigMaps.
const rootCAWait = 30 * time.Second

// rootCA is the ConfigMap kube-controller-manager's root CA publisher
// puts in every namespace.
const rootCA = "kube-root-ca.crt"

// waitForRootCA waits until kube-controller-manager's root CA publisher is
// done: kube-root-ca.crt is in namespace ns and in every other namespace
// that is not being deleted. On a cluster made a moment ago (a kind
// cluster created for the run) the publisher is still filling the
// system namespaces: its writes would land in the measured window, where
// the apiserver counts them with kb-bench's on the same resource.
func waitForRootCA(ctx context.Context, kube kubernetes.Interface, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, rootCAWait)
	defer cancel()
	var missing []string
	for {
		var err error
		if missing, err = withoutRootCA(ctx, kube, ns); err == nil && len(missing) == 0 {
			return nil
		}
		if !k8s.Sleep(ctx, 50*time.Millisecond) {
			if err == nil {
				err = fmt.Errorf("it is missing in %s", strings.Join(missing, ", "))
			}
			return fmt.Errorf("kube-controller-manager did not put %s in every namespace within %s (%v): its writes may land in the measured window", rootCA, rootCAWait, err)
		}
	}
}

// withoutRootCA lists the namespaces, ns first, that lack kube-root-ca.crt
// and are not being deleted (the publisher cannot write there); only ns
// when the others may not be read.
func withoutRootCA(ctx context.Context, kube kubernetes.Interface, ns string) ([]string, error) {
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, rootCA, metav1.GetOptions{}); err != nil {
		return []string{ns}, err
	}
	nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil, nil // only ns is kb-bench's to wait for
	}
	if err != nil {
		return nil, err
	}
	cms, err := kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + rootCA})
	if apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	has := map[string]bool{}
	for _, cm := range cms.Items {
		has[cm.Namespace] = true
	}
	var missing []string
	for _, n := range nss.Items {
		if !has[n.Name] && n.Status.Phase != corev1.NamespaceTerminating && n.DeletionTimestamp == nil {
			missing = append(missing, n.Name)
		}
	}
	return missing, nil
}

// namespaceMissing reports whether err is the apiserver saying the
// namespace ns does not exist.
func namespaceMissing(err error, ns string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == ns
}

// deleteCollections deletes the objects of each kind in ns that match
// selector ("" for all), with one call per kind.
func deleteCollections(ctx context.Context, kube kubernetes.Interface, ns, selector string, kinds []groupResource) error {
	opts, list := metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector}
	var errs []error
	for _, k := range kinds {
		var err error
		switch k {
		case groupResource{"", "configmaps"}:
			err = kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, opts, list)
		case groupResource{"", "pods"}:
			err = kube.CoreV1().Pods(ns).DeleteCollection(ctx, opts, list)
		case groupResource{"", "resourcequotas"}:
			err = kube.CoreV1().ResourceQuotas(ns).DeleteCollection(ctx, opts, list)
		case groupResource{"coordination.k8s.io", "leases"}:
			err = kube.CoordinationV1().Leases(ns).DeleteCollection(ctx, opts, list)
		case groupResource{"batch", "jobs"}: // a distributed run's shards (distributed/job)
			err = kube.BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}, list)
		case groupResource{"rbac.authorization.k8s.io", "roles"}:
			err = kube.RbacV1().Roles(ns).DeleteCollection(ctx, opts, list)
		case groupResource{"rbac.authorization.k8s.io", "rolebindings"}:
			err = kube.RbacV1().RoleBindings(ns).DeleteCollection(ctx, opts, list)
		default: // a run's own kind (counter --manifest)
			err = deleteAny(ctx, kube, ns, selector, k)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%s: %w", k.resource, err))
		}
	}
	return errors.Join(errs...)
}

// deleteAny deletes the objects of any namespaced kind the apiserver
// serves, in the group's preferred version; a group no longer served
// (its CRD went with the run) has none left.
func deleteAny(ctx context.Context, kube kubernetes.Interface, ns, selector string, k groupResource) error {
	rc := kube.CoreV1().RESTClient()
	if k.group == "" {
		return rc.Delete().AbsPath("/api/v1/namespaces", ns, k.resource).Param("labelSelector", selector).Do(ctx).Error()
	}
	groups, err := kube.Discovery().ServerGroups()
	if err != nil {
		return err
	}
	for _, g := range groups.Groups {
		if g.Name == k.group {
			return rc.Delete().AbsPath("/apis", g.PreferredVersion.GroupVersion, "namespaces", ns, k.resource).
				Param("labelSelector", selector).Do(ctx).Error()
		}
	}
	return nil
}

// deleteOwn deletes the run's labelled objects of the kinds it creates from
// an existing namespace; the namespace and everything else in it stay.
func deleteOwn(ctx context.Context, kube kubernetes.Interface, ns, runID string, kinds []groupResource) error {
	selector := k8s.LabelRunID + "=" + runID
	if err := deleteCollections(ctx, kube, ns, selector, kinds); err != nil {
		return fmt.Errorf("deleting the run's objects from namespace %s: %w (delete them by hand: kubectl delete -n %s %s -l %s)", ns, err, ns, k8s.OwnKinds, selector)
	}
	return nil
}

// deleteNamespace deletes the run's namespace. The kinds of object the
// run's scenario creates there are deleted first, one call each: a namespace's contents are
// removed by the namespace controller, which a bare local control plane
// does not run. With finalize set (the target runs no namespace
// controller), the namespace's finalizer is then removed as that
// controller would, so the namespace is really gone instead of staying
// Terminating. Everything in the namespace is the run's own.
func deleteNamespace(ctx context.Context, kube kubernetes.Interface, name string, kinds []groupResource, finalize bool) error {
	errs := []error{deleteCollections(ctx, kube, name, "", kinds)}
	if err := kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
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
