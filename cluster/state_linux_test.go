package cluster

import (
	"context"
	"fmt"
	"github.com/kb-bench/kb-bench/internal/proc"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/kb-bench/kb-bench/spec"
)

// A record whose processes run but are stopped (SIGSTOP) is not "already
// running" either: Up and Status say they are stopped and how to resume
// or remove them.
func TestUpAndStatusOnAStoppedRecord(t *testing.T) {
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Skip("no sleep here")
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pid := sleeper.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Wait for the kernel to show it stopped.
	for !proc.Stopped(pid) {
		if _, running := proc.Stat(pid); !running {
			t.Fatal("the stopped process is gone")
		}
		runtime.Gosched()
	}
	ticks, _ := proc.Stat(pid)
	if ticks == 0 {
		t.Skip("no /proc start times here")
	}
	dir := t.TempDir()
	st := &LocalState{Server: "https://127.0.0.1:1", Dir: filepath.Join(dir, "kb-bench-1"),
		APIServer: ProcessState{PID: pid, StartTicks: ticks}, Etcd: ProcessState{PID: pid, StartTicks: ticks}}
	if err := writeState(dir, st); err != nil {
		t.Fatal(err)
	}
	_, err := Up(context.Background(), UpOptions{Binaries: Binaries{APIServer: "/nonexistent", Etcd: "/nonexistent"}, StateDir: dir})
	if !spec.IsInput(err) || !strings.Contains(err.Error(), "is running but stopped") || !strings.Contains(err.Error(), fmt.Sprintf("kill -CONT %d", pid)) {
		t.Fatalf("Up on a stopped record: %v", err)
	}
	// local status says so too, at once, instead of waiting for /readyz.
	got, err := Status(context.Background(), dir)
	if err != nil || got.Healthy || !strings.Contains(got.Detail, "stopped (SIGSTOP or a debugger)") {
		t.Fatalf("Status of a stopped record: %+v, %v", got, err)
	}
}
