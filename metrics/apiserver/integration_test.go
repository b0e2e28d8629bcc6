package apiserver_test

import (
	"context"
	"fmt"
	"os"
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
)

// local is the real kube-apiserver and etcd the package's integration tests
// share.
var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

// quietScrape scrapes until the apiserver's own start-up writes to
// configmaps have settled, so the window measures only this test's writes.
func quietScrape(ctx context.Context, t *testing.T, c rest.Interface) metrics.ServerSample {
	t.Helper()
	writes := func(s metrics.ServerSample) string {
		n := map[string]int64{}
		for k, v := range s.Requests {
			if k.Resource == "configmaps" && k.Verb != "GET" && k.Verb != "LIST" && k.Verb != "WATCH" {
				n[k.Verb+" "+k.Code] += v
			}
		}
		return fmt.Sprint(n)
	}
	prev, err := apiserver.Scrape(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		s, err := apiserver.Scrape(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if writes(s) == writes(prev) {
			return s
		}
		prev = s
	}
	t.Fatal("configmap writes on the apiserver did not settle within 10 s")
	return metrics.ServerSample{}
}

// The scraper against one real local kube-apiserver.
func TestRealAPIServer(t *testing.T) {
	cfg := local.Config(t)
	t.Run("server check matches exactly", func(t *testing.T) { testServerCheckMatches(t, cfg) })
	t.Run("forbidden is unavailable", func(t *testing.T) { testScrapeForbidden(t, cfg) })
}

// kb-bench's own count of successful writes and 409s equals the real
// apiserver's for the same window, exactly: contended read-modify-write
// PUTs, merge patches, applies and a field-manager conflict.
func testServerCheckMatches(t *testing.T, cfg *rest.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A new namespace each run: with -count the shared control plane still
	// holds the last one.
	ns := fmt.Sprintf("kb-bench-scrape-%d", time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counter"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	metricsClient := cs.Discovery().RESTClient()
	before := quietScrape(ctx, t, metricsClient)

	start := time.Now()
	rec := metrics.NewRecorder(start, 4, false)
	write := func(sh *metrics.Shard, do func() error) {
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh := rec.Shard(w)
			for i := range 15 {
				// Read-modify-write PUT: conflicts when another writer got in between.
				write(sh, func() error {
					cm, err := cms.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					cm.Data[fmt.Sprintf("w%d", w)] = fmt.Sprint(i)
					_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
					return err
				})
				// A merge patch never returns a version conflict: the
				// apiserver retries it internally.
				write(sh, func() error {
					_, err := cms.Patch(ctx, "counter", types.MergePatchType, fmt.Appendf(nil, `{"data":{"p%d":"%d"}}`, w, i), metav1.PatchOptions{})
					return err
				})
			}
		}()
	}
	wg.Wait()
	sh := rec.Shard(0)
	// A stale PUT (guaranteed 409) and two field managers setting the same
	// field to different values (409 FieldManagerConflict).
	stale, err := cms.Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write(sh, func() error {
		_, err := cms.Patch(ctx, "counter", types.MergePatchType, []byte(`{"data":{"bump":"1"}}`), metav1.PatchOptions{})
		return err
	})
	write(sh, func() error { _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); return err })
	for i, manager := range []string{"manager-a", "manager-b"} {
		write(sh, func() error {
			_, err := cms.Apply(ctx, corev1ac.ConfigMap("counter", ns).WithData(map[string]string{"owned": fmt.Sprint(i)}), metav1.ApplyOptions{FieldManager: manager})
			return err
		})
	}
	after, err := apiserver.Scrape(ctx, metricsClient)
	if err != nil {
		t.Fatal(err)
	}

	m := results.FromSnapshot(rec.Snapshot(time.Now()), results.ClientStats{})
	c := results.NewServerCheck(before, after, "configmaps", m)
	t.Logf("server check: %+v", *c)
	if !c.Available || !c.WritesMatch || !c.ConflictsMatch {
		t.Fatalf("kb-bench and the apiserver disagree: %s", c.Mismatch)
	}
	if version, fieldManager := m.Conflicts(); version < 1 || fieldManager != 1 {
		t.Errorf("conflicts: version %d, field-manager %d; want >= 1 and exactly 1", version, fieldManager)
	}
	if c.ServerWrites < 60 || c.EtcdUpdates < c.ServerWrites {
		t.Errorf("server writes %d, etcd updates %d: want at least the 60 patches, and an etcd update for each write", c.ServerWrites, c.EtcdUpdates)
	}
}

// A user without the /metrics permission gets an UnavailableError: the
// caller warns and carries on.
func testScrapeForbidden(t *testing.T, cfg *rest.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nobody := rest.CopyConfig(cfg)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "kb-bench-nobody"}
	cs, err := kubernetes.NewForConfig(nobody)
	if err != nil {
		t.Fatal(err)
	}
	_, err = apiserver.Scrape(ctx, cs.Discovery().RESTClient())
	if !apiserver.IsUnavailable(err) {
		t.Fatalf("scrape as a user without RBAC for /metrics: err = %v, want an UnavailableError", err)
	}
	t.Log(err)
}
