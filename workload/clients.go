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

// warmupKey marks the context of a warm-up request (see withWarmup).
type warmupKey struct{}

// withWarmup returns ctx marked as the warm-up's: the clients' counters
// (requests sent, rate-limiter wait) leave out requests made under it, so
// that client-go's figures cover the measured window only, like every
// other figure. Requests under an unmarked context are counted.
func withWarmup(ctx context.Context) context.Context {
	return context.WithValue(ctx, warmupKey{}, true)
}

// inWarmup reports whether ctx is marked by withWarmup.
func inWarmup(ctx context.Context) bool { return ctx.Value(warmupKey{}) != nil }

// clientStats sums the clients' counters. requests is how many requests the
// engine itself sent over them since trips0 (each client's trips then): any
// request beyond those is a retry client-go made on its own (it retries 429s
// and some 5xx that carry Retry-After).
func clientStats(clients []*client, trips0 []int64, requests int64) results.ClientStats {
	var trips int64
	for i, c := range clients {
		trips += c.trips.Load() - trips0[i]
	}
	st := results.ClientStats{Retries: max(trips-requests, 0)}
	st.RateLimiterWait, st.RateLimited = limiterWait(clients)
	return st
}

// limiterWait is the total time the clients' requests waited in their
// client-side rate limiters, and how many requests waited at all.
func limiterWait(clients []*client) (wait time.Duration, limited int64) {
	for _, c := range clients {
		if c.limiter != nil {
			wait += time.Duration(c.limiter.waited.Load())
			limited += c.limiter.limited.Load()
		}
	}
	return wait, limited
}

// tripsNow returns each client's request count.
func tripsNow(clients []*client) []int64 {
	t := make([]int64, len(clients))
	for i, c := range clients {
		t[i] = c.trips.Load()
	}
	return t
}

// countingTransport counts the HTTP requests a client sends, warm-up ones
// apart (see withWarmup).
type countingTransport struct {
	next  http.RoundTripper
	trips *atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !inWarmup(r.Context()) {
		t.trips.Add(1)
	}
	return t.next.RoundTrip(r)
}

// WrappedRoundTripper lets client-go's debugging helpers see through it.
func (t *countingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// timedLimiter is a client-side rate limiter that adds up the time requests
// wait in it and counts those held back, warm-up ones apart (see
// withWarmup).
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
	if !inWarmup(ctx) {
		l.observe(time.Since(start))
	}
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
