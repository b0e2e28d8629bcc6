package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopKillsTheWholeGroupOfAStubbornProcess: a process that ignores
// SIGTERM is SIGKILLed with its process group, at once when ctx has ended.
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
	time.Sleep(200 * time.Millisecond) // let it start its children
	if n := len(groupMembers(t, p.Pid)); n < 2 {
		t.Fatalf("the group has %d processes, want the shell and its children", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if killed, err := p.Stop(ctx, time.Minute, nil); err != nil || !killed {
		t.Fatalf("Stop: killed %t, %v", killed, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Stop with an ended ctx took %s, want it to SIGKILL at once", d)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(groupMembers(t, p.Pid)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("left in the process group: %v", groupMembers(t, p.Pid))
		}
		time.Sleep(20 * time.Millisecond)
	}
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
	for !Stopped(p.Pid) {
		runtime.Gosched()
	}
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
