package counter

import (
	"testing"

	"github.com/kb-bench/kb-bench/spec"
)

// A shard's writers keep their run-wide numbers (their fields, field
// managers and object choices are what one process would give them), and
// the coordinator's checks add up every shard's writes.
func TestShardsTallyAddsUp(t *testing.T) {
	for _, fields := range []Fields{FieldsShared, FieldsDisjoint} {
		t.Run(string(fields), func(t *testing.T) {
			s := spec.Spec{Writers: 5, Strategy: spec.StrategySSA}
			set := Settings{Objects: 2, Fields: fields}
			coord, _ := fakeRun(t, s, set, &fakeAPI{}, nil)
			var shards []*counter
			for _, r := range [][2]int{{0, 2}, {2, 5}} {
				c, _ := fakeRun(t, s, set, &fakeAPI{}, nil)
				if err := c.Join(t.Context(), r[0], r[1]); err != nil {
					t.Fatal(err)
				}
				if c.Workers() != r[1]-r[0] || c.writers[0].id != r[0] {
					t.Fatalf("shard [%d, %d): %d workers, first writer %d", r[0], r[1], c.Workers(), c.writers[0].id)
				}
				if want := coord.writers[r[0]].applyOpts.FieldManager; c.writers[0].applyOpts.FieldManager != want {
					t.Errorf("shard [%d, %d): field manager %q, one process gives %q", r[0], r[1], c.writers[0].applyOpts.FieldManager, want)
				}
				shards = append(shards, c)
			}
			// Writer w makes w+1 increments of object 1, one uncertain.
			for _, c := range shards {
				for _, w := range c.writers {
					n := int64(w.id + 1)
					if c.shared != nil {
						c.shared[1].successes.Add(n)
						c.shared[1].uncertain.Add(1)
					} else {
						w.own[1].Successes += n
						w.own[1].Uncertain++
					}
				}
				tally, err := c.Tally()
				if err != nil {
					t.Fatal(err)
				}
				if err := coord.AddTally(tally); err != nil {
					t.Fatal(err)
				}
			}
			var succ, unc int64
			if coord.shared != nil {
				succ, unc = coord.shared[1].successes.Load(), coord.shared[1].uncertain.Load()
			} else {
				for w, wr := range coord.writers {
					if wr.own[1].Successes != int64(w+1) || wr.own[0].Successes != 0 {
						t.Errorf("writer %d: %+v, want %d increments of object 1", w, wr.own, w+1)
					}
					succ += wr.own[1].Successes
					unc += wr.own[1].Uncertain
				}
			}
			if succ != 1+2+3+4+5 || unc != 5 {
				t.Errorf("coordinator counts %d increments (%d uncertain), want 15 (5)", succ, unc)
			}
			if err := coord.AddTally([]byte(`{"shared":[{"s":1}]}`)); err == nil && coord.shared != nil {
				t.Error("a tally of 1 object added to a run of 2")
			}
			if c := shards[0]; c.Join(t.Context(), 4, 6) == nil {
				t.Error("writers [4, 6) of 5 joined")
			}
		})
	}
}
