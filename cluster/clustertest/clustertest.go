// Package clustertest gives integration tests a real local control plane
// (upstream kube-apiserver and etcd on loopback), one per test binary,
// started by the first test that asks and stopped when the tests end.
//
// A test package declares one Shared value and a TestMain:
//
//	var local clustertest.Shared
//
//	func TestMain(m *testing.M) { os.Exit(local.Main(m)) }
//
// and each integration test calls local.Config(t). Tests skip with -short,
// and when the binaries are missing, unless KB_BENCH_REQUIRE_CONTROL_PLANE is
// set (make test sets it), in which case they fail: CI must not pass by
// skipping everything that needs a cluster.
package clustertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/spec"
)

// RequireEnv names the variable that turns a missing control plane from a
// skip into a failure.
const RequireEnv = "KB_BENCH_REQUIRE_CONTROL_PLANE"

// Shared is one lazily started local control plane for a test binary.
type Shared struct {
	// ControllerManager also runs kube-controller-manager (its Job,
	// garbage collector, namespace and service account controllers...);
	// set it before the first test asks for the control plane.
	ControllerManager bool

	once sync.Once
	cp   *cluster.ControlPlane
	skip string
	err  error
}

// Main runs the tests and then stops the control plane if one was started.
func (s *Shared) Main(m *testing.M) int {
	// Every test has ended when m.Run returns, so s.cp is read safely.
	code := m.Run()
	if s.cp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.cp.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local control plane: %v\n", err)
			code = 1
		}
	}
	return code
}

// ControlPlane returns the shared control plane, starting it on first use,
// or skips (fails under RequireEnv) when it cannot be had.
func (s *Shared) ControlPlane(t testing.TB) *cluster.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	s.once.Do(func() {
		bins, err := cluster.FindBinaries("", os.Getenv)
		if err != nil {
			s.skip = err.Error()
			return
		}
		if s.ControllerManager && bins.ControllerManager == "" {
			s.skip = "no kube-controller-manager in " + bins.Dir
			return
		}
		// Bounded by the test binary's deadline, not by a time of its
		// own: a loaded machine starts the control plane slowly.
		s.cp, s.err = cluster.StartLocal(await.Context(t), cluster.LocalOptions{Binaries: bins, Storage: spec.StorageMemory, ControllerManager: s.ControllerManager, StartTimeout: time.Hour})
	})
	if s.skip != "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("%s is set but the control plane is missing: %s", RequireEnv, s.skip)
		}
		t.Skipf("no local control plane binaries (run `kb-bench local install`): %s", s.skip)
	}
	if s.err != nil {
		t.Fatalf("starting the local control plane: %v", s.err)
	}
	return s.cp
}

// Config returns an admin rest.Config for the shared control plane with no
// client-side rate limit.
func (s *Shared) Config(t testing.TB) *rest.Config {
	t.Helper()
	cfg := s.ControlPlane(t).RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}
