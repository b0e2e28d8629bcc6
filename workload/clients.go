package workload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// restConfig returns a copy of base with the Spec's client settings applied:
// QPS and Burst (a negative QPS means no client-side limit), content type
// and user agent. It shares base's transport cache entry; use newClients for
// clients with connections of their own.
func restConfig(base *rest.Config, c spec.Client, version string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS = c.QPS
	cfg.Burst = c.Burst
	if c.ContentType == spec.ContentProtobuf {
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	} else {
		cfg.ContentType = runtime.ContentTypeJSON
		cfg.AcceptContentTypes = runtime.ContentTypeJSON
	}
	cfg.UserAgent = c.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = "kb-bench/" + version
	}
	return cfg
}

// client is one client-go clientset with connections of its own, and the
// counters that show what client-go did without telling its caller.
type client struct {
	kube    kubernetes.Interface
	trips   *atomic.Int64 // HTTP requests sent, client-go's own retries included
	limiter *timedLimiter // nil without a client-side rate limit
}

// newClients builds n clients from cfg (see restConfig), each with its own
// HTTP transport and so its own connections. client-go caches transports by
// config, so clients built from equal configs would share one transport and
// its HTTP/2 connection; a Dial function of its own makes each config
// uncacheable. A config with a custom Transport cannot be split that way:
// then every client shares it, and newClients says so in the returned note.
func newClients(cfg *rest.Config, n int) (clients []*client, note string, err error) {
	if cfg.Transport != nil && n > 1 {
		note = fmt.Sprintf("the target's config sets its own HTTP transport, so the %d clients share its connections", n)
	}
	for i := range n {
		c := rest.CopyConfig(cfg)
		if c.Dial == nil {
			c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		trips := new(atomic.Int64)
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, trips: trips} })
		var limiter *timedLimiter
		if c.QPS > 0 && c.RateLimiter == nil {
			limiter = &timedLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)}
			c.RateLimiter = limiter
		}
		kube, err := kubernetes.NewForConfig(c)
		if err != nil {
			return nil, "", fmt.Errorf("building client %d of %d: %w (check the target's kubeconfig)", i+1, n, err)
		}
		clients = append(clients, &client{kube: kube, trips: trips, limiter: limiter})
	}
	return clients, note, nil
}

// clientCounts is a reading of the clients' counters: requests sent, and
// time and requests held in their client-side rate limiters. The engine reads
// them when the warm-up has drained and again at the end, so client-go's
// figures cover the measured window, like every other figure.
type clientCounts struct {
	trips   int64
	waited  time.Duration
	limited int64
}

// readClientCounts sums the clients' counters now.
func readClientCounts(clients []*client) clientCounts {
	var n clientCounts
	for _, c := range clients {
		n.trips += c.trips.Load()
		if c.limiter != nil {
			n.waited += time.Duration(c.limiter.waited.Load())
			n.limited += c.limiter.limited.Load()
		}
	}
	return n
}

// clientStats turns two readings into client-go's figures. requests is how
// many requests the engine itself sent between them: any request sent
// beyond those is a retry client-go made on its own (it retries 429s and
// some 5xx that carry Retry-After).
func clientStats(before, after clientCounts, requests int64) results.ClientStats {
	return results.ClientStats{
		Retries:         max(after.trips-before.trips-requests, 0),
		RateLimiterWait: after.waited - before.waited,
		RateLimited:     after.limited - before.limited,
	}
}

// countingTransport counts the HTTP requests a client sends.
type countingTransport struct {
	next  http.RoundTripper
	trips *atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.trips.Add(1)
	return t.next.RoundTrip(r)
}

// WrappedRoundTripper lets client-go's debugging helpers see through it.
func (t *countingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// timedLimiter is a client-side rate limiter that adds up the time requests
// wait in it and counts those held back.
type timedLimiter struct {
	flowcontrol.RateLimiter
	waited  atomic.Int64 // nanoseconds
	limited atomic.Int64 // requests that waited minLimiterWait or more
}

// minLimiterWait tells a request held back from the cost of taking a token.
const minLimiterWait = time.Millisecond

// errHeldBack marks a request that the client-side rate limiter held back
// until its operation's deadline: it was never sent, so it cannot have
// reached the apiserver.
var errHeldBack = errors.New("the client-side rate limiter had no token for this request before the operation's deadline, so it was not sent (raise the client QPS and burst, or the operation timeout)")

// Wait takes a token. When none comes before ctx's deadline (the token
// bucket says at once that it would come too late, or the deadline passes
// while waiting) the error wraps both errHeldBack and
// context.DeadlineExceeded: the operation timed out, and it is certain that
// the request never left the client.
func (l *timedLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	l.observe(time.Since(start))
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", errHeldBack, context.DeadlineExceeded)
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
