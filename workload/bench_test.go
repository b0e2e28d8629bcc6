package workload

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/spec"
)

// cannedTransport answers every request with the same ConfigMap, in
// process: what is left to measure is client-go's and the engine's own work.
type cannedTransport struct{ body []byte }

func (c cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(c.body)),
		Request:    r,
	}, nil
}

// benchCase is one strategy the benchmarks run.
type benchCase struct {
	name string
	spec spec.Spec
}

// benchStrategies are the write strategies both benchmarks compare.
var benchStrategies = []benchCase{
	{"update", spec.Spec{Strategy: spec.StrategyUpdate}},
	{"retry", spec.Spec{Strategy: spec.StrategyRetry}},
	{"merge-patch", spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchMerge}},
	{"json-patch", spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchJSON}},
	{"ssa", spec.Spec{Strategy: spec.StrategySSA}},
}

// BenchmarkOperation is the cost of one engine operation (read, modify,
// write, record) per strategy over the in-process transport. Compare with
// BenchmarkBareClientGo, the same GET and PUT without the engine: the
// difference is the engine's overhead per operation.
func BenchmarkOperation(b *testing.B) {
	cm := cannedConfigMap(b, "kb-bench-0", "100", map[string]string{"counter": "5", "filler": "0123456789abcdef"})
	for _, tt := range benchStrategies {
		b.Run(tt.name, func(b *testing.B) {
			tt.spec.Writers = 1
			c, _, _ := fakeRun(b, tt.spec, cannedTransport{cm})
			w := c.writers[0]
			b.ReportAllocs()
			for b.Loop() {
				w.do(time.Now())
			}
		})
	}
}

// stubConfigMaps answers the calls a writer makes with one object, without
// client-go, so BenchmarkEngineOverhead measures the engine alone.
type stubConfigMaps struct {
	corev1client.ConfigMapInterface // not called
	cm                              *corev1.ConfigMap
}

func (s stubConfigMaps) Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error) {
	return s.cm, nil
}

func (s stubConfigMaps) Update(context.Context, *corev1.ConfigMap, metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	return s.cm, nil
}

func (s stubConfigMaps) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.ConfigMap, error) {
	return s.cm, nil
}

func (s stubConfigMaps) Apply(context.Context, *applycorev1.ConfigMapApplyConfiguration, metav1.ApplyOptions) (*corev1.ConfigMap, error) {
	return s.cm, nil
}

// BenchmarkEngineOverhead is what the engine adds to an operation besides
// the client-go calls themselves: the operation's timeout context, timing,
// choosing, building the write, classifying, the correctness tally and
// recording the read, the write and the operation.
func BenchmarkEngineOverhead(b *testing.B) {
	for _, tt := range append(benchStrategies, benchCase{
		"update-zipf-disjoint", spec.Spec{Strategy: spec.StrategyUpdate, Objects: 100, Fields: spec.FieldsDisjoint, Distribution: spec.Distribution{Kind: spec.DistZipf}},
	}) {
		b.Run(tt.name, func(b *testing.B) {
			tt.spec.Writers = 1
			c, _, _ := fakeRun(b, tt.spec, cannedTransport{})
			w := c.writers[0]
			w.cms = stubConfigMaps{cm: &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "kb-bench-0", ResourceVersion: "100"},
				Data:       map[string]string{"counter": "5", "w-0": "5"},
			}}
			b.ReportAllocs()
			for b.Loop() {
				w.do(time.Now())
			}
		})
	}
}

// BenchmarkBareClientGo is a bare client-go read-modify-write (GET, set the
// field, PUT) over the same transport and client settings.
func BenchmarkBareClientGo(b *testing.B) {
	cm := cannedConfigMap(b, "kb-bench-0", "100", map[string]string{"counter": "5", "filler": "0123456789abcdef"})
	cfg := restConfig(&rest.Config{Host: "http://fake.invalid", Transport: cannedTransport{cm}}, spec.Default().Client, "test")
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cms := kube.CoreV1().ConfigMaps("kb-bench-test")
	b.ReportAllocs()
	for b.Loop() {
		if err := bareReadModifyWrite(ctx, cms.Get, cms.Update); err != nil {
			b.Fatal(err)
		}
	}
}

// bareReadModifyWrite is what a user would write by hand: GET, add one,
// PUT with the read resourceVersion.
func bareReadModifyWrite(ctx context.Context,
	get func(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error),
	update func(context.Context, *corev1.ConfigMap, metav1.UpdateOptions) (*corev1.ConfigMap, error),
) error {
	cm, err := get(ctx, "kb-bench-0", metav1.GetOptions{})
	if err != nil {
		return err
	}
	v, _ := strconv.Atoi(cm.Data["counter"])
	cm.Data["counter"] = strconv.Itoa(v + 1)
	_, err = update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// TestThroughputVsBareClientGo runs, on the local control plane, kb-bench's
// update strategy and a bare client-go read-modify-write loop with the same
// writers on one object, in alternating short rounds (which goes first
// alternates too, and a first round of each is discarded as warm-up), and
// compares throughput. It takes about 30 s, so it runs only with
// KB_BENCH_SIDE_BY_SIDE=1.
func TestThroughputVsBareClientGo(t *testing.T) {
	if os.Getenv("KB_BENCH_SIDE_BY_SIDE") == "" {
		t.Skip("side-by-side throughput comparison: set KB_BENCH_SIDE_BY_SIDE=1 to run it (about 30 s)")
	}
	cfg := local.Config(t)
	const writers, rounds = 8, 10
	window := 1500 * time.Millisecond
	var bare, engine float64
	var ratios []float64
	for round := range rounds + 1 {
		var b, e float64
		var bcpu, ecpu time.Duration
		for i := range 2 {
			cpu0 := cpuTime()
			if (i+round)%2 == 0 {
				b = bareLoop(t, cfg, writers, window)
				bcpu = cpuTime() - cpu0
				continue
			}
			s := spec.Spec{Writers: writers, Objects: 1, Duration: spec.D(window)}
			s.Defaults()
			res, err := Run(context.Background(), s, Options{Config: cfg, RunID: runID(), Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			e = res.Summary.Throughput
			ecpu = cpuTime() - cpu0
		}
		if round == 0 {
			continue // warm-up
		}
		t.Logf("round %d: bare client-go %.0f ops/s (client CPU %v), kb-bench %.0f ops/s (client CPU %v, whole run) (%.1f%%)",
			round, b, bcpu.Round(time.Millisecond), e, ecpu.Round(time.Millisecond), 100*e/b)
		bare += b
		engine += e
		ratios = append(ratios, e/b)
	}
	sort.Float64s(ratios)
	ratio := engine / bare
	t.Logf("over %d rounds: bare %.0f ops/s, kb-bench %.0f ops/s: kb-bench at %.1f%% of the bare loop (median round %.1f%%)",
		rounds, bare/rounds, engine/rounds, 100*ratio, 100*(ratios[rounds/2-1]+ratios[rounds/2])/2)
	if ratio < 0.90 {
		t.Errorf("kb-bench reached %.1f%% of a bare client-go loop's throughput, want within 5%% (failing below 90%%)", 100*ratio)
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareLoop runs writers goroutines of bareReadModifyWrite on one object in
// a namespace of its own for window, and returns operations per second,
// conflicts included (as kb-bench's throughput counts them).
func bareLoop(t *testing.T, base *rest.Config, writers int, window time.Duration) float64 {
	t.Helper()
	ctx := context.Background()
	cfg := restConfig(base, spec.Default().Client, "test")
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "kb-bench-" + runID()
	if err := createNamespace(ctx, kube, ns, "bare"); err != nil {
		t.Fatal(err)
	}
	defer deleteNamespace(ctx, kube, ns, true)
	cms := kube.CoreV1().ConfigMaps(ns)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kb-bench-0", Labels: runLabels("bare")}, Data: map[string]string{"counter": "0"}}
	if _, err := cms.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ops atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(window)
	for range writers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				bareReadModifyWrite(ctx, cms.Get, cms.Update) // a 409 ends the operation, as in kb-bench's update
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(ops.Load()) / time.Since(start).Seconds()
}
