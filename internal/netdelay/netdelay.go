// Package netdelay adds network latency in userspace, without root or tc:
// a Delay draws each one-way delay of a round trip (with jitter), a Meter
// records the delay actually added, and Proxy is a TCP proxy that holds
// every chunk of bytes for one such delay in each direction, keeping their
// order, the way kb-bench puts a network between the local apiservers and
// etcd. kb-bench's client transport uses Delay and Meter for the client
// side.
package netdelay

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

// Delay is a round trip to add: half of RTT each way, each half varied
// uniformly by up to plus or minus Jitter/2, so a round trip varies by up
// to plus or minus Jitter.
type Delay struct {
	RTT, Jitter time.Duration
}

// Zero reports whether d adds nothing.
func (d Delay) Zero() bool { return d.RTT <= 0 && d.Jitter <= 0 }

// OneWay draws one direction's delay (never negative).
func (d Delay) OneWay() time.Duration {
	w := d.RTT / 2
	if d.Jitter > 0 {
		w += time.Duration(rand.Int64N(int64(d.Jitter)+1)) - d.Jitter/2
	}
	return max(w, 0)
}

// Meter records delays actually added; safe for concurrent use.
type Meter struct {
	mu    sync.Mutex
	count int64
	sum   time.Duration
	max   time.Duration
}

// Add records one added delay.
func (m *Meter) Add(d time.Duration) {
	m.mu.Lock()
	m.count++
	m.sum += d
	m.max = max(m.max, d)
	m.mu.Unlock()
}

// Read returns what m recorded: the count, the mean and the largest.
func (m *Meter) Read() spec.DelayObserved {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := spec.DelayObserved{Count: m.count, Max: spec.D(m.max)}
	if m.count > 0 {
		o.Mean = spec.D(m.sum / time.Duration(m.count))
	}
	return o
}

// sleepSlice is the longest one nanosleep waits before Sleep looks at
// done again.
const sleepSlice = 10 * time.Millisecond

// Sleep waits d, or until done is closed (seen within 10ms), and returns
// how long it waited.
//
// Go's timers wake a sleeping goroutine through the network poller, whose
// wait has millisecond resolution: a 500µs timer sleeps about 1.1ms here,
// which would double a 1ms round trip. Sleep blocks its thread in
// nanosleep(2) instead (the runtime hands the thread's P to other
// goroutines), which overshoots by tens of microseconds.
func Sleep(done <-chan struct{}, d time.Duration) time.Duration {
	start := time.Now()
	for {
		left := d - time.Since(start)
		if left <= 0 {
			break
		}
		select {
		case <-done:
			return time.Since(start)
		default:
		}
		nanosleep(min(left, sleepSlice))
	}
	return time.Since(start)
}
