package counter

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
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
	set  Settings
}

// benchStrategies are the write strategies both benchmarks compare.
var benchStrategies = []benchCase{
	{"update", spec.Spec{Strategy: spec.StrategyUpdate}, Settings{}},
	{"retry", spec.Spec{Strategy: spec.StrategyRetry}, Settings{}},
	{"merge-patch", spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchMerge}, Settings{}},
	{"json-patch", spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchJSON}, Settings{}},
	{"ssa", spec.Spec{Strategy: spec.StrategySSA}, Settings{}},
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
			c, _ := fakeRun(b, tt.spec, tt.set, cannedTransport{cm}, nil)
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
		"update-zipf-disjoint", spec.Spec{Strategy: spec.StrategyUpdate}, Settings{Objects: 100, Fields: FieldsDisjoint, Distribution: DistZipf},
	}) {
		b.Run(tt.name, func(b *testing.B) {
			tt.spec.Writers = 1
			c, _ := fakeRun(b, tt.spec, tt.set, cannedTransport{}, nil)
			w := c.writers[0]
			w.objects.(*configMapObjects).cms = stubConfigMaps{cm: &corev1.ConfigMap{
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
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: "http://fake.invalid", Transport: cannedTransport{cm}, QPS: -1,
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
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
