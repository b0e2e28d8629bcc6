//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// Stat has no start time outside Linux; it reports whether pid exists.
func Stat(pid int) (uint64, bool) {
	err := syscall.Kill(pid, 0)
	return 0, err == nil || errors.Is(err, syscall.EPERM)
}

// Stopped is not detected outside Linux.
func Stopped(int) bool { return false }

// Alive reports whether pid exists.
func Alive(pid int, _ uint64) bool { _, ok := Stat(pid); return pid > 0 && ok }
