package proc

import "syscall"

// attachedAttr puts a child in its own process group (so a Ctrl-C at the
// terminal reaches only kb-bench, which stops it in order) and has the
// kernel SIGKILL it when kb-bench dies.
func attachedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
