package counter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
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

// readObjects lists the run's objects and keeps, for each, only the data
// under keys (not the filler), so memory stays small for large objects.
func readObjects(ctx context.Context, cms corev1client.ConfigMapInterface, runID string, keys []string) (map[string]map[string]string, error) {
	objects := map[string]map[string]string{}
	opts := metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + runID, Limit: 20}
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
