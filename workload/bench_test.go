package workload

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
)

// BenchmarkVsBareClientGo compares, on the local control plane, kb-bench's
// default run (update strategy, one object, client-go's default settings)
// with a bare client-go read-modify-write loop with the same writers. Each
// iteration runs one window of each, in alternating order, so that drift on
// the machine (and etcd's growing history) hits both alike; it reports both
// throughputs, conflicts included (as kb-bench counts them), and kb-bench's
// as a share of the bare loop's. Compare runs with benchstat:
//
//	go test -run='^$' -bench=VsBare -benchtime=10x -count=3 ./workload/
func BenchmarkVsBareClientGo(b *testing.B) {
	cfg := local.Config(b)
	// Each side pays a fixed cost per window (kb-bench: the /metrics
	// scrapes at its edges, which the apiserver then collects garbage
	// after); 3 s windows keep it small, as a real run's 10 s does.
	window := 3 * time.Second
	for _, writers := range []int{1, 8} {
		b.Run("writers="+strconv.Itoa(writers), func(b *testing.B) {
			var bare, engine float64
			i := 0
			for b.Loop() {
				for k := range 2 {
					if (i+k)%2 == 0 {
						bare += bareLoop(b, cfg, writers, window)
						continue
					}
					s := spec.Spec{Writers: writers, Duration: spec.D(window)}
					out, err := Run(context.Background(), resolved(b, s), Options{Config: cfg, RunID: runID(), Version: "test", FinalizeNamespace: true})
					if err != nil {
						b.Fatal(err)
					}
					engine += out.Result.Summary.Throughput
				}
				i++
			}
			b.ReportMetric(bare/float64(b.N), "bare-ops/s")
			b.ReportMetric(engine/float64(b.N), "kb-bench-ops/s")
			b.ReportMetric(100*engine/bare, "kb-bench/bare-%")
		})
	}
}

// bareLoop runs writers goroutines of a bare client-go read-modify-write
// (GET, add one, PUT with the read resourceVersion; a 409 ends the
// operation, as in kb-bench's update) on one object, with client-go's
// default settings but no client-side rate limit, in a namespace of its own
// for window, and returns operations per second.
func bareLoop(b *testing.B, base *rest.Config, writers int, window time.Duration) float64 {
	b.Helper()
	ctx := context.Background()
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ns := "kb-bench-" + runID()
	if err := createNamespace(ctx, kube, ns, "bare", time.Minute); err != nil {
		b.Fatal(err)
	}
	defer deleteNamespace(ctx, kube, ns, []groupResource{{"", "configmaps"}}, true)
	cms := kube.CoreV1().ConfigMaps(ns)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kb-bench-0", Labels: k8s.Labels("bare")}, Data: map[string]string{"counter": "0"}}
	if _, err := cms.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var ops atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(window)
	for range writers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				cm, err := cms.Get(ctx, "kb-bench-0", metav1.GetOptions{})
				if err == nil {
					v, _ := strconv.Atoi(cm.Data["counter"])
					cm.Data["counter"] = strconv.Itoa(v + 1)
					_, _ = cms.Update(ctx, cm, metav1.UpdateOptions{})
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(ops.Load()) / time.Since(start).Seconds()
}
