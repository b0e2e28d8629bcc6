package workload

import (
	"testing"
	"time"
)

func TestConstantPacer(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		rate     float64
		elapsed  time.Duration
		hits     uint64
		wantWait time.Duration
		wantStop bool
	}{
		{"first arrival is due at once", 10, 0, 0, 0, false},
		{"second is one period later", 10, 0, 1, 100 * ms, false},
		{"part of the period has passed", 10, 30 * ms, 1, 70 * ms, false},
		{"on time", 10, time.Second, 10, 0, false},
		{"overdue says by how much", 10, 150 * ms, 1, -50 * ms, false},
		{"far behind", 100, time.Second, 50, -500 * ms, false},
		{"fractional period", 3, 0, 1, 333333333, false},
		{"high rate", 1e6, 0, 5, 5 * time.Microsecond, false},
		{"zero rate stops", 0, 0, 0, 0, true},
		{"negative rate stops", -1, 0, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, stop := constantPacer{rate: tt.rate}.pace(tt.elapsed, tt.hits)
			if wait != tt.wantWait || stop != tt.wantStop {
				t.Errorf("pace(%v, %d) at %g/s = (%v, %v), want (%v, %v)", tt.elapsed, tt.hits, tt.rate, wait, stop, tt.wantWait, tt.wantStop)
			}
		})
	}
}

// The arrivals a pacer schedules over a window must number rate x window,
// whatever the steps the dispatcher takes.
func TestConstantPacerScheduleCount(t *testing.T) {
	p := constantPacer{rate: 250}
	var hits uint64
	elapsed := time.Duration(0)
	for elapsed < 2*time.Second {
		wait, _ := p.pace(elapsed, hits)
		if wait > 0 {
			elapsed += wait // a dispatcher that sleeps exactly
			continue
		}
		hits++
	}
	if hits != 500 {
		t.Errorf("scheduled %d arrivals in 2s at 250/s, want 500", hits)
	}
}

func TestDueIn(t *testing.T) {
	p := constantPacer{rate: 10} // due at 0, 100ms, 200ms, ...
	ms := time.Millisecond
	tests := []struct {
		name     string
		hits     uint64
		from, to time.Duration
		limit    uint64
		want     uint64
	}{
		{"none due yet", 5, 0, 450 * ms, 100, 0},
		{"a backlog", 2, 0, 450 * ms, 100, 3}, // 200, 300, 400
		{"due exactly at the end is not due", 2, 0, 400 * ms, 100, 2},
		{"warm-up arrivals are not counted", 0, 250 * ms, 450 * ms, 100, 2},
		{"limited by the operations left", 0, 0, time.Second, 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dueIn(p, tt.hits, tt.from, tt.to, tt.limit); got != tt.want {
				t.Errorf("dueIn(%d, %v, %v, %d) = %d, want %d", tt.hits, tt.from, tt.to, tt.limit, got, tt.want)
			}
		})
	}
}
