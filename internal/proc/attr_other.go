//go:build !linux

package proc

import "syscall"

// attachedAttr puts a child in its own process group. Outside Linux there is
// no parent-death signal: kb-bench's own cleanup alone stops it.
func attachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
