// Package procattr holds how kb-bench starts its child processes (the local
// control plane, shard processes): tied to kb-bench's life, or outliving it.
package procattr

import "syscall"

// Attached puts a child in its own process group (so a Ctrl-C at the
// terminal reaches only kb-bench, which stops it in order) and has the
// kernel SIGKILL it when kb-bench dies.
func Attached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Detached gives a child its own session so it outlives kb-bench.
func Detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
