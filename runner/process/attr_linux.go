package process

import "syscall"

// attr puts a shard in its own process group (a Ctrl-C at the terminal
// reaches only the coordinator, which ends the shards in order) and has
// the kernel SIGKILL it when the coordinator dies.
func attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
