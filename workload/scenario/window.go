package scenario

import "time"

// Window tells a Continuous scenario when the measured window opens. The
// engine opens it after the warm-up and the window's first edge (new
// requests held, /metrics scraped, an idle second), which on a loaded
// machine takes seconds more than the warm-up: a scenario that times
// something "into the window" (a fault, a failover) counts from Start,
// not from its own clock, or it acts while its requests are held.
type Window struct {
	opened chan struct{}
	start  time.Time
}

// NewWindow returns a window that is not open yet.
func NewWindow() *Window { return &Window{opened: make(chan struct{})} }

// Open opens the window at start, once the window's requests may be sent.
// The engine calls it once.
func (w *Window) Open(start time.Time) {
	w.start = start
	close(w.opened)
}

// Opened is closed when the window opens; a nil Window never opens.
func (w *Window) Opened() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.opened
}

// Start is when the window opened, and whether it has.
func (w *Window) Start() (time.Time, bool) {
	select {
	case <-w.Opened():
		return w.start, true
	default:
		return time.Time{}, false
	}
}
