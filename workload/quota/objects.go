package quota

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/internal/k8s"
)

// gpu is the extended resource each Pod requests.
const gpu corev1.ResourceName = "nvidia.com/gpu"

// objectKind is what the writers create for a quota'd resource.
type objectKind struct {
	plural string
	// create creates (or, with dryRun, admits only) the object called name.
	create func(ctx context.Context, c kubernetes.Interface, ns, name string, size int, dryRun bool) error
	// usage counts what the existing objects use of the resource.
	usage func(ctx context.Context, c kubernetes.Interface, ns string) (int64, error)
}

// kindFor returns the objects that use res: mere "objects", that cannot be
// created, for a resource the scenario does not support.
func kindFor(res string) objectKind {
	switch res {
	case ResourceConfigMaps:
		return objectKind{plural: "ConfigMaps", create: createConfigMap, usage: configMapUsage}
	case ResourceGPU:
		return objectKind{plural: "Pods", create: createPod, usage: podUsage}
	}
	return objectKind{plural: "objects"}
}

func createOptions(dryRun bool) metav1.CreateOptions {
	if dryRun {
		return metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return metav1.CreateOptions{}
}

func createConfigMap(ctx context.Context, c kubernetes.Interface, ns, name string, size int, dryRun bool) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"by": "kb-bench"},
	}
	if size > 0 {
		cm.Data["filler"] = strings.Repeat("x", size)
	}
	_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, createOptions(dryRun))
	return err
}

func configMapUsage(ctx context.Context, c kubernetes.Interface, ns string) (int64, error) {
	list, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return int64(len(list.Items)), nil
}

func createPod(ctx context.Context, c kubernetes.Interface, ns, name string, _ int, dryRun bool) error {
	one := corev1.ResourceList{gpu: resource.MustParse("1")}
	pod := k8s.Pod(name, nil, corev1.Container{Name: "gpu", Resources: corev1.ResourceRequirements{Requests: one, Limits: one}})
	_, err := c.CoreV1().Pods(ns).Create(ctx, pod, createOptions(dryRun))
	return err
}

// podUsage sums the nvidia.com/gpu requests of the Pods that count against
// quota: those not yet Succeeded or Failed.
func podUsage(ctx context.Context, c kubernetes.Interface, ns string) (int64, error) {
	list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			if q, ok := ctr.Resources.Requests[gpu]; ok {
				n += q.Value()
			}
		}
	}
	return n, nil
}
