// Package k8s is the house's Kubernetes toolbox, below the engine and its
// scenarios: the labels and field managers on what kb-bench creates, the
// RBAC rules and Roles that grant what it asks for, client configuration,
// setup helpers and how a failed request is explained.
package k8s

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// Labels and field managers on everything kb-bench creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelRunID     = "kb-bench.io/run-id"
	// SetupManager is the field manager of objects created before the run.
	SetupManager = "kb-bench-setup"
	// PauseImage is the image of the Pods scenarios create; no node runs
	// them, so it is never pulled.
	PauseImage = "registry.k8s.io/pause:3.10"
	// SchedulingGate keeps those Pods Pending on clusters that have a
	// scheduler: they are there to be written, not run.
	SchedulingGate = "kb-bench.io/never-schedule"
)

// Pod is a Pod that never runs, for a scenario to write: its one
// container ctr runs PauseImage, behind SchedulingGate, with no service
// account token.
func Pod(name string, labels map[string]string, ctr corev1.Container) *corev1.Pod {
	ctr.Image = PauseImage
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{ctr},
			SchedulingGates:              []corev1.PodSchedulingGate{{Name: SchedulingGate}},
			AutomountServiceAccountToken: new(false),
		},
	}
}

// Labels are the labels of the run's namespace and objects.
func Labels(runID string) map[string]string {
	return map[string]string{LabelManagedBy: "kb-bench", LabelRunID: runID}
}

// CreateAll creates what (e.g. "Pods") before the run, calling create for
// every name, a few at a time, and stops at the first error (returning
// every error seen).
func CreateAll(ctx context.Context, what string, names []string, create func(ctx context.Context, name string) error) error {
	const parallel = 8
	next := make(chan string)
	errs := make(chan error, parallel)
	var wg sync.WaitGroup
	for range min(parallel, len(names)) {
		wg.Go(func() {
			for name := range next {
				if err := create(ctx, name); err != nil {
					errs <- err
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
		return fmt.Errorf("%w (the %s are created before the run; check the credentials and the apiserver)", err, what)
	}
	return nil
}

// EnsureDefaultServiceAccount creates the namespace's default
// ServiceAccount, which Pod admission needs and which no controller creates
// on the local control plane.
func EnsureDefaultServiceAccount(ctx context.Context, kube kubernetes.Interface, ns string) error {
	if _, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
		return nil // made by the service account controller, or earlier
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{FieldManager: SetupManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/default, which Pod admission needs: %w%s", ns, err, Why(err, "create ServiceAccounts there", 0))
	}
	return nil
}

// Why explains a failed setup request in a parenthesis: what to grant
// when it was refused (grant: "create namespaces"), that the apiserver did
// not answer within the operation timeout when it timed out, nothing for
// other errors.
func Why(err error, grant string, timeout time.Duration) string {
	var netErr net.Error
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return " (check that kb-bench may " + grant + ")"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
		if timeout <= 0 {
			return " (the apiserver did not answer in time: is it overloaded or hung?)"
		}
		return fmt.Sprintf(" (the apiserver did not answer within %s, the --op-timeout: is it overloaded or hung?)", timeout)
	}
	return ""
}

// ErrNotSent marks a request that never left the client, so it cannot have
// reached the apiserver: held back until its deadline by the client-side
// rate limiter (this error itself), or by the engine's hold at a window's edge or its stream
// queue (errors that match it with errors.Is).
var ErrNotSent = errors.New("the client-side rate limiter had no token for this request before the operation's deadline, so it was not sent (raise the client QPS and burst, or the operation timeout)")

// MayHaveLanded reports whether a failed write may still have been applied:
// a timeout or a 5xx (the apiserver may have committed to etcd before
// failing), or an error with no answer from the apiserver at all (a broken
// connection). A 409, 422, 429 or any other answered rejection is certain,
// and so is a write that was never sent.
func MayHaveLanded(outcome metrics.Outcome, err error) bool {
	if errors.Is(err, ErrNotSent) {
		return false
	}
	switch outcome {
	case metrics.Timeout, metrics.ServerError:
		return true
	case metrics.Other:
		var status apierrors.APIStatus
		return !errors.As(err, &status)
	}
	return false
}

// Sleep waits d, or until ctx is done; it reports whether the whole d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// OwnKinds lists, for kubectl, every kind of object kb-bench may create in
// a namespace it was given (--namespace): the scenarios' objects, the
// coordination Leases, and the shard Job's pods and rights.
const OwnKinds = "configmaps,pods,leases,resourcequotas,jobs,roles,rolebindings,serviceaccounts"

// ClientConfig returns a copy of base with the Spec's client settings applied:
// QPS and Burst (a negative QPS means no client-side limit), content type
// and user agent. ContentDefault leaves the content type to client-go, as
// real clients do: its typed clients then send protobuf for built-in types
// (rest.Request.UseProtobufAsDefault) and JSON for apply patches.
func ClientConfig(base *rest.Config, c spec.Client, version string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS = c.QPS
	cfg.Burst = c.Burst
	switch c.ContentType {
	case spec.ContentProtobuf:
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	case spec.ContentJSON:
		cfg.ContentType = runtime.ContentTypeJSON
		cfg.AcceptContentTypes = runtime.ContentTypeJSON
	case spec.ContentCBOR:
		allowCBOR()
		cfg.ContentType = runtime.ContentTypeCBOR
		cfg.AcceptContentTypes = runtime.ContentTypeCBOR + "," + runtime.ContentTypeJSON
	default:
		cfg.ContentType, cfg.AcceptContentTypes = "", ""
	}
	cfg.UserAgent = cmp.Or(c.UserAgent, "kb-bench/"+version)
	return cfg
}

// allowCBOR turns on client-go's ClientsAllowCBOR gate (alpha, off by
// default), without which client-go silently sends JSON for a CBOR config.
// It is process-wide, and only allows: each config still chooses.
func allowCBOR() {
	if g, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	}); ok {
		_ = g.Set(clientfeatures.ClientsAllowCBOR, true)
	}
}

// Rule is a PolicyRule for resources of one API group ("" for core).
func Rule(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
}

// Named is a Rule for the objects called name only.
func Named(group string, resources []string, name string, verbs ...string) rbacv1.PolicyRule {
	r := Rule(group, resources, verbs...)
	r.ResourceNames = []string{name}
	return r
}

// Role grants rules in namespace ns.
func Role(ns, name string, labels map[string]string, rules []rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{TypeMeta: rbacMeta("Role"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Rules: rules}
}

// RoleBinding binds the Role called name in namespace ns (the binding's
// name too) to subject.
func RoleBinding(ns, name string, labels map[string]string, subject rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   rbacMeta("RoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
}

// ClusterRole grants rules in every namespace, or on paths that belong to
// none (/metrics).
func ClusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{TypeMeta: rbacMeta("ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

// ClusterRoleBinding, called name, binds the ClusterRole called role to
// subject.
func ClusterRoleBinding(name, role string, subject rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   rbacMeta("ClusterRoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
}

// rbacMeta is the type of an RBAC object of kind.
func rbacMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}
