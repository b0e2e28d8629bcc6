package controllerstatus

import "time"

// pacer decides when one worker starts its next reconcile. In a closed loop
// (rate 0) a worker starts as soon as it is done, after the think time. In
// an open loop the total rate is spread evenly over the workers: each keeps
// its own schedule, staggered from the others, and a reconcile that starts
// after its slot is late; its latency still counts from the schedule.
type pacer struct {
	think    time.Duration
	interval time.Duration // open loop only
	at       time.Time     // open loop: the next slot
	started  bool
	now      func() time.Time
	wait     func(d time.Duration, stop <-chan struct{}) bool
}

// newPacer returns the pacer of worker index (of workers) for a run that
// starts at t0 with a total rate in operations per second (0: closed loop).
func newPacer(t0 time.Time, rate float64, think time.Duration, index, workers int) *pacer {
	p := &pacer{think: think, now: time.Now, wait: waitStop}
	if rate > 0 {
		p.interval = time.Duration(float64(workers) / rate * float64(time.Second))
		p.at = t0.Add(p.interval * time.Duration(index) / time.Duration(workers))
	}
	return p
}

// next waits for the worker's next start and returns when it was intended
// and whether it is late. ok is false once stop is closed.
func (p *pacer) next(stop <-chan struct{}) (intended time.Time, late, ok bool) {
	select {
	case <-stop:
		return time.Time{}, false, false
	default:
	}
	if p.interval == 0 {
		if p.started && p.think > 0 && !p.wait(p.think, stop) {
			return time.Time{}, false, false
		}
		p.started = true
		return p.now(), false, true
	}
	intended = p.at
	p.at = p.at.Add(p.interval)
	if d := intended.Sub(p.now()); d > 0 {
		if !p.wait(d, stop) {
			return time.Time{}, false, false
		}
		return intended, false, true
	}
	return intended, true, true
}

// waitStop sleeps d unless stop closes first; it reports whether d passed.
func waitStop(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}
