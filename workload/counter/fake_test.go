package counter

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Unit tests of the writer's own logic (what it sends, how it counts) run
// over an in-process RoundTripper that answers with canned bytes: no
// apiserver semantics are imitated. What the apiserver does with the
// requests is tested against the real one (integration_test.go).

// cannedConfigMap is the JSON of ConfigMap name holding counter=value at
// resourceVersion rv.
func cannedConfigMap(t testing.TB, name, rv string, data map[string]string) []byte {
	t.Helper()
	cm := corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kb-bench-test", ResourceVersion: rv},
		Data:       data,
	}
	b, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// statusBody is the JSON of a metav1.Status error answer.
func statusBody(t testing.TB, code int32, reason metav1.StatusReason, causes ...metav1.StatusCause) []byte {
	t.Helper()
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: string(reason),
	}
	if len(causes) > 0 {
		st.Details = &metav1.StatusDetails{Causes: causes}
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sent is one request the fake received.
type sent struct {
	method, path, query, contentType, userAgent, accept string
	body                                                []byte
}

// fakeAPI answers GETs with get and writes with write(n), n counting the
// writes from 0, and keeps every request.
type fakeAPI struct {
	get   []byte
	write func(n int) (int, []byte)

	mu   sync.Mutex
	reqs []sent
	n    int
}

func (f *fakeAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, sent{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), r.Header.Get("Accept"), body})
	code, out := http.StatusOK, f.get
	if r.Method != http.MethodGet {
		code, out = f.write(f.n)
		f.n++
	}
	f.mu.Unlock()
	return &http.Response{
		StatusCode: code,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(out)),
		Request:    r,
	}, nil
}

func (f *fakeAPI) writes() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var w []sent
	for _, r := range f.reqs {
		if r.method != http.MethodGet {
			w = append(w, r)
		}
	}
	return w
}

// fakeRun returns a counter run of s and set over rt, with its writers
// built and recording from now. limiter, when not nil, is the client's
// rate limiter.
func fakeRun(t testing.TB, s spec.Spec, set Settings, rt http.RoundTripper, limiter flowcontrol.RateLimiter) (*counter, *metrics.Recorder) {
	t.Helper()
	s.Defaults(Definition.Traits())
	set.Default(&s)
	if errs := append(s.Validate(Definition.Traits()), set.Validate(&s, field.NewPath("settings"))...); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	// JSON, so the tests can read what was sent.
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: "http://fake.invalid", Transport: rt, QPS: -1, RateLimiter: limiter,
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	env := &scenario.Env{Spec: s, RunID: "test", Namespace: "kb-bench-test", Clients: []kubernetes.Interface{kube}, Admin: kube,
		Log: io.Discard, Warn: func(format string, a ...any) { t.Logf("warning: "+format, a...) }}
	c := newCounter(env, &set)
	rec := metrics.NewRecorder(time.Now(), metrics.DefaultStripes(c.n), s.Rate > 0)
	env.Recorder = rec
	c.writers = c.newWriters(1)
	return c, rec
}

func always(code int, body []byte) func(int) (int, []byte) {
	return func(int) (int, []byte) { return code, body }
}
