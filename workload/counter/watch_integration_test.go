package counter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// local is the package's control plane, started by the first test that
// needs it.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

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

// kb-bench's watch delay agrees with one the test measures itself: its
// own watch and its own clock on the writers' responses. The two differ
// by what neither can see: client-go decoding a response after the
// test's transport has read it, and two watches' events reaching two
// goroutines on a busy machine; the test allows 2ms plus a quarter for
// that. Both must see every write: kb-bench's timed and early sightings
// add up to the writes the test saw acknowledged.
func TestWatchDelayAgreesWithTheTestsOwnWatch(t *testing.T) {
	cfg := local.Config(t)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(cfg)
	ns := fmt.Sprintf("kb-bench-watchdelay-%d", os.Getpid())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	clock := &ackClock{at: map[string]time.Time{}}
	wcfg := rest.CopyConfig(cfg)
	wcfg.QPS, wcfg.ContentType = -1, "application/json"
	wcfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { clock.next = rt; return clock }
	writers := kubernetes.NewForConfigOrDie(wcfg)

	s := spec.Spec{Writers: 4, Watchers: 1}
	s.Defaults(Definition.Traits())
	set := Settings{}
	set.Default(&s)
	env := &scenario.Env{Spec: s, RunID: "watchdelay", Namespace: ns, Clients: []kubernetes.Interface{writers}, Admin: admin,
		Log: io.Discard, Warn: func(format string, a ...any) { t.Logf("warning: "+format, a...) },
		Recorder: metrics.NewRecorder(time.Now(), s.Writers, false)}
	c := newCounter(env, &set)
	if err := c.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	own, err := admin.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + env.RunID})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]time.Time{} // the goroutine's until it ends
	var lastSeen atomic.Int64
	watched := make(chan struct{})
	stopOwn := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopOwn:
				return
			case ev := <-own.ResultChan():
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Modified {
					seen[cm.ResourceVersion] = time.Now()
					lastSeen.Store(parseRV(cm.ResourceVersion))
				}
			}
		}
	}()
	const ops = 150
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
	// The test's watch sees the last write too: wait for it.
	for newest := c.acks[0].latest.Load(); lastSeen.Load() < newest; {
		time.Sleep(10 * time.Millisecond)
	}
	close(stopOwn)
	<-watched
	own.Stop()

	var delays []time.Duration
	early := 0
	for rv, at := range clock.at {
		switch d := seen[rv].Sub(at); {
		case seen[rv].IsZero():
			t.Errorf("the test's watch never saw write %s", rv)
		case d < 0:
			early++
		default:
			delays = append(delays, d)
		}
	}
	slices.Sort(delays)
	figures := map[string]float64{}
	for _, f := range rep.Figures() {
		figures[f.Key()] = f.Value
	}
	timed, before := figures[`watchEventsTimed{watcher="plain"}`], figures[`watchSeenBeforeResponse{watcher="plain"}`]
	t.Logf("%d writes acknowledged; the test timed %d (%d seen before the response), kb-bench %g (%g)", len(clock.at), len(delays), early, timed, before)
	if int(timed+before) != len(clock.at) {
		t.Errorf("kb-bench's watcher saw %g writes (%g timed, %g before the response), want the %d acknowledged", timed+before, timed, before, len(clock.at))
	}
	if len(delays) == 0 {
		t.Fatal("the test timed no write")
	}
	for _, q := range []float64{0.5, 0.99} {
		k := metrics.Rank(q, int64(len(delays)))
		want := delays[k-1]
		got := time.Duration(figures[fmt.Sprintf(`watchDelay{quantile="%g",watcher="plain"}`, q)])
		tolerance := 2*time.Millisecond + want/4
		t.Logf("p%g: kb-bench %s, the test %s (tolerance %s)", 100*q, got, want, tolerance)
		if got < want-tolerance || got > want+tolerance {
			t.Errorf("watch delay p%g: kb-bench %s, the test's own watch %s: more apart than %s", 100*q, got, want, tolerance)
		}
	}
}
