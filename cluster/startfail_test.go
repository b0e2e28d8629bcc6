package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/await"
)

// scriptBinaries makes a Binaries whose etcd and kube-apiserver are the
// given shell scripts.
func scriptBinaries(t *testing.T, etcd, apiserver string) Binaries {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"etcd": etcd, "kube-apiserver": apiserver} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := FindBinaries(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kbBenchDirs lists the kb-bench-* entries in dir.
func kbBenchDirs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "kb-bench-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// startReturns runs StartLocal and returns its error, failing t if it
// does not return: a start that fails must say so, not hang.
func startReturns(t *testing.T, ctx context.Context, o LocalOptions) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		cp, err := StartLocal(ctx, o)
		if err == nil {
			_ = cp.Stop(context.Background())
		}
		errc <- err
	}()
	return await.Recv(t, "StartLocal to return", errc)
}

func TestStartFailuresExplainAndCleanUp(t *testing.T) {
	attempts := filepath.Join(t.TempDir(), "attempts")
	tests := []struct {
		name         string
		etcd         string
		timeout      time.Duration
		wantErr      []string
		wantAttempts int
	}{
		{
			name:    "etcd exits",
			etcd:    "for i in $(seq 1 30); do echo etcd line $i; done; echo 'etcd: bad flag' >&2; exit 3",
			wantErr: []string{"etcd exited: exit status 3", "etcd log (last 20 lines)", "etcd line 30", "etcd: bad flag", "kube-apiserver log (last 20 lines) ---\n(not started)"},
		},
		{
			name:    "etcd never gets healthy",
			etcd:    "echo waiting; exec sleep 3600",
			timeout: time.Second,
			wantErr: []string{"etcd was not ready within 1s", "waiting"},
		},
		{
			name:         "a port is taken: retried on other ports",
			etcd:         "echo x >> " + attempts + "; echo 'listen tcp 127.0.0.1:2379: bind: address already in use'; exit 1",
			wantErr:      []string{"address already in use"},
			wantAttempts: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			err := startReturns(t, context.Background(), LocalOptions{
				Binaries: scriptBinaries(t, tc.etcd, "exit 1"), StartTimeout: tc.timeout, Dir: base,
			})
			if err == nil {
				t.Fatal("StartLocal succeeded")
			}
			t.Logf("%v", err)
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not say %q:\n%v", s, err)
				}
			}
			if strings.Contains(err.Error(), "etcd line 10\n") {
				t.Errorf("error quotes more than the last 20 lines:\n%v", err)
			}
			if left := kbBenchDirs(t, base); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if tc.wantAttempts > 0 {
				b, _ := os.ReadFile(attempts)
				if n := strings.Count(string(b), "x"); n != tc.wantAttempts {
					t.Errorf("started etcd %d times, want %d", n, tc.wantAttempts)
				}
			}
		})
	}
}

func TestStartInterrupted(t *testing.T) {
	base := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// etcd never gets ready and StartTimeout is an hour: only the
	// interrupt can end the start.
	err := startReturns(t, ctx, LocalOptions{Binaries: scriptBinaries(t, "exec sleep 3600", "exit 1"), StartTimeout: time.Hour, Dir: base})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("StartLocal = %v, want the context's error", err)
	}
	if left := kbBenchDirs(t, base); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestDiskStorageStaysOnDiskWhenTmpIsInMemory: with the temp dir on a
// tmpfs, disk storage must still put etcd's data on a disk.
func TestDiskStorageStaysOnDiskWhenTmpIsInMemory(t *testing.T) {
	if !onMemoryFS(memoryDir) {
		t.Skipf("%s is not a tmpfs here", memoryDir)
	}
	cache := t.TempDir()
	if onMemoryFS(cache) {
		t.Skip("the test's temp dir is in memory too")
	}
	t.Setenv("XDG_CACHE_HOME", cache)
	record := filepath.Join(t.TempDir(), "args")
	// The fake etcd records its arguments and exits: enough to see where
	// its data would go.
	bins := scriptBinaries(t, `echo "$@" > `+record+`; exit 1`, "exit 1")
	base, err := os.MkdirTemp(memoryDir, "kb-bench-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	if _, err := StartLocal(context.Background(), LocalOptions{Binaries: bins, Dir: base}); err == nil {
		t.Fatal("StartLocal succeeded with a fake etcd")
	}
	args, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	want := "--data-dir=" + filepath.Join(cache, "kb-bench", "kb-bench-etcd-")
	if !strings.Contains(string(args), want) {
		t.Errorf("etcd ran with %s\nwant its data under %s", args, want)
	}
	if left := kbBenchDirs(t, filepath.Join(cache, "kb-bench")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
