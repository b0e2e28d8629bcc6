package leaderelection

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// leaseJSON is the Lease the fake apiserver of these tests answers with.
const leaseJSON = `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","namespace":"ns","resourceVersion":"7"},"spec":{"holderIdentity":"a"}}`

// proxied returns a client of the run's proxy for slot 0, as a candidate
// process builds it, with the proxy over a run's client (user agent
// kb-bench/test) of the apiserver at host through next.
func proxied(t testing.TB, host string, next http.RoundTripper) kubernetes.Interface {
	t.Helper()
	run, err := kubernetes.NewForConfig(&rest.Config{Host: host, Transport: next, UserAgent: "kb-bench/test", QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProxy(&scenario.Env{Spec: spec.Spec{Writers: 1}, Clients: []kubernetes.Interface{run}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	rc := &rest.Config{Host: "http://" + p.Addr + slotPrefix(0), QPS: -1}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return fromProxy{rt} }
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTripper is a RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A candidate process's request reaches the apiserver on the run's
// client's path, without the slot prefix and with the run's user agent,
// and its answer comes back with when it left the run's client.
func TestProxyPassesThrough(t *testing.T) {
	var path, agent atomic.Value
	c := proxied(t, "http://apiserver.invalid", roundTripper(func(r *http.Request) (*http.Response, error) {
		path.Store(r.URL.Path)
		agent.Store(r.Header.Get("User-Agent"))
		if trace := httptrace.ContextClientTrace(r.Context()); trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{}) // as net/http's transport does
		}
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(leaseJSON)), Request: r}, nil
	}))
	var sent atomic.Pointer[time.Time]
	ctx := context.WithValue(t.Context(), sentKey{}, &sent)
	before := time.Now()
	l, err := c.CoordinationV1().Leases("ns").Get(ctx, "l", metav1.GetOptions{})
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if l.ResourceVersion != "7" || *l.Spec.HolderIdentity != "a" {
		t.Errorf("Lease %+v, want the apiserver's", l)
	}
	if got := path.Load(); got != "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l" {
		t.Errorf("the apiserver saw path %q", got)
	}
	// A kubeconfig's server may carry a path: it is kept.
	c = proxied(t, "http://apiserver.invalid/behind/a/gateway", roundTripper(func(r *http.Request) (*http.Response, error) {
		path.Store(r.URL.Path)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(leaseJSON)), Request: r}, nil
	}))
	if _, err := c.CoordinationV1().Leases("ns").Get(t.Context(), "l", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := path.Load(); got != "/behind/a/gateway/apis/coordination.k8s.io/v1/namespaces/ns/leases/l" {
		t.Errorf("behind a path, the apiserver saw path %q", got)
	}
	if got := agent.Load(); got != "kb-bench/test" {
		t.Errorf("the apiserver saw user agent %q, want the run's client's", got)
	}
	if s := sent.Load(); s == nil || s.Before(before) || s.After(after) {
		t.Errorf("the proxy said the request left the run's client at %v, want between %v and %v", s, before, after)
	}
}

// Errors of the run's client come back as the same classes of error: a
// request held at the window's edge was never sent, a timeout is a
// timeout; an answered error is the apiserver's answer.
func TestProxyErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		notSent bool
		outcome metrics.Outcome
	}{
		{"held at the window's edge", &testNotSent{}, true, metrics.Timeout},
		{"timeout", context.DeadlineExceeded, false, metrics.Timeout},
		{"connection refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false, metrics.Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := proxied(t, "http://apiserver.invalid", roundTripper(func(*http.Request) (*http.Response, error) { return nil, tt.err }))
			_, err := c.CoordinationV1().Leases("ns").Get(t.Context(), "l", metav1.GetOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, k8s.ErrNotSent) != tt.notSent || metrics.Classify(err) != tt.outcome {
				t.Errorf("error %v: not sent %v, outcome %s; want %v, %s", err, errors.Is(err, k8s.ErrNotSent), metrics.Classify(err), tt.notSent, tt.outcome)
			}
			if !strings.Contains(err.Error(), strings.SplitN(tt.err.Error(), ":", 2)[0]) {
				t.Errorf("error %q does not say what the run's client met (%q)", err, tt.err)
			}
		})
	}
	c := proxied(t, "http://apiserver.invalid", roundTripper(func(r *http.Request) (*http.Response, error) {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409}`
		return &http.Response{StatusCode: 409, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}))
	_, err := c.CoordinationV1().Leases("ns").Get(t.Context(), "l", metav1.GetOptions{})
	if !apierrors.IsConflict(err) {
		t.Errorf("a 409 through the proxy: %v, want the apiserver's conflict", err)
	}
}

// testNotSent is the engine's error for a request held at a window's
// edge until its deadline (the hold's notSentError).
type testNotSent struct{}

func (*testNotSent) Error() string        { return "the request waited at the measured window's edge" }
func (*testNotSent) Is(target error) bool { return target == k8s.ErrNotSent }
func (*testNotSent) Unwrap() error        { return context.DeadlineExceeded }

// BenchmarkProxyHop is what the pause fault's proxy adds to a candidate's
// request: a Lease GET from a client-go client to a loopback HTTP server,
// directly and through the proxy.
func BenchmarkProxyHop(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, leaseJSON)
	}))
	defer srv.Close()
	direct, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		client kubernetes.Interface
	}{
		{"direct", direct},
		{"proxied", proxied(b, srv.URL, http.DefaultTransport.(*http.Transport).Clone())},
	} {
		b.Run(bc.name, func(b *testing.B) {
			leases := bc.client.CoordinationV1().Leases("ns")
			for b.Loop() {
				if _, err := leases.Get(context.Background(), "l", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A candidate process does not start candidates: a binary that runs as
// itself in its candidate processes fails the run at the first level.
func TestCandidateStartsNoCandidates(t *testing.T) {
	t.Setenv(CandidateEnv, "1")
	r := &election{env: &scenario.Env{Spec: spec.Spec{Writers: 2}}}
	err := r.startProcesses(t.Context())
	if err == nil || !strings.Contains(err.Error(), "CandidateMain") {
		t.Fatalf("startProcesses in a candidate process: %v, want an error naming CandidateMain", err)
	}
	if r.procs != nil || r.proxy != nil {
		t.Errorf("it started processes %v or a proxy %v", r.procs, r.proxy)
	}
}
