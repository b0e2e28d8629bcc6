package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
)

// h2Server is a TLS server speaking HTTP/2 that allows maxStreams
// streams per connection, answering after delay.
func h2Server(t *testing.T, maxStreams int, delay time.Duration) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay) // the server's response time, not a wait for an event
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}))
	ts.EnableHTTP2 = true
	ts.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: maxStreams}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts
}

// clientGoTransport is a transport built as client-go builds its own
// (golang.org/x/net/http2 configured on a net/http Transport), trusting
// ts, counting its dials.
func clientGoTransport(t *testing.T, ts *httptest.Server, dials *atomic.Int64) *http.Transport {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	d := &net.Dialer{}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
	}
	if _, err := http2.ConfigureTransports(tr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func TestStreamLimitReadsTheServersSettings(t *testing.T) {
	var dials atomic.Int64
	ts := h2Server(t, 7, 0)
	u, _ := url.Parse(ts.URL)
	if got := streamLimit(context.Background(), clientGoTransport(t, ts, &dials), u); got != 7 {
		t.Errorf("streamLimit = %d, want the server's 7", got)
	}

	h1 := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(h1.Close)
	u1, _ := url.Parse(h1.URL)
	if got := streamLimit(context.Background(), clientGoTransport(t, h1, &dials), u1); got != 0 {
		t.Errorf("streamLimit of an HTTP/1.1 server = %d, want 0 (no limit: a connection per request)", got)
	}
	if got := streamLimit(context.Background(), nil, u); got != 0 {
		t.Errorf("streamLimit without a transport of the client's own = %d, want 0", got)
	}
	plain := &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	if got := streamLimit(context.Background(), clientGoTransport(t, ts, &dials), plain); got != 0 {
		t.Errorf("streamLimit over plain http = %d, want 0", got)
	}
	noH2 := &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}} // client-go with DISABLE_HTTP2
	if got := streamLimit(context.Background(), noH2, u); got != 0 {
		t.Errorf("streamLimit with HTTP/2 turned off = %d, want 0", got)
	}
}

// Many more requests than the server allows streams go over the client's
// one connection: without the limit, the transport dials a connection
// for each request that finds the streams taken.
func TestMeteredTransportKeepsToOneConnection(t *testing.T) {
	const streams, requests = 4, 200
	for _, limit := range []bool{true, false} {
		name := "limited"
		if !limit {
			name = "unlimited"
		}
		t.Run(name, func(t *testing.T) {
			ts := h2Server(t, streams, 5*time.Millisecond)
			var dials atomic.Int64
			tr := clientGoTransport(t, ts, &dials)
			m := newMeter(NewHold(), NewHealth())
			if limit {
				m.streams.transport = tr
			}
			rt := &meteredTransport{next: tr, meter: m}
			var failed atomic.Int64
			send := func() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, ts.URL+"/api/v1/namespaces/ns/configmaps/cm", nil)
				resp, err := rt.RoundTrip(req)
				if err != nil {
					failed.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			send() // connected first, as the engine does before a run
			var wg sync.WaitGroup
			for range requests - 1 {
				wg.Go(send)
			}
			wg.Wait()
			// Without the limit, the burst of connections it dials can
			// fail on a loaded machine (the server gives up waiting for
			// a TLS client's SETTINGS): that is no fault of the limit's.
			if limit && failed.Load() != 0 {
				t.Fatalf("%d requests failed", failed.Load())
			}
			got := dials.Load()
			if limit {
				// One connection for the requests, one the limit was read on.
				if got != 2 {
					t.Errorf("%d dials, want 2 (the probe's and the one connection)", got)
				}
				r := newReading()
				m.addTo(&r)
				if r.stats.StreamWaited == 0 || r.stats.StreamWait <= 0 {
					t.Errorf("stream waits %d (%v), want the requests past %d streams counted", r.stats.StreamWaited, r.stats.StreamWait, streams)
				}
				if n := r.Requests[metrics.RequestKey{EndpointKey: metrics.EndpointKey{Verb: "GET", Resource: "configmaps"}, Code: "200"}]; n != requests {
					t.Errorf("%d requests counted, want %d", n, requests)
				}
				return
			}
			t.Logf("without the limit: %d dials for %d requests, %d failed", got, requests, failed.Load())
			if got < 2 {
				t.Errorf("%d dials: the transport no longer dials past the server's streams, so this test no longer shows what the limit is for", got)
			}
		})
	}
}

func TestStreamSlotsRefuseWhatCannotBeSent(t *testing.T) {
	s := streamSlots{transport: &http.Transport{}, limit: 2}
	s.ask.Do(func() {})
	req := func(ctx context.Context) *http.Request {
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1/", nil)
		return r
	}
	for range 2 {
		if err := s.acquire(req(context.Background())); err != nil {
			t.Fatal(err)
		}
	}
	// The third request waits from when it is queued until its deadline
	// passes: at least from when the test sees it queued to the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	began := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- s.acquire(req(ctx)) }()
	queued := func(n int64) func() error {
		return func() error {
			if got := s.queued.Load(); got < n {
				return fmt.Errorf("%d queued", got)
			}
			return nil
		}
	}
	await.Until(t, "the third request to queue", queued(1))
	seen := time.Now()
	err := await.Recv(t, "the queued request's deadline to end its wait", errc)
	took := time.Since(began)
	switch {
	case err == nil:
		t.Fatal("a third request got a stream of two")
	case !errors.Is(err, k8s.ErrNotSent) || !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("error %v, want it to say the request was not sent and timed out", err)
	case metrics.Classify(err) != metrics.Timeout:
		t.Errorf("classified %v, want a timeout", metrics.Classify(err))
	case k8s.MayHaveLanded(metrics.Timeout, err):
		t.Errorf("a request never sent may have landed?")
	}
	if waited := time.Duration(s.waited.Load()); s.queued.Load() != 1 || waited < deadline.Sub(seen) || waited > took {
		t.Errorf("queued %d, waited %v; want 1 and the time it waited: at least the %v from being seen queued to its deadline, at most the %v acquire took",
			s.queued.Load(), waited, deadline.Sub(seen), took)
	}

	// A freed stream goes to the request waiting for it.
	got := make(chan error, 1)
	go func() { got <- s.acquire(req(context.Background())) }()
	await.Until(t, "the fourth request to queue", queued(2))
	s.release()
	if err := await.Recv(t, "the freed stream to go to the waiting request", got); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkMeteredTransportStreams is BenchmarkMeteredTransport with the
// stream limit in force (a stream always free): the cost of taking and
// freeing one.
func BenchmarkMeteredTransportStreams(b *testing.B) {
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": []string{"application/vnd.kubernetes.protobuf"}}, Body: http.NoBody}, nil
	})
	m := newMeter(NewHold(), NewHealth())
	m.streams.transport, m.streams.limit = &http.Transport{}, defaultStreams
	m.streams.ask.Do(func() {})
	rt := &meteredTransport{next: next, meter: m}
	req := httptest.NewRequest(http.MethodPut, "https://127.0.0.1/api/v1/namespaces/kb-bench-x/configmaps/kb-bench-0", nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, _ := rt.RoundTrip(req)
		resp.Body.Close()
	}
}
