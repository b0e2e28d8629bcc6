package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
	// A container runtime that only notes what it is asked.
	calls := filepath.Join(dir, "calls")
	rt := filepath.Join(dir, "docker")
	if err := os.WriteFile(rt, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	removed := func() bool {
		b, _ := os.ReadFile(calls)
		return strings.Contains(string(b), "network rm kind")
	}
	for _, tc := range []struct {
		name   string
		remove func()
	}{
		{"kb-bench", func() { removeKindNetwork(rt) }},
		{"janitor", func() { _ = exec.Command("sh", "-c", kindCleanup(rt, "c", true)).Run() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(calls)
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
