//go:build unix

package netdelay

import (
	"syscall"
	"time"
)

// nanosleep blocks the calling thread for d (see Sleep).
func nanosleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
