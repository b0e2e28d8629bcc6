package counter

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/kb-bench/kb-bench/results"
)

// Correctness: every write is "read the field, add one, write it back", and
// a field starts at 0 (or absent, which reads as 0). So at the end a field
// must hold exactly the number of increments the apiserver accepted for it.
// Fewer means lost updates: some write was based on a stale read and
// overwrote others (last write wins), or removed the field.
//
// A write whose fate kb-bench cannot know (it timed out, the connection
// broke, or the server answered 5xx) may have landed anyway. Such writes are
// counted as uncertain: a field may then hold up to that many more than the
// successful increments and still pass, and lost updates found beside them
// are a lower bound (a landed uncertain write can hide a lost one).

// sharedTally counts every writer's writes to the shared counter of one
// object. It is padded to a cache line: writers of different objects do not
// share one.
type sharedTally struct {
	successes atomic.Int64
	uncertain atomic.Int64
	_         [48]byte
}

// fieldTally counts one writer's writes to its own field of one object; only
// that writer touches it. A shard reports its tallies as JSON.
type fieldTally struct {
	Successes int64 `json:"s"`
	Uncertain int64 `json:"u,omitempty"`
}

// readBack is one field's final state as read back from the apiserver.
type readBack struct {
	found    bool   // the object exists
	raw      string // the value, "" when absent
	value    int64  // raw as a number (0 when absent)
	notCount bool   // raw is not a number
}

// readField returns data[key] of the object called name as a field; an
// object that is in objects without data has no fields.
func readField(objects map[string]map[string]string, name, key string) readBack {
	data, found := objects[name]
	raw, ok := data[key]
	if !ok {
		return readBack{found: found}
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return readBack{found: true, raw: raw, notCount: true} // value 0, not ParseInt's bound
	}
	return readBack{found: true, raw: raw, value: v}
}

// judgement compares one field with the writes made to it.
type judgement struct {
	passed bool
	lost   int64 // increments that succeeded but do not show
	landed int64 // uncertain writes that show
	over   bool  // the field is above every write that was or may have been made
}

func judge(f readBack, successes, uncertain int64) judgement {
	if !f.found || f.notCount {
		return judgement{}
	}
	switch {
	case f.value < successes:
		return judgement{lost: successes - f.value}
	case f.value > successes+uncertain:
		return judgement{over: true}
	default:
		return judgement{passed: true, landed: f.value - successes}
	}
}

// sharedChecks returns one check per object for the shared counter under
// key. objects maps an object's name to its data; a missing name is an
// object that is gone.
func sharedChecks(names []string, objects map[string]map[string]string, key string, tallies []sharedTally) []results.Check {
	checks := make([]results.Check, 0, len(names))
	for i, name := range names {
		f := readField(objects, name, key)
		succ, unc := tallies[i].successes.Load(), tallies[i].uncertain.Load()
		j := judge(f, succ, unc)
		c := results.Check{
			Name:     "counter " + name,
			Passed:   j.passed,
			Expected: succ,
			Observed: f.value,
			Lost:     j.lost,
		}
		switch {
		case !f.found:
			c.Detail = fmt.Sprintf("%s is gone: something deleted it during the run, so its %d increments cannot be checked.", name, succ)
		case f.notCount:
			c.Detail = fmt.Sprintf("%s's %q holds %q, which is not a number: another client wrote this object.", name, key, f.raw)
		case j.lost > 0:
			c.Detail = fmt.Sprintf("%d updates were lost: %d increments of %s succeeded but its counter reads %d; writes computed from a stale read overwrote or repeated them.",
				j.lost, succ, name, f.value)
			if unc > 0 {
				c.Detail += fmt.Sprintf(" That is a lower bound: %d more writes timed out or failed in transit and may have landed.", unc)
			}
		case j.over:
			c.Detail = fmt.Sprintf("%s's counter reads %d, more than the %d increments kb-bench made or may have made: another client wrote this object.",
				name, f.value, succ+unc)
		case j.landed > 0:
			c.Detail = fmt.Sprintf("%d writes that timed out or failed in transit landed anyway (the counter reads %d, %d above the successful increments).",
				j.landed, f.value, j.landed)
		}
		checks = append(checks, c)
	}
	return checks
}

// disjointChecks returns one check per writer for its own field keys[w]
// over every object: the field must hold, in each object, the number of
// increments that writer made there (which is also its last successful
// value). tallies[w][i] is writer w's writes to object i.
func disjointChecks(names []string, objects map[string]map[string]string, keys []string, tallies [][]fieldTally) []results.Check {
	checks := make([]results.Check, 0, len(keys))
	for w, key := range keys {
		c := results.Check{Name: "field " + key, Passed: true}
		var lost, landed, uncertain int64
		var lostIn, gone, overIn int
		var bad string
		for i, name := range names {
			f := readField(objects, name, key)
			t := tallies[w][i]
			j := judge(f, t.Successes, t.Uncertain)
			c.Expected += t.Successes
			c.Observed += f.value
			uncertain += t.Uncertain
			landed += j.landed
			if j.passed {
				continue
			}
			c.Passed = false
			switch {
			case !f.found:
				gone++
			case f.notCount:
				bad = fmt.Sprintf("%s's %q holds %q, which is not a number: another client wrote this object.", name, key, f.raw)
			case j.lost > 0:
				lost += j.lost
				lostIn++
			case j.over:
				overIn++
			}
		}
		c.Lost = lost
		switch {
		case gone > 0:
			c.Detail = fmt.Sprintf("%d of the objects are gone: something deleted them during the run, so %s cannot be checked there.", gone, key)
		case bad != "":
			c.Detail = bad
		case lost > 0:
			c.Detail = fmt.Sprintf("%d updates were lost: writer %d made %d successful increments of its own field %s but the objects hold %d (in %d of them); another writer's write carried a stale copy of the field, or removed it.",
				lost, w, c.Expected, key, c.Observed, lostIn)
			if uncertain > 0 {
				c.Detail += fmt.Sprintf(" That is a lower bound: %d more writes timed out or failed in transit and may have landed.", uncertain)
			}
		case overIn > 0:
			c.Detail = fmt.Sprintf("%s is above every write writer %d made or may have made in %d objects: another client wrote it.", key, w, overIn)
		case landed > 0:
			c.Detail = fmt.Sprintf("%d writes that timed out or failed in transit landed anyway.", landed)
		}
		checks = append(checks, c)
	}
	return checks
}
