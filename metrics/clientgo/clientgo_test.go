package clientgo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// client-go's own retries, which the engine never sees, show up in the
// counters as per-run deltas.
func TestInstallCountsHiddenWork(t *testing.T) {
	c, err := Install()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Install()
	if err != nil || again != c {
		t.Fatalf("second Install returned %p, %v; want the same counters %p", again, err, c)
	}

	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The first two calls to /throttled are told to come back: client-go
		// retries them on its own.
		if r.URL.Path == "/throttled" && calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()

	tests := []struct {
		name        string
		path        string
		requests    int
		wantRetries int64
	}{
		{"retried 429s", "/throttled", 1, 2},
		{"no retries", "/ok", 3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
			if err != nil {
				t.Fatal(err)
			}
			before := c.Retries()
			for range tc.requests {
				if _, err := cs.Discovery().RESTClient().Get().AbsPath(tc.path).DoRaw(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if d := c.Retries() - before; d != tc.wantRetries {
				t.Errorf("retries = %d, want %d", d, tc.wantRetries)
			}
		})
	}
}
