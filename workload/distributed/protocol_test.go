package distributed

import (
	"strings"
	"testing"
	"time"
)

// share splits every thing exactly once, in parts that differ by at most one.
func TestShareSplitsExactly(t *testing.T) {
	for _, c := range []struct{ total, n int }{{6, 3}, {7, 3}, {1, 1}, {100000, 7}, {5, 5}} {
		next, lo0, hi0 := 0, c.total, 0
		for i := range c.n {
			lo, hi := share(c.total, c.n, i)
			if lo != next {
				t.Fatalf("share(%d, %d, %d) starts at %d, want %d", c.total, c.n, i, lo, next)
			}
			next = hi
			lo0, hi0 = min(lo0, hi-lo), max(hi0, hi-lo)
		}
		if next != c.total || hi0-lo0 > 1 {
			t.Errorf("share(%d, %d, ·) covers %d, part sizes %d to %d", c.total, c.n, next, lo0, hi0)
		}
	}
}

// The coordinator waits for every shard and fails on the first that
// failed, with its name and reason.
func TestJudgeStates(t *testing.T) {
	states := map[int]shardState{0: {state: QuietStart}, 1: {state: Joined}}
	if done, err := judgeStates(states, 2, Joined); !done || err != nil {
		t.Errorf("both joined (one further on): done=%v err=%v", done, err)
	}
	if done, _ := judgeStates(states, 2, QuietStart); done {
		t.Error("shard 1 is not quiet yet")
	}
	if done, _ := judgeStates(states, 3, Joined); done {
		t.Error("shard 2 never joined")
	}
	states[2] = shardState{state: stateJoining}
	if done, _ := judgeStates(states, 3, Joined); done {
		t.Error("shard 2 made its Lease but is still getting ready")
	}
	delete(states, 2)
	if got := notIn(states, 3, QuietStart); got != "1, 2" {
		t.Errorf("late shards: %q", got)
	}
	states[1] = shardState{state: stateFailed, holder: "node-a pid 7", reason: "forbidden"}
	_, err := judgeStates(states, 2, QuietEnd)
	if err == nil || !strings.Contains(err.Error(), "shard 1 (node-a pid 7) failed: forbidden") {
		t.Errorf("failed shard: %v", err)
	}
}

func TestStampsRoundTrip(t *testing.T) {
	a := time.Date(2026, 11, 23, 13, 40, 1, 123456789, time.UTC)
	got1, got2, err := parseStamps(stamp(a) + " " + stamp(time.Time{}))
	if err != nil || !got1.Equal(a) || !got2.IsZero() {
		t.Errorf("parsed %v %v %v", got1, got2, err)
	}
	if _, _, err := parseStamps("yesterday"); err == nil {
		t.Error("nonsense parsed")
	}
}
