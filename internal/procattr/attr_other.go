//go:build !linux

// Package procattr holds how kb-bench starts its child processes (the local
// control plane, shard processes): tied to kb-bench's life, or outliving it.
package procattr

import "syscall"

// Attached puts a child in its own process group. Outside Linux there is
// no parent-death signal: kb-bench's own cleanup alone stops it.
func Attached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Detached gives a child its own session so it outlives kb-bench.
func Detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
