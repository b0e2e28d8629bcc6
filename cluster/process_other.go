//go:build !linux

package cluster

import (
	"errors"
	"syscall"
)

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
