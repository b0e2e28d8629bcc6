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
	"time"

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
	// local status says so too, at once, instead of waiting for /readyz.
	got, err := Status(context.Background(), dir)
	if err != nil || got.Healthy || !strings.Contains(got.Detail, "stopped (SIGSTOP or a debugger)") {
		t.Fatalf("Status of a stopped record: %+v, %v", got, err)
	}
}

// A stopped process (SIGSTOP) is continued after SIGTERM, so it stops at
// once instead of after the whole grace period: terminate returns with a
// grace of an hour.
func TestTerminateAStoppedProcess(t *testing.T) {
	p, err := startProcess("stopped", "sleep", []string{"300"}, filepath.Join(t.TempDir(), "log"), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for !stopped(p.pid) {
		runtime.Gosched()
	}
	if err := p.terminate(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
}
