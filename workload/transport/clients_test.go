package transport

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/internal/netdelay"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// tlsServer is an HTTP/2 TLS server on loopback that counts the
// connections that carried requests to it (a client's stream-limit probe
// carries none) and answers every request with a ConfigMap.
func tlsServer(t *testing.T) (*rest.Config, *atomic.Int64, *[]http.Header) {
	t.Helper()
	var conns atomic.Int64
	var mu sync.Mutex
	var headers []http.Header
	seen := map[string]bool{}
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kb-bench-0","resourceVersion":"1"},"data":{"counter":"0"}}`)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.Header.Clone())
		if !seen[r.RemoteAddr] {
			seen[r.RemoteAddr] = true
			conns.Add(1)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(cm)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, &conns, &headers
}

func get(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	if _, err := kube.CoreV1().ConfigMaps("ns").Get(context.Background(), "kb-bench-0", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// --clients K must mean K connections. client-go caches transports by
// config, so without care K clients built from one config share one.
func TestClientsHaveTheirOwnConnections(t *testing.T) {
	t.Run("client-go alone shares one transport", func(t *testing.T) {
		base, conns, _ := tlsServer(t)
		for range 3 {
			kube, err := kubernetes.NewForConfig(rest.CopyConfig(base))
			if err != nil {
				t.Fatal(err)
			}
			get(t, kube)
		}
		// Shared, they make fewer connections than clientsets: one, or
		// two when net/http had to dial again (seen once on a loaded
		// machine).
		if got := conns.Load(); got >= 3 {
			t.Fatalf("3 clientsets from equal configs made %d connections; this test expects client-go's transport cache to share them", got)
		}
	})
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d clients", n), func(t *testing.T) {
			base, conns, _ := tlsServer(t)
			clients, note, err := NewClients(k8s.ClientConfig(base, spec.Client{ContentType: spec.ContentJSON}, "test"), n, NewHold(), NewHealth(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if note != "" {
				t.Errorf("unexpected note: %s", note)
			}
			for range 2 {
				for _, c := range clients {
					get(t, c.Kube)
				}
			}
			// A connection each: shared ones would be fewer. net/http may
			// dial again when one is lost, so more is logged, not failed.
			switch got := conns.Load(); {
			case got < int64(n):
				t.Errorf("%d clients made %d connections, want one each", n, got)
			case got > int64(n):
				t.Logf("%d clients made %d connections: net/http dialed again", n, got)
			}
			get := metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "GET", Resource: "configmaps"}, Code: "200"}
			for _, c := range clients {
				var r Reading = Read([]*Client{c})
				if got := r.Requests[get]; got != 2 || len(r.Requests) != 1 {
					t.Errorf("client counted %v, want 2 GET configmaps 200", r.Requests)
				}
			}
		})
	}
}

func TestClientSettingsReachTheWire(t *testing.T) {
	tests := []struct {
		name       string
		client     spec.Client
		wantUA     string
		wantAccept string
	}{
		{"client-go's default: protobuf for built-in types", spec.Client{ContentType: spec.ContentDefault}, "kb-bench/v9.9.9", "application/vnd.kubernetes.protobuf,application/json"},
		{"json", spec.Client{ContentType: spec.ContentJSON}, "kb-bench/v9.9.9", "application/json"},
		{"protobuf and own agent", spec.Client{ContentType: spec.ContentProtobuf, UserAgent: "bench-ci"}, "bench-ci", "application/vnd.kubernetes.protobuf,application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, _, headers := tlsServer(t)
			clients, _, err := NewClients(k8s.ClientConfig(base, tt.client, "v9.9.9"), 1, NewHold(), NewHealth(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			get(t, clients[0].Kube)
			h := (*headers)[0]
			if h.Get("User-Agent") != tt.wantUA || h.Get("Accept") != tt.wantAccept {
				t.Errorf("sent User-Agent %q Accept %q, want %q %q", h.Get("User-Agent"), h.Get("Accept"), tt.wantUA, tt.wantAccept)
			}
		})
	}
}

// A client-side limit is set on purpose and its waiting is measured.
func TestRateLimiterWaitIsMeasured(t *testing.T) {
	base, _, _ := tlsServer(t)
	// 2 QPS, burst 1: a token every 500ms. Two requests before the window
	// take the first token and, once the connection is up (its handshake
	// is the slow part on a loaded machine), the second: each request in
	// the window then waits 500ms less the few milliseconds a request on
	// a warm connection takes.
	clients, _, err := NewClients(k8s.ClientConfig(base, spec.Client{QPS: 2, Burst: 1, ContentType: spec.ContentJSON}, "test"), 1, NewHold(), NewHealth(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	get(t, clients[0].Kube)
	get(t, clients[0].Kube)
	before := Read(clients)
	from := time.Now()
	for range 2 {
		get(t, clients[0].Kube)
	}
	elapsed := time.Since(from)
	n := Read(clients).Since(before)
	// The waits happen one after the other inside the window: they add up
	// to no more than it, and to at least half the nominal 1s unless a
	// warm request took over 250ms.
	if w := n.stats.RateLimiterWait; w < 500*time.Millisecond || w > elapsed || n.stats.RateLimited != 2 {
		t.Errorf("limiter wait = %v over %d requests for 2 requests at 2 QPS burst 1 after the burst, want about 1s over 2, and no more than the %v they took", w, n.stats.RateLimited, elapsed)
	}
	if got := n.Requests[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "GET", Resource: "configmaps"}, Code: "200"}]; got != 2 {
		t.Errorf("%d requests in the window, want the 2 after the first reading", got)
	}
}

// Requests are named as apiserver_request_total names them.
func TestEndpointOf(t *testing.T) {
	tests := []struct {
		method, url, contentType string
		want                     metrics.EndpointKey
		watch                    bool
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/kb-bench-0", "", metrics.EndpointKey{Verb: "GET", Resource: "configmaps"}, false},
		{"GET", "/api/v1/namespaces/ns/configmaps?limit=20", "", metrics.EndpointKey{Verb: "LIST", Resource: "configmaps"}, false},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases?watch=true", "", metrics.EndpointKey{Verb: "WATCH", Group: "coordination.k8s.io", Resource: "leases"}, true},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "", metrics.EndpointKey{Verb: "PUT", Group: "coordination.k8s.io", Resource: "leases"}, false},
		{"PATCH", "/api/v1/namespaces/ns/pods/p/status", "application/merge-patch+json", metrics.EndpointKey{Verb: "PATCH", Resource: "pods", Subresource: "status"}, false},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/c", "application/apply-patch+yaml", metrics.EndpointKey{Verb: "APPLY", Resource: "configmaps"}, false},
		{"POST", "/api/v1/namespaces/ns/configmaps", "application/json", metrics.EndpointKey{Verb: "POST", Resource: "configmaps"}, false},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "", metrics.EndpointKey{Verb: "DELETECOLLECTION", Resource: "configmaps"}, false},
		{"GET", "/api/v1/namespaces/ns", "", metrics.EndpointKey{Verb: "GET", Resource: "namespaces"}, false},
		{"PUT", "/api/v1/namespaces/ns/finalize", "", metrics.EndpointKey{Verb: "PUT", Resource: "namespaces", Subresource: "finalize"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.url, nil)
			r.Header.Set("Content-Type", tt.contentType)
			got, watch := endpointOf(r)
			if got.EndpointKey != tt.want || watch != tt.watch {
				t.Errorf("endpointOf = %+v watch %v, want %+v watch %v", got.EndpointKey, watch, tt.want, tt.watch)
			}
		})
	}
}

// The hold keeps new requests back while the engine scrapes, and waits for
// those in flight: hold returns only when the one in flight has left, and
// a new request waits for release.
func TestHoldWaitsForRequestsInFlight(t *testing.T) {
	g := NewHold()
	if err := g.enter(context.Background()); err != nil { // a request in flight
		t.Fatal(err)
	}
	returned := make(chan int)
	go func() { returned <- g.Engage(time.Hour) }()
	for !isHeld(g) {
		runtime.Gosched() // until hold has begun
	}
	select {
	case <-returned:
		t.Fatal("Engage returned while a request was in flight")
	default:
	}
	g.leave() // the request in flight ends: hold returns
	if n := <-returned; n != 0 {
		t.Errorf("Engage returned with %d in flight, want 0", n)
	}
	entered := make(chan struct{})
	go func() {
		if g.enter(context.Background()) == nil {
			close(entered)
			g.leave()
		}
	}()
	g.Release()
	<-entered
}

// A request held at the window's edge past its deadline is not sent: the
// transport refuses it as never sent, and counts nothing, so the server
// cross-check stays exact.
func TestHoldRefusesARequestWhoseDeadlinePassesWhileHeld(t *testing.T) {
	sent := 0
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	g := NewHold()
	m := newMeter(g, NewHealth())
	rt := &meteredTransport{next: next, meter: m}
	g.Engage(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, http.MethodPut, "https://127.0.0.1/api/v1/namespaces/kb-bench-x/configmaps/kb-bench-0", nil)
	done := make(chan error)
	go func() {
		_, err := rt.RoundTrip(req)
		done <- err
	}()
	cancel()
	err := <-done
	if !errors.Is(err, k8s.ErrNotSent) || !errors.Is(err, context.Canceled) || sent != 0 {
		t.Fatalf("held request: err %v, sent %d; want a never-sent cancellation", err, sent)
	}
	r := newReading()
	m.addTo(&r)
	if len(r.Requests) != 0 {
		t.Errorf("a request that was never sent was counted: %v", r.Requests)
	}
	g.Release()
	if resp, err := rt.RoundTrip(httptest.NewRequest(http.MethodGet, "https://127.0.0.1/api/v1/namespaces/x/configmaps/y", nil)); err != nil || sent != 1 {
		t.Fatalf("after release: %v, sent %d", err, sent)
	} else {
		resp.Body.Close()
	}
}

func isHeld(g *Hold) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.released != nil
}

// BenchmarkMeteredTransport is what counting a request and passing the
// hold cost per request, over a transport that answers at once.
func BenchmarkMeteredTransport(b *testing.B) {
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": []string{"application/vnd.kubernetes.protobuf"}}, Body: http.NoBody}, nil
	})
	rt := &meteredTransport{next: next, meter: newMeter(NewHold(), NewHealth())}
	req := httptest.NewRequest(http.MethodPut, "https://127.0.0.1/api/v1/namespaces/kb-bench-x/configmaps/kb-bench-0", nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := rt.RoundTrip(req)
		resp.Body.Close()
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Options.Servers spreads the clients: client i talks only to server i
// mod N, over a connection of its own. Options.Latency delays every
// request by at least its round trip, and the reading says by how much in
// all.
func TestClientsSpreadAndDelayed(t *testing.T) {
	// httptest's servers share one certificate, as the local control
	// plane's apiservers do.
	a, connsA, headersA := tlsServer(t)
	b, connsB, headersB := tlsServer(t)
	const rtt = 20 * time.Millisecond
	clients, _, err := NewClients(k8s.ClientConfig(a, spec.Client{ContentType: spec.ContentJSON}, "test"), 4, NewHold(), NewHealth(),
		Options{Servers: []string{a.Host, b.Host}, Latency: netdelay.Delay{RTT: rtt}})
	if err != nil {
		t.Fatal(err)
	}
	before := Read(clients)
	for i, c := range clients {
		if want := []string{a.Host, b.Host}[i%2]; c.Server != want {
			t.Errorf("client %d talks to %s, want %s", i, c.Server, want)
		}
		for range 3 {
			start := time.Now()
			get(t, c.Kube)
			if took := time.Since(start); took < rtt {
				t.Errorf("client %d: a request took %s, less than the %s round trip added", i, took, rtt)
			}
		}
	}
	if connsA.Load() != 2 || connsB.Load() != 2 || len(*headersA) != 6 || len(*headersB) != 6 {
		t.Errorf("server a: %d connections, %d requests; b: %d, %d; want 2 connections and 6 requests each",
			connsA.Load(), len(*headersA), connsB.Load(), len(*headersB))
	}
	st := Read(clients).Since(before).Stats(0)
	if st.Delayed != 12 || st.AddedLatency < 12*rtt {
		t.Errorf("%d requests delayed by %s in all, want 12 of at least %s each", st.Delayed, st.AddedLatency, rtt)
	}
}
