package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// restConfig returns a copy of base with the Spec's client settings applied:
// QPS and Burst (a negative QPS means no client-side limit), content type
// and user agent. ContentDefault leaves the content type to client-go, as
// real clients do: its typed clients then send protobuf for built-in types
// (rest.Request.UseProtobufAsDefault) and JSON for apply patches.
func restConfig(base *rest.Config, c spec.Client, version string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS = c.QPS
	cfg.Burst = c.Burst
	switch c.ContentType {
	case spec.ContentProtobuf:
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	case spec.ContentJSON:
		cfg.ContentType = runtime.ContentTypeJSON
		cfg.AcceptContentTypes = runtime.ContentTypeJSON
	case spec.ContentCBOR:
		allowCBOR()
		cfg.ContentType = runtime.ContentTypeCBOR
		cfg.AcceptContentTypes = runtime.ContentTypeCBOR + "," + runtime.ContentTypeJSON
	default:
		cfg.ContentType, cfg.AcceptContentTypes = "", ""
	}
	cfg.UserAgent = c.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = "kb-bench/" + version
	}
	return cfg
}

// allowCBOR turns on client-go's ClientsAllowCBOR gate (alpha, off by
// default), without which client-go silently sends JSON for a CBOR config.
// It is process-wide, and only allows: each config still chooses.
func allowCBOR() {
	if g, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	}); ok {
		_ = g.Set(clientfeatures.ClientsAllowCBOR, true)
	}
}

// client is one client-go clientset with connections of its own, and the
// counters that show what it sent.
type client struct {
	kube    kubernetes.Interface
	meter   *meter
	limiter *timedLimiter // nil without a client-side rate limit
}

// newClients builds n clients from cfg (see restConfig), each with its own
// HTTP transport and so its own connections, whose requests pass through
// g. client-go caches transports by config, so clients built from equal
// configs would share one transport and its HTTP/2 connection; a Dial
// function of its own makes each config uncacheable. A config with a custom
// Transport cannot be split that way: then every client shares it, and
// newClients says so in the returned note.
func newClients(cfg *rest.Config, n int, g *gate, h *health) (clients []*client, note string, err error) {
	if cfg.Transport != nil && n > 1 {
		note = fmt.Sprintf("the target's config sets its own HTTP transport, so the %d clients share its connections", n)
	}
	for i := range n {
		c := rest.CopyConfig(cfg)
		if c.Dial == nil {
			c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		m := newMeter(g, h)
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &meteredTransport{next: rt, meter: m} })
		var limiter *timedLimiter
		if c.QPS > 0 && c.RateLimiter == nil {
			limiter = &timedLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)}
			c.RateLimiter = limiter
		}
		kube, err := kubernetes.NewForConfig(c)
		if err != nil {
			return nil, "", fmt.Errorf("building client %d of %d: %w (check the target's kubeconfig)", i+1, n, err)
		}
		clients = append(clients, &client{kube: kube, meter: m, limiter: limiter})
	}
	return clients, note, nil
}

// clientReading is a reading of the clients' counters, taken while the
// gate is held (no request in flight), so two readings bound exactly the
// requests sent in between.
type clientReading struct {
	requests map[metrics.RequestKey]int64
	sent     map[string]int64 // request bodies by content type
	received map[string]int64 // responses by content type
	waited   time.Duration
	limited  int64
}

// readClients sums the clients' counters now.
func readClients(clients []*client) clientReading {
	r := clientReading{requests: map[metrics.RequestKey]int64{}, sent: map[string]int64{}, received: map[string]int64{}}
	for _, c := range clients {
		c.meter.addTo(&r)
		if c.limiter != nil {
			r.waited += time.Duration(c.limiter.waited.Load())
			r.limited += c.limiter.limited.Load()
		}
	}
	return r
}

// since returns what the clients did between before and r.
func (r clientReading) since(before clientReading) clientReading {
	d := clientReading{
		requests: map[metrics.RequestKey]int64{}, sent: map[string]int64{}, received: map[string]int64{},
		waited: r.waited - before.waited, limited: r.limited - before.limited,
	}
	for k, n := range r.requests {
		if n -= before.requests[k]; n != 0 {
			d.requests[k] = n
		}
	}
	for k, n := range r.sent {
		if n -= before.sent[k]; n != 0 {
			d.sent[k] = n
		}
	}
	for k, n := range r.received {
		if n -= before.received[k]; n != 0 {
			d.received[k] = n
		}
	}
	return d
}

// stats are the client figures of the result.
func (r clientReading) stats(retries int64) results.ClientStats {
	return results.ClientStats{
		Retries:         retries,
		RateLimiterWait: r.waited,
		RateLimited:     r.limited,
		SentContent:     r.sent,
		ReceivedContent: r.received,
	}
}

// meter counts one client's requests by endpoint and response code, and
// the content types it sent and received.
type meter struct {
	gate     *gate
	health   *health
	mu       sync.Mutex
	requests map[metrics.RequestKey]int64
	sent     map[string]int64
	received map[string]int64
}

func newMeter(g *gate, h *health) *meter {
	return &meter{gate: g, health: h, requests: map[metrics.RequestKey]int64{}, sent: map[string]int64{}, received: map[string]int64{}}
}

func (m *meter) count(k metrics.RequestKey, sent, received string) {
	m.mu.Lock()
	m.requests[k]++
	if sent != "" {
		m.sent[sent]++
	}
	if received != "" {
		m.received[received]++
	}
	m.mu.Unlock()
}

func (m *meter) addTo(r *clientReading) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, n := range m.requests {
		r.requests[k] += n
	}
	for k, n := range m.sent {
		r.sent[k] += n
	}
	for k, n := range m.received {
		r.received[k] += n
	}
}

// meteredTransport counts every request of a client (client-go's own
// retries included) and passes it through the run's gate, which it leaves
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
	t.meter.health.backoff(r.Context())
	t.meter.gate.enter()
	resp, err := t.next.RoundTrip(r)
	sent := ""
	if r.Body != nil {
		sent = mediaType(r.Header.Get("Content-Type"))
	}
	if err != nil {
		// No answer: the apiserver may or may not have counted it.
		t.meter.health.failed(err)
		key.Code = results.CodeNoResponse
		t.meter.count(key, sent, "")
		t.meter.gate.leave()
		return nil, err
	}
	t.meter.health.answered()
	key.Code = strconv.Itoa(resp.StatusCode)
	t.meter.count(key, sent, mediaType(resp.Header.Get("Content-Type")))
	resp.Body = &leaveOnClose{ReadCloser: resp.Body, gate: t.meter.gate}
	return resp, nil
}

// WrappedRoundTripper lets client-go's debugging helpers see through it.
func (t *meteredTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// leaveOnClose leaves the gate once, when the body is closed.
type leaveOnClose struct {
	io.ReadCloser
	gate *gate
	once sync.Once
}

func (b *leaveOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.gate.leave)
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
	p := strings.Trim(r.URL.Path, "/")
	var segs []string
	switch {
	case strings.HasPrefix(p, "api/"):
		segs = strings.Split(p, "/")[2:] // api/v1/...
	case strings.HasPrefix(p, "apis/"):
		segs = strings.Split(p, "/")
		if len(segs) >= 3 {
			k.Group = segs[1]
			segs = segs[3:] // apis/GROUP/VERSION/...
		} else {
			segs = nil
		}
	}
	isNamespaceSub := len(segs) == 3 && (segs[2] == "status" || segs[2] == "finalize")
	if len(segs) >= 3 && segs[0] == "namespaces" && !isNamespaceSub {
		segs = segs[2:] // namespaces/NS/RESOURCE/...
	}
	named := false
	if len(segs) > 0 {
		k.Resource = segs[0]
	}
	if len(segs) > 1 {
		named = true
	}
	if len(segs) > 2 {
		k.Subresource = segs[2]
	}
	switch r.Method {
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
		k.Verb = "PATCH"
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			k.Verb = "APPLY"
		}
	case http.MethodDelete:
		k.Verb = "DELETE"
		if !named {
			k.Verb = "DELETECOLLECTION"
		}
	default:
		k.Verb = r.Method // POST, PUT
	}
	return k, watch
}

// gate lets the engine hold the clients' new requests while it scrapes
// /metrics, and waits for those in flight to finish first, so a scrape
// never sees a request half done: the server cross-check is then exact
// also for scenarios whose requests never pause (leader election).
type gate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	inflight int
	held     bool
	expired  bool
}

func newGate() *gate {
	g := &gate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) enter() {
	g.mu.Lock()
	for g.held {
		g.cond.Wait()
	}
	g.inflight++
	g.mu.Unlock()
}

func (g *gate) leave() {
	g.mu.Lock()
	g.inflight--
	if g.inflight == 0 {
		g.cond.Broadcast()
	}
	g.mu.Unlock()
}

// hold stops new requests and waits up to timeout for those in flight to
// finish; it reports how many were still in flight then. Call release
// after.
func (g *gate) hold(timeout time.Duration) (inflight int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.expired = true, false
	t := time.AfterFunc(timeout, func() {
		g.mu.Lock()
		g.expired = true
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer t.Stop()
	for g.inflight > 0 && !g.expired {
		g.cond.Wait()
	}
	return g.inflight
}

// release lets held requests go on.
func (g *gate) release() {
	g.mu.Lock()
	g.held = false
	g.cond.Broadcast()
	g.mu.Unlock()
}

// timedLimiter is a client-side rate limiter that adds up the time requests
// wait in it and counts those held back.
type timedLimiter struct {
	flowcontrol.RateLimiter
	waited  atomic.Int64 // nanoseconds
	limited atomic.Int64 // requests that waited minLimiterWait or more
}

// minLimiterWait tells a request held back from the cost of taking a token.
const minLimiterWait = time.Millisecond

// Wait takes a token. When none comes before ctx's deadline (the token
// bucket says at once that it would come too late, or the deadline passes
// while waiting) the error wraps both scenario.ErrNotSent and
// context.DeadlineExceeded: the operation timed out, and it is certain that
// the request never left the client.
func (l *timedLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	l.observe(time.Since(start))
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", scenario.ErrNotSent, context.DeadlineExceeded)
	}
	return err
}

func (l *timedLimiter) Accept() {
	start := time.Now()
	l.RateLimiter.Accept()
	l.observe(time.Since(start))
}

func (l *timedLimiter) observe(d time.Duration) {
	l.waited.Add(int64(d))
	if d >= minLimiterWait {
		l.limited.Add(1)
	}
}
