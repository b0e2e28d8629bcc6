//go:build !unix

package netdelay

import "time"

// nanosleep waits d with Go's timer (millisecond resolution).
func nanosleep(d time.Duration) { time.Sleep(d) }
