package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/kb-bench/kb-bench/cluster/kindtest"
	"github.com/kb-bench/kb-bench/internal/await"
)

// TestKindNetworkWaitsForCreates: while another kb-bench's create holds
// the network lock (it found or is about to make kind's network, and its
// node is not attached yet), neither kb-bench's removal of the network
// nor its janitor's runs; each waits, and removes it once the create is
// done. Two make tests at once met this: one process removed the network
// between kind's finding it and the other's `docker run --net kind`,
// whose create then failed with "network kind not found".
func TestKindNetworkWaitsForCreates(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks to see a waiting lock in")
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1) for the janitor's removal")
	}
	dir := t.TempDir()
	old := kindNetworkLock
	kindNetworkLock = filepath.Join(dir, "network.lock")
	t.Cleanup(func() { kindNetworkLock = old })
	// A container runtime that notes what it is asked and has kind's
	// network, made by a create of kb-bench's.
	const id = "0123456789abcdef0123"
	calls := filepath.Join(dir, "calls")
	rt := filepath.Join(dir, "docker")
	script := "#!/bin/sh\necho \"$*\" >> " + calls + "\ncase \"$*\" in \"network inspect kind\"*) echo " + id + ";; esac\n"
	if err := os.WriteFile(rt, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	removed := func() bool {
		b, _ := os.ReadFile(calls)
		return strings.Contains(string(b), "network rm "+id)
	}
	for _, tc := range []struct {
		name   string
		remove func()
	}{
		{"kb-bench", func() { removeKindNetwork(rt) }},
		{"janitor", func() { _ = exec.Command("sh", "-c", kindCleanup(rt, "c", false)).Run() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(calls)
			if err := os.MkdirAll(kindNetworksMade(), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(kindNetworksMade(), id), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			unlock := lockKindNetwork(syscall.LOCK_SH) // a create under way
			done := make(chan struct{})
			go func() { defer close(done); tc.remove() }()
			await.Until(t, "the removal to wait for the create", func() error {
				if removed() {
					unlock()
					t.Fatal("kind's network was removed while a create held the lock")
				}
				return waiting(kindNetworkLock)
			})
			unlock()
			select {
			case <-done:
			case <-await.After(t):
				t.Fatal("the removal did not end once the create was done")
			}
			if !removed() {
				t.Fatal("kind's network was not removed once the create was done")
			}
		})
	}
}

// TestKindNetworkGoesWithTheLastCluster: kind's network, made by one
// kb-bench create and found by the next, is removed by whichever deletes
// the last cluster on it, also when that is the one that found it (two
// make tests at once left the network behind so); one that was there
// before kb-bench (the user's own kind made it) stays, and so does one
// made by a create of kb-bench's while another cluster still uses it.
func TestKindNetworkGoesWithTheLastCluster(t *testing.T) {
	rt := kindDouble(t, kindtest.Options{Images: []string{DefaultKindNodeImage}})
	stateDir := t.TempDir()
	host := FullKindHost()
	up := func(name string) {
		t.Helper()
		if _, _, err := KindUp(t.Context(), KindOptions{Name: name}, KindUpOptions{StateDir: stateDir, Host: &host, Log: io.Discard}); err != nil {
			t.Fatal(err)
		}
	}
	down := func(name string, want ...string) {
		t.Helper()
		if err := KindDown(t.Context(), name, stateDir, os.Getenv); err != nil {
			t.Fatal(err)
		}
		if got := rt.Networks(); !slices.Equal(got, want) {
			t.Fatalf("networks after deleting %s: %v, want %v", name, got, want)
		}
	}
	docker := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, out)
		}
	}

	// x's create makes the network, y's finds it: x's removal is refused
	// (y uses it), and y's delete removes it.
	up("x")
	up("y")
	down("x", "kind")
	down("y")
	// The same, deleted the other way round.
	up("x")
	up("y")
	down("y", "kind")
	down("x")
	// The user's own network stays.
	docker("network", "create", "kind")
	up("z")
	down("z", "kind")
	docker("network", "rm", "kind")
	// The record is of the network's ID, not its name: one made since
	// by the user is not taken for the one kb-bench made.
	up("x")
	docker("run", "-d", "--name", "user-node", "--net", "kind", DefaultKindNodeImage)
	down("x", "kind") // refused: the user's container uses it
	docker("rm", "-f", "user-node")
	docker("network", "rm", "kind")
	docker("network", "create", "kind")
	up("z")
	down("z", "kind")
	docker("network", "rm", "kind")
	// A create killed before it recorded the network kind made for it,
	// while y's create, which found the network, still uses it: the
	// janitor's removal is refused, and y's delete removes it.
	docker("network", "create", "kind") // kind's, for the killed create
	up("y")
	_ = exec.Command("sh", "-c", kindCleanup("docker", "killed", true)).Run() // the removal is refused
	if got := rt.Networks(); !slices.Equal(got, []string{"kind"}) {
		t.Fatalf("networks after the janitor: %v, want kind (y uses it)", got)
	}
	down("y")
}

// waiting is nil when a lock request on the file at path is waiting
// (a "->" line of /proc/locks names its inode).
func waiting(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	ino := fmt.Sprintf(":%d ", fi.Sys().(*syscall.Stat_t).Ino)
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return err
	}
	for l := range strings.Lines(string(locks)) {
		if strings.Contains(l, "->") && strings.Contains(l, ino) {
			return nil
		}
	}
	return errors.New("no lock request waits on " + path)
}
