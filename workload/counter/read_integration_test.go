package counter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/reads"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// local is the package's control plane, started by the first test that
// needs it.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

// namespaces numbers the tests' namespaces: one deleted namespace may
// still be terminating when the next test starts.
var namespaces atomic.Int64

// ackClock is the test's own record of the writers' successful writes:
// each PUT's resourceVersion and when its whole response had arrived, by
// the test's clock, in the writers' transport.
type ackClock struct {
	next http.RoundTripper
	mu   sync.Mutex
	at   map[string]time.Time
}

func (a *ackClock) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPut || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	now := time.Now()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var cm corev1.ConfigMap
	if err := json.Unmarshal(body, &cm); err == nil {
		a.mu.Lock()
		a.at[cm.ResourceVersion] = now
		a.mu.Unlock()
	}
	return resp, err
}

// realCounter sets up a counter run of s on the local control plane in a
// namespace of its own, its writers' client's transport wrapped by wrap,
// recording from now.
func realCounter(t *testing.T, s spec.Spec, wrap func(http.RoundTripper) http.RoundTripper) (*counter, kubernetes.Interface) {
	t.Helper()
	cfg := local.Config(t)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(cfg)
	ns := fmt.Sprintf("kb-bench-counter-%d-%d", os.Getpid(), namespaces.Add(1))
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	wcfg := rest.CopyConfig(cfg)
	wcfg.QPS, wcfg.ContentType, wcfg.WrapTransport = -1, "application/json", wrap
	writers := kubernetes.NewForConfigOrDie(wcfg)
	s.Defaults(Definition.Traits())
	set := Settings{}
	set.Default(&s)
	env := &scenario.Env{Spec: s, RunID: ns, Namespace: ns, Clients: []kubernetes.Interface{writers}, Admin: admin,
		Log: io.Discard, Warn: func(format string, a ...any) { t.Logf("warning: "+format, a...) },
		Recorder: metrics.NewRecorder(time.Now(), s.Writers, false)}
	c := newCounter(env, &set)
	if err := c.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	return c, writers
}

// A writer whose informer is paused (its store never updated again) reads
// the same version forever: after its first write lands, every write is
// a 409, and every one of them stale at read, never overtaken.
func TestPausedInformerReadsAreStale(t *testing.T) {
	c, _ := realCounter(t, spec.Spec{Writers: 1, Read: spec.ReadInformer}, nil)
	w := c.writers[0]
	obj, ok, err := w.store.GetByKey(w.storeKeys[0])
	if err != nil || !ok {
		t.Fatalf("the informer holds no object %s: %v", w.storeKeys[0], err)
	}
	paused := cache.NewStore(cache.MetaNamespaceKeyFunc)
	if err := paused.Add(obj); err != nil {
		t.Fatal(err)
	}
	w.store = paused
	const ops = 20
	for range ops {
		w.do(time.Now())
	}
	rep, err := c.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	figures := map[string]float64{}
	for _, f := range rep.Figures() {
		figures[f.Key()] = f.Value
	}
	stale, over := figures[`conflictsByCause{cause="staleRead"}`], figures[`conflictsByCause{cause="overtaken"}`]
	if stale != ops-1 || over != 0 || figures["staleReadShare"] != 1 {
		t.Errorf("%g stale at read, %g overtaken, stale share %g: want %d stale (every write after the first), none overtaken", stale, over, figures["staleReadShare"], ops-1)
	}
}

// kb-bench's watch delay agrees with one the test measures itself: its
// own watches and its own clock on the writers' responses. kb-bench's
// watcher and the test's are watchers of the same writes in one process,
// so their delays follow one distribution, and a quantile each estimates
// from a few hundred delays differs only by sampling: kb-bench's p-quantile
// must lie within the distribution-free 99.9% interval of the test's
// (order statistics at p -/+ z*sqrt(p(1-p)(1/n+1/m)), taken over both of
// the test's watches, so their own disagreement widens it), plus a
// millisecond for client-go decoding a response after the test's transport
// has read it, and HDR's 0.1%. kb-bench's watcher must see every write:
// its timed and early sightings add up to the writes the test saw
// acknowledged.
func TestWatchDelayAgreesWithTheTestsOwnWatch(t *testing.T) {
	ctx := context.Background()
	clock := &ackClock{at: map[string]time.Time{}}
	c, writers := realCounter(t, spec.Spec{Writers: 4, Watchers: 1}, func(rt http.RoundTripper) http.RoundTripper { clock.next = rt; return clock })
	ns, env := c.env.Namespace, c.env
	// Two watches of the test's own, on the writers' client as
	// kb-bench's watcher is (one connection, JSON): how far apart two
	// identical watchers in one process come out is the resolution the
	// comparison can justify.
	owns := []*ownWatch{watchOwn(ctx, t, writers, ns, env.RunID), watchOwn(ctx, t, writers, ns, env.RunID)}
	const ops = 250
	var wg sync.WaitGroup
	for _, w := range c.writers {
		wg.Go(func() {
			for range ops {
				w.do(time.Now())
			}
		})
	}
	wg.Wait()
	rep, err := c.Finish(ctx) // waits for kb-bench's watcher to see the last write
	if err != nil {
		t.Fatal(err)
	}
	newest := c.acks[0].Latest()
	for i, own := range owns {
		own.stop(t, newest)
		delays, early := own.delays(t, clock.at)
		owns[i].sorted, owns[i].early = delays, early
	}
	figures := map[string]float64{}
	for _, f := range rep.Figures() {
		figures[f.Key()] = f.Value
	}
	timed, before := figures[`watchEventsTimed{watcher="plain"}`], figures[`watchSeenBeforeResponse{watcher="plain"}`]
	t.Logf("%d writes acknowledged; the test's watches timed %d and %d (%d and %d seen before the response), kb-bench %g (%g)",
		len(clock.at), len(owns[0].sorted), len(owns[1].sorted), owns[0].early, owns[1].early, timed, before)
	if int(timed+before) != len(clock.at) {
		t.Errorf("kb-bench's watcher saw %g writes (%g timed, %g before the response), want the %d acknowledged", timed+before, timed, before, len(clock.at))
	}
	if len(owns[0].sorted) == 0 || len(owns[1].sorted) == 0 {
		t.Fatal("the test timed no write")
	}
	// The median and p90 are what a few hundred delays can place; p99
	// and the max are one or two events.
	for _, q := range []float64{0.5, 0.9} {
		got := time.Duration(figures[fmt.Sprintf(`watchDelay{quantile="%g",watcher="plain"}`, q)])
		n := float64(min(len(owns[0].sorted), len(owns[1].sorted)))
		d := 3.29 * math.Sqrt(q*(1-q)*(1/n+1/timed))
		lo := min(owns[0].quantile(max(q-d, 0)), owns[1].quantile(max(q-d, 0)))
		hi := max(owns[0].quantile(min(q+d, 1)), owns[1].quantile(min(q+d, 1)))
		margin := time.Millisecond + hi/1000
		t.Logf("p%g: kb-bench %s, the test's watches %s and %s; interval %s to %s (p%.3g to p%.3g) -/+ %s",
			100*q, got, owns[0].quantile(q), owns[1].quantile(q), lo, hi, 100*max(q-d, 0), 100*min(q+d, 1), margin)
		if got < lo-margin || got > hi+margin {
			t.Errorf("watch delay p%g: kb-bench %s, outside the test's own watches' 99.9%% interval %s to %s (-/+ %s)", 100*q, got, lo, hi, margin)
		}
	}
}

// ownWatch is one of the test's own watches: when it saw each
// resourceVersion, by the test's clock.
type ownWatch struct {
	w      watch.Interface
	seen   map[string]time.Time // the goroutine's until done
	last   atomic.Int64
	done   chan struct{}
	quit   chan struct{}
	sorted []time.Duration // the delays it timed
	early  int             // writes it saw before their response
}

func watchOwn(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, runID string) *ownWatch {
	t.Helper()
	w, err := client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + runID})
	if err != nil {
		t.Fatal(err)
	}
	o := &ownWatch{w: w, seen: map[string]time.Time{}, done: make(chan struct{}), quit: make(chan struct{})}
	go func() {
		defer close(o.done)
		for {
			select {
			case <-o.quit:
				return
			case ev := <-w.ResultChan():
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Modified {
					o.seen[cm.ResourceVersion] = time.Now()
					o.last.Store(reads.ParseRV(cm.ResourceVersion))
				}
			}
		}
	}()
	return o
}

// stop waits for the watch to see resourceVersion newest, and stops it.
func (o *ownWatch) stop(t *testing.T, newest int64) {
	await.Until(t, "the test's watch to see the last write", func() error {
		if last := o.last.Load(); last < newest {
			return fmt.Errorf("it has seen resourceVersion %d, the last write made %d", last, newest)
		}
		return nil
	})
	close(o.quit)
	<-o.done
	o.w.Stop()
}

// delays are the watch's delays from each acknowledged write's response,
// sorted, and how many writes it saw before their response.
func (o *ownWatch) delays(t *testing.T, acked map[string]time.Time) (delays []time.Duration, early int) {
	for rv, at := range acked {
		switch d := o.seen[rv].Sub(at); {
		case o.seen[rv].IsZero():
			t.Errorf("the test's watch never saw write %s", rv)
		case d < 0:
			early++
		default:
			delays = append(delays, d)
		}
	}
	slices.Sort(delays)
	return delays, early
}

// quantile is the nearest-rank quantile q of the sorted delays.
func (o *ownWatch) quantile(q float64) time.Duration {
	return o.sorted[metrics.Rank(q, int64(len(o.sorted)))-1]
}
