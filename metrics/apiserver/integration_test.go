package apiserver_test

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/metrics/apiserver"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// local is the real kube-apiserver and etcd the package's integration tests
// share.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

// meter counts the requests of a client the way the engine's transport
// does and the apiserver's apiserver_request_total labels them: by verb
// (APPLY for an apply patch, LIST for a collection GET), resource,
// subresource and response code, CodeNoResponse when none came.
type meter struct {
	next     http.RoundTripper
	mu       sync.Mutex
	requests map[metrics.RequestKey]int64
}

func (m *meter) RoundTrip(r *http.Request) (*http.Response, error) {
	k := endpoint(r)
	resp, err := m.next.RoundTrip(r)
	k.Code = results.CodeNoResponse
	if err == nil {
		k.Code = strconv.Itoa(resp.StatusCode)
	}
	m.mu.Lock()
	m.requests[k]++
	m.mu.Unlock()
	return resp, err
}

// counts returns what was sent so far.
func (m *meter) counts() map[metrics.RequestKey]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.requests)
}

// endpoint names a request to a core namespaced resource:
// /api/v1/namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]].
func endpoint(r *http.Request) metrics.RequestKey {
	var k metrics.RequestKey
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) >= 5 && segs[0] == "api" && segs[2] == "namespaces" {
		segs = segs[4:]
	}
	named := len(segs) > 1
	k.Resource = segs[0]
	if len(segs) > 2 {
		k.Subresource = segs[2]
	}
	k.Verb = r.Method
	switch r.Method {
	case http.MethodGet:
		if !named {
			k.Verb = "LIST"
		}
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			k.Verb = "APPLY"
		}
	}
	return k
}

// The scraper against one real local kube-apiserver.
func TestRealAPIServer(t *testing.T) {
	cfg := local.Config(t)
	t.Run("server check matches exactly", func(t *testing.T) { testServerCheckMatches(t, cfg) })
	t.Run("forbidden is unavailable", func(t *testing.T) { testScrapeForbidden(t, cfg) })
}

// kb-bench's count of its requests equals the real apiserver's for the
// same window, exactly, endpoint by endpoint and code by code: contended
// read-modify-write PUTs, merge patches, applies and a field-manager
// conflict. They go to Secrets, which nothing else on the bare control
// plane (no controller manager) reads or writes, while the apiserver's
// own controllers write ConfigMaps at times of their choosing after
// start-up: the check counts every write on a resource the clients used,
// whoever sent it, so there is no quiet moment to wait for.
func testServerCheckMatches(t *testing.T, cfg *rest.Config) {
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A new namespace each run: with -count the shared control plane still
	// holds the last one.
	ns := fmt.Sprintf("kb-bench-scrape-%d", time.Now().UnixNano())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "counter"}, StringData: map[string]string{"n": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The load goes through a client of its own whose every request is
	// counted; setup, reading back and the scrapes do not.
	m := &meter{requests: map[metrics.RequestKey]int64{}}
	loadCfg := rest.CopyConfig(cfg)
	loadCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { m.next = rt; return m })
	load, err := kubernetes.NewForConfig(loadCfg)
	if err != nil {
		t.Fatal(err)
	}
	secrets := load.CoreV1().Secrets(ns)
	metricsClient := admin.Discovery().RESTClient()
	before, err := apiserver.Scrape(ctx, metricsClient)
	if err != nil {
		t.Fatal(err)
	}
	sentBefore := m.counts()

	start := time.Now()
	rec := metrics.NewRecorder(start, 4, false)
	write := func(sh *metrics.Stripe, do func() error) {
		t0 := time.Now()
		err := do()
		out := metrics.Classify(err)
		if out == metrics.Other || out == metrics.Timeout {
			t.Errorf("write failed unexpectedly: %v", err)
		}
		sh.RecordAttempt(start, metrics.Attempt{Kind: metrics.Write, Latency: time.Since(t0), Outcome: out})
		sh.RecordOp(metrics.Op{Intended: t0, Start: t0, End: time.Now(), Outcome: out, Attempts: 1})
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			sh := rec.Stripe(w)
			for i := range 15 {
				// Read-modify-write PUT: conflicts when another writer got in between.
				write(sh, func() error {
					s, err := secrets.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if s.Data == nil {
						s.Data = map[string][]byte{}
					}
					s.Data[fmt.Sprintf("w%d", w)] = fmt.Append(nil, i)
					_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
					return err
				})
				// A merge patch never returns a version conflict: the
				// apiserver retries it internally.
				write(sh, func() error {
					_, err := secrets.Patch(ctx, "counter", types.MergePatchType, fmt.Appendf(nil, `{"stringData":{"p%d":"%d"}}`, w, i), metav1.PatchOptions{})
					return err
				})
			}
		})
	}
	wg.Wait()
	sh := rec.Stripe(0)
	// A stale PUT (guaranteed 409) and two field managers setting the same
	// field to different values (409 FieldManagerConflict).
	stale, err := secrets.Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write(sh, func() error {
		_, err := secrets.Patch(ctx, "counter", types.MergePatchType, []byte(`{"stringData":{"bump":"1"}}`), metav1.PatchOptions{})
		return err
	})
	write(sh, func() error { _, err := secrets.Update(ctx, stale, metav1.UpdateOptions{}); return err })
	for i, manager := range []string{"manager-a", "manager-b"} {
		write(sh, func() error {
			_, err := secrets.Apply(ctx, corev1ac.Secret("counter", ns).WithStringData(map[string]string{"owned": fmt.Sprint(i)}), metav1.ApplyOptions{FieldManager: manager})
			return err
		})
	}
	// Every request has had its answer: the scrape sees them all.
	after, err := apiserver.Scrape(ctx, metricsClient)
	if err != nil {
		t.Fatal(err)
	}
	client := m.counts()
	for k, n := range sentBefore {
		if client[k] -= n; client[k] == 0 {
			delete(client, k)
		}
	}

	meas := results.FromSnapshot(rec.Snapshot(time.Now()), results.ClientStats{})
	c := analysis.NewServerCheck(before, after, client, nil, meas)
	t.Logf("server check: %+v", *c)
	if !c.Available || !c.Match {
		t.Fatalf("kb-bench and the apiserver disagree: %s", c.Mismatch)
	}
	version, fieldManager := meas.Conflicts()
	if version < 1 || fieldManager != 1 {
		t.Errorf("conflicts: version %d, field-manager %d; want >= 1 and exactly 1", version, fieldManager)
	}
	// The check's rows agree with the recorder, code by code: its
	// successful writes, and its 409s of both kinds.
	var writes, conflicts, gets int64
	for _, r := range c.Requests {
		if r.Resource != "secrets" {
			t.Errorf("row %+v: the load only used secrets", r)
		}
		switch {
		case r.Verb == "GET" && r.Code == "200":
			gets += r.Server
		case r.Verb == "GET":
			t.Errorf("row %+v: every GET should have succeeded", r)
		case strings.HasPrefix(r.Code, "2"):
			writes += r.Server
		case r.Code == "409":
			conflicts += r.Server
		default:
			t.Errorf("row %+v: no other code was expected", r)
		}
	}
	if wantWrites := meas.WriteOutcomes[metrics.Success.String()]; writes != wantWrites || writes < 61 {
		t.Errorf("the apiserver counted %d successful writes, the recorder %d: want them equal, and at least the 61 patches", writes, wantWrites)
	}
	if conflicts != version+fieldManager {
		t.Errorf("the apiserver counted %d 409s, the recorder %d", conflicts, version+fieldManager)
	}
	if gets != 61 {
		t.Errorf("the apiserver counted %d GETs, want the 60 reads and the stale one", gets)
	}
	// Every successful write is an etcd update transaction.
	var updates int64
	for _, r := range c.Races {
		if r.Resource == "secrets" {
			updates = r.Updates
		}
	}
	if updates < writes {
		t.Errorf("etcd update transactions on secrets %d, fewer than the %d successful writes", updates, writes)
	}
}

// A user without the /metrics permission gets an UnavailableError: the
// caller warns and carries on.
func testScrapeForbidden(t *testing.T, cfg *rest.Config) {
	ctx := t.Context()
	nobody := rest.CopyConfig(cfg)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "kb-bench-nobody"}
	cs, err := kubernetes.NewForConfig(nobody)
	if err != nil {
		t.Fatal(err)
	}
	_, err = apiserver.Scrape(ctx, cs.Discovery().RESTClient())
	if !isUnavailable(err) {
		t.Fatalf("scrape as a user without RBAC for /metrics: err = %v, want an UnavailableError", err)
	}
	t.Log(err)
}
