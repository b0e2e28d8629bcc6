// Command pause is the offline kind node image's pod sandbox process, a
// stand-in for Kubernetes' pause (which is C): it holds the pod's
// namespaces by sleeping until SIGINT or SIGTERM, and, as PID 1 of a pod
// that shares its process namespace, reaps the zombies other containers
// leave behind. scripts/kind-node-image.sh builds it statically.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (kb-bench kind node image)")
		return
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: shutting down, got signal %v\n", s)
			return
		}
		reap()
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
