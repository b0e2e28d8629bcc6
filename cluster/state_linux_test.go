package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/kb-bench/kb-bench/spec"
)

// A record whose processes run but are stopped (SIGSTOP) is not "already
// running" either: Up says they are stopped and how to resume or remove
// them.
func TestUpOnAStoppedRecord(t *testing.T) {
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
	for !stopped(pid) {
		if _, running := procStat(pid); !running {
			t.Fatal("the stopped process is gone")
		}
		runtime.Gosched()
	}
	ticks, _ := procStat(pid)
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
}
