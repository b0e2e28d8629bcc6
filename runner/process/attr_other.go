//go:build !linux

package process

import "syscall"

// attr puts a shard in its own process group.
func attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
