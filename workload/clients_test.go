package workload

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/spec"
)

// tlsServer is an HTTP/2 TLS server on loopback that counts the
// connections made to it and answers every request with a ConfigMap.
func tlsServer(t *testing.T) (*rest.Config, *atomic.Int64, *[]http.Header) {
	t.Helper()
	var conns atomic.Int64
	var mu sync.Mutex
	var headers []http.Header
	cm := cannedConfigMap(t, "kb-bench-0", "1", map[string]string{"counter": "0"})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(cm)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
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
		if got := conns.Load(); got != 1 {
			t.Fatalf("3 clientsets from equal configs made %d connections; this test expects client-go's transport cache to share 1", got)
		}
	})
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d clients", n), func(t *testing.T) {
			base, conns, _ := tlsServer(t)
			clients, note, err := newClients(restConfig(base, spec.Default().Client, "test"), n)
			if err != nil {
				t.Fatal(err)
			}
			if note != "" {
				t.Errorf("unexpected note: %s", note)
			}
			for range 2 {
				for _, c := range clients {
					get(t, c.kube)
				}
			}
			if got := conns.Load(); got != int64(n) {
				t.Errorf("%d clients made %d connections, want %d", n, got, n)
			}
			for _, c := range clients {
				if got := c.trips.Load(); got != 2 {
					t.Errorf("client counted %d requests, want 2", got)
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
		{"defaults", spec.Client{ContentType: spec.ContentJSON}, "kb-bench/v9.9.9", "application/json"},
		{"protobuf and own agent", spec.Client{ContentType: spec.ContentProtobuf, UserAgent: "bench-ci"}, "bench-ci", "application/vnd.kubernetes.protobuf,application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, _, headers := tlsServer(t)
			clients, _, err := newClients(restConfig(base, tt.client, "v9.9.9"), 1)
			if err != nil {
				t.Fatal(err)
			}
			get(t, clients[0].kube)
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
	// 5 QPS, burst 1: after the first, each request waits about 200ms, far
	// longer than a request takes even on a loaded machine, so the count of
	// held-back requests is exact.
	clients, _, err := newClients(restConfig(base, spec.Client{QPS: 5, Burst: 1, ContentType: spec.ContentJSON}, "test"), 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		get(t, clients[0].kube)
	}
	n := readClientCounts(clients)
	if n.waited < 300*time.Millisecond || n.limited != 2 {
		t.Errorf("limiter wait = %v over %d requests for 3 requests at 5 QPS burst 1, want about 400ms over 2", n.waited, n.limited)
	}
	if n := readClientCounts(nil); n != (clientCounts{}) {
		t.Errorf("no clients, counts %+v", n)
	}
}
