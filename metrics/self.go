package metrics

import (
	"fmt"
	"syscall"
	"time"
)

// ReadSelf reads this process's CPU time (user plus system, every thread,
// from getrusage), the client's side of a run's cost.
func ReadSelf() (ProcessSample, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return ProcessSample{}, fmt.Errorf("reading kb-bench's own CPU time: %w", err)
	}
	cpu := time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())
	return ProcessSample{Has: true, CPUSeconds: cpu.Seconds()}, nil
}
