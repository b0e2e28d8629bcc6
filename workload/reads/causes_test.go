package reads

import (
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
)

// A 409 is stale at read when a write newer than the version read had
// been acknowledged before the read began, else overtaken; a stale read
// counts the acknowledged writes it missed.
func TestConflictCauses(t *testing.T) {
	a := &NewAcks(1, true)[0]
	for _, rv := range []int64{10, 12, 11, 15} { // acks arrive out of order
		a.Add(rv, time.Time{}, false)
	}
	if got := a.Latest(); got != 15 {
		t.Fatalf("latest ack %d, want 15", got)
	}
	c := NewCauses()
	c.Conflict(a, 15, "15") // read the newest: then overtaken
	c.Conflict(a, 10, "10") // read fresh when it began (latest was 10)
	c.Conflict(a, 15, "10") // three writes (11, 12, 15) had been acknowledged
	c.Conflict(a, 12, "11") // one (12)
	got := map[string]float64{}
	for _, f := range c.Figures() {
		got[f.Key()] = f.Value
	}
	want := map[string]float64{
		`conflictsByCause{cause="staleRead"}`: 2, `conflictsByCause{cause="overtaken"}`: 2, "staleReadShare": 0.5,
		`versionsBehind{quantile="0.5"}`: 1, `versionsBehind{quantile="0.99"}`: 3, `versionsBehind{quantile="1"}`: 3,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %g, want %g (all: %v)", k, got[k], v, got)
		}
	}
	if errs := results.ValidateFigures(nil, c.Figures()); len(errs) > 0 {
		t.Errorf("figures do not validate: %v", errs)
	}
}

// The ring keeps the latest Ring acks: a read further behind counts
// the versions the ring still holds.
func TestAcksRingKeepsTheLatest(t *testing.T) {
	a := &NewAcks(1, true)[0]
	for rv := int64(1); rv <= 3*Ring; rv++ {
		a.Add(rv, time.Time{}, false)
	}
	if got := a.behind(0, 3*Ring); got != Ring {
		t.Errorf("behind = %d, want the %d acks kept", got, Ring)
	}
}
