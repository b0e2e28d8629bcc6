//go:build !linux

package cluster

import (
	"errors"
	"syscall"
)

// attachedAttr puts a child in its own process group. Outside Linux there is
// no parent-death signal: the janitor alone cleans up after a kill -9.
func attachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// detachedAttr gives a child its own session so it outlives kb-bench.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// procStat has no start time outside Linux; it reports whether pid exists.
func procStat(pid int) (uint64, bool) {
	err := syscall.Kill(pid, 0)
	return 0, err == nil || errors.Is(err, syscall.EPERM)
}

// stopped is not detected outside Linux.
func stopped(int) bool { return false }

func alive(pid int, _ uint64) bool { _, ok := procStat(pid); return pid > 0 && ok }

// onMemoryFS is not detected outside Linux.
func onMemoryFS(string) bool { return false }
