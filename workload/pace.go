package workload

import "time"

// constantPacer decides when open-loop arrivals are due: rate arrivals per
// second, evenly spaced, arrival n at n/rate seconds. It is a pure function
// of time since the start and the number of arrivals already sent, so it
// can be tested without a clock.
type constantPacer struct {
	rate float64
}

// pace returns how long after elapsed arrival number hits (counting from
// 0) is due. A negative wait means the arrival is overdue by that much, so
// the caller still knows when it was scheduled. stop reports that no more
// arrivals will come.
func (p constantPacer) pace(elapsed time.Duration, hits uint64) (wait time.Duration, stop bool) {
	if p.rate <= 0 {
		return 0, true
	}
	due := time.Duration(float64(hits) * float64(time.Second) / p.rate)
	return due - elapsed, false
}
