// Package transport is how the engine's clients reach the apiserver: a
// metered HTTP transport that counts every request by endpoint, code and
// content type, the hold that keeps new requests back at the measured
// window's edges while those in flight finish, the client-side rate limiter
// that times its waits, the HTTP/2 stream slots that keep each client to one
// connection, and the target's health.
package transport

import (
	"cmp"
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/internal/netdelay"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// Client is one client-go clientset with connections of its own, and the
// counters that show what it sent.
type Client struct {
	Kube kubernetes.Interface
	// Dynamic is the same client for any resource (JSON), over the same
	// connections and counters.
	Dynamic dynamic.Interface
	// Server is the apiserver this client talks to.
	Server  string
	meter   *meter
	limiter *timedLimiter // nil without a client-side rate limit
}

// Options are how NewClients spreads and delays the clients.
type Options struct {
	// Servers, when not empty, are the apiservers (URLs) the clients are
	// spread over: client i talks only to Servers[i mod len(Servers)],
	// over connections of its own, as a client behind a load balancer
	// keeps the apiserver its connection reached. Empty: cfg's host.
	Servers []string
	// Latency is a round trip added to every request (netdelay.Delay):
	// half before it is sent, half once its answer's headers arrive.
	Latency netdelay.Delay
	// Failover, with Servers, has a client whose apiserver died send to
	// the next living one (see Servers); nil: it keeps failing.
	Failover *Servers
}

// NewClients builds n clients from cfg (see k8s.ClientConfig), each
// with its own HTTP transport and so its own connections, whose requests
// pass through hold and report to health. client-go caches transports by config, so clients built from equal
// configs would share one transport and its HTTP/2 connection; a Dial
// function of its own makes each config uncacheable. A config with a custom
// Transport cannot be split that way: then every client shares it, and
// NewClients says so in the returned note.
func NewClients(cfg *rest.Config, n int, hold *Hold, h *Health, o Options) (clients []*Client, note string, err error) {
	if cfg.Transport != nil && n > 1 {
		note = fmt.Sprintf("the target's config sets its own HTTP transport, so the %d clients share its connections", n)
	}
	for i := range n {
		c := rest.CopyConfig(cfg)
		if len(o.Servers) > 0 {
			c.Host = o.Servers[i%len(o.Servers)]
		}
		if c.Dial == nil {
			c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		m := newMeter(hold, h)
		m.latency = o.Latency
		if o.Failover != nil && len(o.Servers) > 0 {
			c.Wrap(o.Failover.Wrap(i, i%len(o.Servers))) // below the meter: it counts the request once
		}
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			m.streams.transport = httpTransport(rt)
			return &meteredTransport{next: rt, meter: m}
		})
		var limiter *timedLimiter
		if c.QPS > 0 && c.RateLimiter == nil {
			limiter = &timedLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)}
			c.RateLimiter = limiter
		}
		// One HTTP client under both, so the dynamic client's requests
		// share the connections, the limiter and the counts.
		hc, err := rest.HTTPClientFor(c)
		var kube *kubernetes.Clientset
		var dyn *dynamic.DynamicClient
		if err == nil {
			kube, err = kubernetes.NewForConfigAndClient(c, hc)
		}
		if err == nil {
			dyn, err = dynamic.NewForConfigAndClient(c, hc)
		}
		if err != nil {
			return nil, "", fmt.Errorf("building client %d of %d: %w (check the target's kubeconfig)", i+1, n, err)
		}
		clients = append(clients, &Client{Kube: kube, Dynamic: dyn, Server: c.Host, meter: m, limiter: limiter})
	}
	return clients, note, nil
}

// httpTransport finds the *http.Transport under client-go's wrappers of it
// (its transport cache's tracking, CA rotation), or nil.
func httpTransport(rt http.RoundTripper) *http.Transport {
	for range 8 {
		switch t := rt.(type) {
		case *http.Transport:
			return t
		case interface{ WrappedRoundTripper() http.RoundTripper }:
			rt = t.WrappedRoundTripper()
		default:
			return nil
		}
	}
	return nil
}

// Reading is a reading of the clients' counters, taken while the hold is
// engaged (no request in flight), so two readings bound exactly the
// requests sent in between.
type Reading struct {
	// Requests counts requests by endpoint and code.
	Requests map[metrics.RequestKey]int64
	// stats are the clients' figures but client-go's hidden retries.
	stats results.ClientStats
}

// Read sums the clients' counters now.
func Read(clients []*Client) Reading {
	r := newReading()
	for _, c := range clients {
		c.meter.addTo(&r)
		if c.limiter != nil {
			r.stats.RateLimiterWait += time.Duration(c.limiter.waited.Load())
			r.stats.RateLimited += c.limiter.limited.Load()
		}
	}
	return r
}

func newReading() Reading {
	return Reading{Requests: map[metrics.RequestKey]int64{}, stats: results.ClientStats{SentContent: map[string]int64{}, ReceivedContent: map[string]int64{}}}
}

// Since returns what the clients did between before and r.
func (r Reading) Since(before Reading) Reading { return r.plus(before, -1) }

// plus is r + sign*o, without the keys that add up to nothing.
func (r Reading) plus(o Reading, sign int64) Reading {
	return Reading{Requests: results.AddCounts(r.Requests, o.Requests, sign), stats: r.stats.Plus(o.stats, sign)}
}

// Stats are the client figures of the result; retries are client-go's
// hidden ones (package clientgo).
func (r Reading) Stats(retries int64) results.ClientStats {
	s := r.stats
	s.Retries = retries
	return s
}

// meter counts one client's requests by endpoint and response code, the
// content types it sent and received, and the latency it added.
type meter struct {
	hold    *Hold
	health  *Health
	streams streamSlots
	latency netdelay.Delay
	mu      sync.Mutex
	counts  Reading
}

func newMeter(hold *Hold, h *Health) *meter {
	return &meter{hold: hold, health: h, counts: newReading()}
}

// count counts a request, and the latency added to it.
func (m *meter) count(k metrics.RequestKey, sent, received string, added time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &m.counts.stats
	m.counts.Requests[k]++
	if sent != "" {
		c.SentContent[sent]++
	}
	if received != "" {
		c.ReceivedContent[received]++
	}
	if !m.latency.Zero() {
		c.AddedLatency += added
		c.Delayed++
	}
}

func (m *meter) addTo(r *Reading) {
	m.mu.Lock()
	*r = r.plus(m.counts, 1)
	m.mu.Unlock()
	r.stats.StreamWait += time.Duration(m.streams.waited.Load())
	r.stats.StreamWaited += m.streams.queued.Load()
}

// meteredTransport counts every request of a client (client-go's own
// retries included) and passes it through the run's hold, which it leaves
// when the response body is closed: client-go reads a whole response and
// closes it before it returns. Watches stay out of both: they are long
// running and the apiserver counts them only when they end.
type meteredTransport struct {
	next  http.RoundTripper
	meter *meter
}

func (t *meteredTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	key, watch := endpointOf(r)
	if watch {
		return t.next.RoundTrip(r)
	}
	m := t.meter
	m.health.backoff(r.Context())
	// A stream first, then the hold: a request that waits for a stream
	// is not in flight, and one that never gets a stream was never sent.
	if err := m.streams.acquire(r); err != nil {
		return nil, err
	}
	if err := m.hold.enter(r.Context()); err != nil {
		m.streams.release()
		return nil, err
	}
	// The network's way there, the server, the way back: inside the hold
	// (the request is in flight) and the operation's clock.
	var added time.Duration
	if !m.latency.Zero() {
		added = netdelay.Sleep(r.Context().Done(), m.latency.OneWay())
	}
	resp, err := t.next.RoundTrip(r)
	if !m.latency.Zero() {
		added += netdelay.Sleep(r.Context().Done(), m.latency.OneWay())
	}
	sent := ""
	if r.Body != nil {
		sent = mediaType(r.Header.Get("Content-Type"))
	}
	if err != nil {
		// No answer: the apiserver may or may not have counted it.
		m.health.failed(err)
		key.Code = results.CodeNoResponse
		m.count(key, sent, "", added)
		m.done()
		return nil, err
	}
	m.health.answered()
	key.Code = strconv.Itoa(resp.StatusCode)
	m.count(key, sent, mediaType(resp.Header.Get("Content-Type")), added)
	resp.Body = &leaveOnClose{ReadCloser: resp.Body, meter: m}
	return resp, nil
}

// WrappedRoundTripper lets client-go's debugging helpers see through it.
func (t *meteredTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// done ends a request: it leaves the hold and frees its stream.
func (m *meter) done() {
	m.hold.leave()
	m.streams.release()
}

// leaveOnClose ends the request once, when the body is closed (the
// stream ends with the body).
type leaveOnClose struct {
	io.ReadCloser
	meter *meter
	once  sync.Once
}

func (b *leaveOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.meter.done)
	return err
}

// mediaType is a Content-Type without its parameters.
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.TrimSpace(mt)
}

// endpointOf names a request the way the apiserver's
// apiserver_request_total does: verb (LIST for a collection GET, APPLY for
// an apply patch), group, resource and subresource. watch reports a watch.
func endpointOf(r *http.Request) (k metrics.RequestKey, watch bool) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case segs[0] == "api" && len(segs) >= 2:
		segs = segs[2:] // api/v1/...
	case segs[0] == "apis" && len(segs) >= 3:
		k.Group, segs = segs[1], segs[3:] // apis/GROUP/VERSION/...
	default:
		segs = nil
	}
	isNamespaceSub := len(segs) == 3 && (segs[2] == "status" || segs[2] == "finalize")
	if len(segs) >= 3 && segs[0] == "namespaces" && !isNamespaceSub {
		segs = segs[2:] // namespaces/NS/RESOURCE/...
	}
	named := len(segs) > 1
	if len(segs) > 0 {
		k.Resource = segs[0]
	}
	if len(segs) > 2 {
		k.Subresource = segs[2]
	}
	switch k.Verb = r.Method; r.Method { // POST, PUT as they are
	case http.MethodGet:
		switch {
		case strings.Contains(r.URL.RawQuery, "watch=true") || strings.Contains(r.URL.RawQuery, "watch=1"):
			k.Verb, watch = "WATCH", true
		case named:
			k.Verb = "GET"
		default:
			k.Verb = "LIST"
		}
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			k.Verb = "APPLY"
		}
	case http.MethodDelete:
		if !named {
			k.Verb = "DELETECOLLECTION"
		}
	}
	return k, watch
}

// Hold is the window's edge: it lets the engine hold the clients' new
// requests while it reads their counters and scrapes /metrics, and waits
// for those in flight to finish first, so a scrape never sees a request
// half done: the server cross-check is then exact also for scenarios
// whose requests never pause (leader election).
type Hold struct {
	mu       sync.Mutex
	inflight int
	released chan struct{} // while engaged; closed when the hold ends
	drained  chan struct{} // while Engage waits; closed when inflight reaches 0
}

// NewHold returns a hold that is not engaged.
func NewHold() *Hold { return &Hold{} }

// enter waits while the hold is engaged and counts the request in flight. A
// request whose context ends while it waits is refused (notSentError): it
// was never sent, so it is neither counted nor may it have landed.
func (h *Hold) enter(ctx context.Context) error {
	h.mu.Lock()
	for h.released != nil {
		released := h.released
		h.mu.Unlock()
		select {
		case <-released:
		case <-ctx.Done():
			return &notSentError{ctx: ctx.Err(),
				why: "the request waited at the measured window's edge (kb-bench reads the apiserver's /metrics there with no request in flight) until its context ended, and was not sent"}
		}
		h.mu.Lock()
	}
	h.inflight++
	h.mu.Unlock()
	return nil
}

// notSentError is a request refused before it left the client, because
// its context ended first: held at a window's edge, or waiting for a free
// stream. It neither reached the apiserver nor was counted.
type notSentError struct {
	why string
	ctx error
}

func (e *notSentError) Error() string { return e.why + ": " + e.ctx.Error() }

func (e *notSentError) Is(target error) bool { return target == k8s.ErrNotSent }

func (e *notSentError) Unwrap() error { return e.ctx }

func (h *Hold) leave() {
	h.mu.Lock()
	h.inflight--
	if h.inflight == 0 && h.drained != nil {
		close(h.drained)
		h.drained = nil
	}
	h.mu.Unlock()
}

// Engage stops new requests and waits up to timeout for those in flight
// to finish; it reports how many were still in flight then. Call Release
// after.
func (h *Hold) Engage(timeout time.Duration) (inflight int) {
	h.mu.Lock()
	if h.released == nil {
		h.released = make(chan struct{})
	}
	drained := make(chan struct{})
	if h.inflight == 0 {
		close(drained)
	} else {
		h.drained = drained
	}
	h.mu.Unlock()
	select {
	case <-drained:
	case <-time.After(timeout):
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drained = nil
	return h.inflight
}

// Release lets held requests go on.
func (h *Hold) Release() {
	h.mu.Lock()
	if h.released != nil {
		close(h.released)
		h.released = nil
	}
	h.mu.Unlock()
}

// timedLimiter is a client-side rate limiter that adds up the time requests
// wait in it (client-go's requests take a token with Wait) and counts those
// held back.
type timedLimiter struct {
	flowcontrol.RateLimiter
	waited  atomic.Int64 // nanoseconds
	limited atomic.Int64 // requests that waited minLimiterWait or more
}

// minLimiterWait tells a request held back from the cost of taking a token.
const minLimiterWait = time.Millisecond

// Wait takes a token. When none comes before ctx's deadline (the token
// bucket says at once that it would come too late, or the deadline passes
// while waiting) the error wraps both k8s.ErrNotSent and
// context.DeadlineExceeded: the operation timed out, and it is certain that
// the request never left the client.
func (l *timedLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	d := time.Since(start)
	l.waited.Add(int64(d))
	if d >= minLimiterWait {
		l.limited.Add(1)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", k8s.ErrNotSent, context.DeadlineExceeded)
	}
	return err
}

// streamSlots keeps a client's requests within what its one HTTP/2
// connection carries at a time: the server's SETTINGS_MAX_CONCURRENT_STREAMS
// (100 on kube-apiserver unless --http2-max-streams-per-connection says
// otherwise). A request past that waits here, first come first served,
// until a stream is free or its context ends; the wait is part of its
// operation's latency, as a wait in the client-side rate limiter is, and
// is counted (waited, queued).
//
// Without it, client-go's transport (golang.org/x/net/http2 under
// net/http) dials a new TLS connection for every request that finds the
// connection's streams taken, and while those dials are under way every
// further request dials too: 10,000 writers on one client had up to
// 12,810 sockets open at once, and dialed more as surplus ones were
// closed; the process peaked at 0.65-1.05 GB (TLS handshakes, the
// connections' buffers and goroutines) and spent twice the CPU, the
// apiserver spent its own on handshakes, and the client was one
// connection only in name. x/net's own remedy (StrictMaxConcurrentStreams)
// stalls once requests queue (golang/go#70809: reserved streams count
// against the limit), so the wait is kept here instead, in front of the
// transport. A stream is freed when its response body is closed, a little
// before x/net forgets it, so a rare extra connection is still possible.
//
// The client's first request (the engine's connect, before the run) asks
// the server for its limit first (streamLimit: a connection of its own,
// closed at once, that carries no request).
type streamSlots struct {
	// transport is the client's own *http.Transport (nil when client-go
	// was given a transport of its own: then nothing is limited). It is
	// set when the client is built, before its first request.
	transport *http.Transport

	ask     sync.Once
	mu      sync.Mutex
	limit   int // streams per connection; 0: no limit (not HTTP/2)
	inUse   int
	waiting list.List // of chan struct{}, closed when given a stream

	waited atomic.Int64 // nanoseconds requests waited for a stream
	queued atomic.Int64 // requests that waited for one
}

// defaultStreams is what a client assumes of a server it has not asked:
// the limit golang.org/x/net/http2 itself assumes until the server's
// SETTINGS arrive, and kube-apiserver's default.
const defaultStreams = 100

// acquire waits for a stream for r. A request whose context ends first is
// refused with an error that wraps k8s.ErrNotSent and the context's
// error: it never left the client.
func (s *streamSlots) acquire(r *http.Request) error {
	if s.transport == nil {
		return nil
	}
	s.ask.Do(func() {
		n := streamLimit(r.Context(), s.transport, r.URL)
		s.mu.Lock()
		s.limit = n
		s.mu.Unlock()
	})
	s.mu.Lock()
	if s.waiting.Len() == 0 && (s.limit == 0 || s.inUse < s.limit) {
		s.inUse++
		s.mu.Unlock()
		return nil
	}
	start := time.Now()
	s.queued.Add(1)
	ready := make(chan struct{})
	e := s.waiting.PushBack(ready)
	s.mu.Unlock()
	var err error
	select {
	case <-ready:
	case <-r.Context().Done():
		s.mu.Lock()
		select {
		case <-ready: // given a stream meanwhile: it is this request's
		default:
			s.waiting.Remove(e)
			err = &notSentError{ctx: r.Context().Err(), why: fmt.Sprintf(
				"no stream of the client's HTTP/2 connection (it carries %d at a time) came free before the request's context ended, so it was not sent (more --clients spread the writers over more connections)", s.limit)}
		}
		s.mu.Unlock()
	}
	s.waited.Add(int64(time.Since(start)))
	return err
}

// release frees a stream acquire took.
func (s *streamSlots) release() {
	if s.transport == nil {
		return
	}
	s.mu.Lock()
	s.inUse--
	// Free streams go to the requests waiting, oldest first.
	for s.waiting.Len() > 0 && (s.limit == 0 || s.inUse < s.limit) {
		close(s.waiting.Remove(s.waiting.Front()).(chan struct{}))
		s.inUse++
	}
	s.mu.Unlock()
}

// streamLimit asks the server at u how many streams one HTTP/2 connection
// of t may have open at a time: it opens a connection of its own as t
// would, reads the server's SETTINGS (a PING's answer follows them) and
// closes it. 0 means no limit to keep: t does not speak HTTP/2 to u
// (plain http, HTTP/2 turned off, or the server chose HTTP/1.1). When the
// server cannot be asked (a proxy, an error), defaultStreams.
func streamLimit(ctx context.Context, t *http.Transport, u *url.URL) int {
	if t == nil || u.Scheme != "https" || t.TLSNextProto[http2.NextProtoTLS] == nil {
		return 0
	}
	if t.Proxy != nil {
		if p, err := t.Proxy(&http.Request{URL: u}); err != nil || p != nil {
			return defaultStreams
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	raw, err := dial(ctx, "tcp", addr)
	if err != nil {
		return defaultStreams
	}
	defer raw.Close()
	cfg := &tls.Config{}
	if t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	}
	cfg.NextProtos = []string{http2.NextProtoTLS, "http/1.1"}
	cfg.ServerName = cmp.Or(cfg.ServerName, u.Hostname())
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		return defaultStreams
	}
	if conn.ConnectionState().NegotiatedProtocol != http2.NextProtoTLS {
		return 0
	}
	cc, err := (&http2.Transport{}).NewClientConn(conn)
	if err != nil {
		return defaultStreams
	}
	defer cc.Close()
	if err := cc.Ping(ctx); err != nil {
		return defaultStreams
	}
	if n := cc.State().MaxConcurrentStreams; n > 0 && n < math.MaxInt32 {
		return int(n)
	}
	return defaultStreams
}
