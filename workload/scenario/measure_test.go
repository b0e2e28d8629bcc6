package scenario

import (
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

// WaitBackoff keeps client-go's meaning of Steps: attempts, not retries.
func TestBackoffMapping(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		flag      string
		wantSteps int
		// wantSleeps are the sleeps between attempts without jitter.
		wantSleeps []time.Duration
	}{
		{"default-retry", 5, []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms}},
		{"default-backoff", 4, []time.Duration{10 * ms, 50 * ms, 250 * ms}},
		{"3,5ms,2,0", 3, []time.Duration{5 * ms, 10 * ms}},
		{"1,5ms,2,0", 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			b, err := spec.ParseBackoff(tt.flag)
			if err != nil {
				t.Fatal(err)
			}
			wb := WaitBackoff(b)
			if wb.Steps != tt.wantSteps || wb.Duration != b.Duration || wb.Factor != b.Factor || wb.Jitter != b.Jitter {
				t.Fatalf("wait.Backoff = %+v from %+v", wb, b)
			}
			// wait.ExponentialBackoff makes Steps attempts and sleeps
			// Step() between them: check the schedule without jitter.
			wb.Jitter = 0
			var sleeps []time.Duration
			for wb.Steps > 1 {
				sleeps = append(sleeps, wb.Step())
			}
			if len(sleeps) != len(tt.wantSleeps) {
				t.Fatalf("sleeps = %v, want %v", sleeps, tt.wantSleeps)
			}
			for i := range sleeps {
				if sleeps[i] != tt.wantSleeps[i] {
					t.Errorf("sleeps = %v, want %v", sleeps, tt.wantSleeps)
					break
				}
			}
		})
	}
}
