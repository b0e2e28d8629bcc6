package workload

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// The root CA publisher is done when kube-root-ca.crt is in the run's
// namespace and in every other one it can write to: on a cluster made a
// moment ago, a system namespace still without it means its write is yet
// to come.
func TestWithoutRootCA(t *testing.T) {
	ns := func(name string, terminating bool) runtime.Object {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if terminating {
			n.Status.Phase = corev1.NamespaceTerminating
		}
		return n
	}
	ca := func(namespace string) runtime.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rootCA, Namespace: namespace}}
	}
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		want    []string
	}{
		{"the run's namespace first", []runtime.Object{ns("run", false), ns("default", false), ca("default")}, []string{"run"}},
		{"a system namespace still to fill", []runtime.Object{ns("run", false), ca("run"), ns("default", false), ca("default"), ns("kube-system", false)}, []string{"kube-system"}},
		{"done; a namespace being deleted is not waited for", []runtime.Object{ns("run", false), ca("run"), ns("default", false), ca("default"), ns("old", true)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(tc.objects...)
			got, _ := withoutRootCA(context.Background(), kube, "run")
			if !slices.Equal(got, tc.want) {
				t.Errorf("missing in %v, want %v", got, tc.want)
			}
		})
	}
}
