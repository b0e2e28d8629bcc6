package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/await"
)

// TestStopKillsTheWholeGroupOfAStubbornProcess: a process that ignores
// SIGTERM is SIGKILLed with its process group, at once when ctx has ended:
// the grace is an hour, longer than any test may run, so Stop returning at
// all shows it did not wait the grace out.
func TestStopKillsTheWholeGroupOfAStubbornProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	// The shell ignores SIGTERM and has a child of its own in its group.
	p, err := Start(exec.Command("/bin/sh", "-c", `trap "" TERM; sleep 60 & while :; do sleep 1; done`), "stubborn", filepath.Join(dir, "log"), false)
	if err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the shell to start its children", func() error {
		if m := groupMembers(t, p.Pid); len(m) < 2 {
			return fmt.Errorf("the group has %v", m)
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	type stopped struct {
		killed bool
		err    error
	}
	done := make(chan stopped, 1)
	go func() {
		killed, err := p.Stop(ctx, time.Hour, nil)
		done <- stopped{killed, err}
	}()
	if s := await.Recv(t, "Stop with an ended ctx to SIGKILL at once, not after the grace", done); s.err != nil || !s.killed {
		t.Fatalf("Stop: killed %t, %v", s.killed, s.err)
	}
	await.Until(t, "the process group to be gone", func() error {
		if left := groupMembers(t, p.Pid); len(left) > 0 {
			return fmt.Errorf("left in the process group: %v", left)
		}
		return nil
	})
}

// A stopped process (SIGSTOP) is continued after SIGTERM, so it stops at
// once instead of after the whole grace period: Stop returns with a
// grace of an hour.
func TestStopAStoppedProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("stopped processes are told only on Linux")
	}
	p, err := Start(exec.Command("sleep", "300"), "stopped", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the process to stop", func() error {
		if !Stopped(p.Pid) {
			return fmt.Errorf("pid %d is not stopped", p.Pid)
		}
		return nil
	})
	if killed, err := p.Stop(context.Background(), time.Hour, nil); err != nil || killed {
		t.Fatalf("Stop: killed %t, %v", killed, err)
	}
}

// groupMembers lists the running processes in process group pgid.
func groupMembers(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// state, ppid, pgrp
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			left = append(left, f)
		}
	}
	return left
}
