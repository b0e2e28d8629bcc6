package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/internal/netdelay"
	"github.com/kb-bench/kb-bench/spec"
)

// `local up --apiservers 2` keeps two apiservers on one etcd; a run that
// asks for two reuses them (both URLs), every one answers, and `local
// down` stops them all.
func TestLocalUpSeveralAPIServers(t *testing.T) {
	bins := binariesOrSkip(t)
	ctx := context.Background()
	stateDir := filepath.Join(t.TempDir(), "local")
	t.Cleanup(func() { _ = Down(context.Background(), stateDir) })
	st, err := Up(ctx, UpOptions{Binaries: bins, Storage: spec.StorageMemory, StateDir: stateDir, Log: testLog{t}, APIServers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.APIServers) != 2 || len(st.Servers) != 2 || st.Servers[0] == st.Servers[1] || st.APIServer != st.APIServers[0] {
		t.Fatalf("state %+v: want 2 apiservers on distinct URLs, the first also as APIServer", st)
	}
	got, err := Status(ctx, stateDir)
	if err != nil || !got.Healthy {
		t.Fatalf("Status = %+v, %v; want healthy", got, err)
	}
	conn, err := Open(ctx, spec.Target{Kind: spec.TargetLocal, APIServers: 2}, Options{StateDir: stateDir, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if !conn.Target.Reused || len(conn.Servers) != 2 || len(conn.Target.APIServers) != 2 {
		t.Fatalf("Open(local, 2 apiservers): target %+v, servers %v; want the `local up` one with both apiservers", conn.Target, conn.Servers)
	}
	// The same credentials reach each apiserver, and each sees what the
	// other wrote (one etcd).
	for i, server := range conn.Servers {
		cfg := rest.CopyConfig(conn.Config)
		cfg.Host = server
		cs := clientset(t, cfg)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shape-" + string(rune('a'+i))}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("apiserver %s: %v", server, err)
		}
	}
	for _, server := range conn.Servers {
		cfg := rest.CopyConfig(conn.Config)
		cfg.Host = server
		for _, ns := range []string{"shape-a", "shape-b"} {
			if _, err := clientset(t, cfg).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				t.Errorf("apiserver %s does not see namespace %s: %v", server, ns, err)
			}
		}
	}
	// Both advertise an address of their own to the lease reconciler,
	// which keeps both in the kubernetes Service's endpoints (each
	// apiserver renews its lease every 10s).
	cs := clientset(t, conn.Config)
	await.Until(t, "both apiservers' addresses in the kubernetes Service's endpoints", func() error {
		ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err == nil && (len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 2) {
			err = fmt.Errorf("endpoints %+v", ep)
		}
		return err
	})
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Down(ctx, stateDir); err != nil {
		t.Fatal(err)
	}
	assertGone(t, append([]ProcessState{st.Etcd}, st.APIServers...), []string{st.Dir, st.EtcdDataDir, st.Kubeconfig})
	if _, err := Status(ctx, stateDir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Status after Down = %v, want ErrNotRunning", err)
	}
}

// A kept control plane cannot have etcd latency: its proxy would die
// with the `local up` that started it.
func TestLocalUpRefusesEtcdDelay(t *testing.T) {
	_, err := StartLocal(context.Background(), LocalOptions{Binaries: Binaries{APIServer: "/nonexistent", Etcd: "/nonexistent"}, Detached: true, EtcdDelay: netdelay.Delay{RTT: time.Millisecond}})
	if !spec.IsInput(err) {
		t.Errorf("StartLocal(Detached, EtcdDelay) = %v, want a spec.Input error", err)
	}
}
