package bench

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/spec"
)

// abRun saves an A/B run's directory of n samples a side, copies of the
// result in testdata/run, each side's samples starting after the other's
// (as the start times of a run of one sample a side, or an interrupted
// one, do).
func abRun(t *testing.T, n int) string {
	t.Helper()
	r, err := store.Read(t.Context(), "testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	late := *r
	late.Started = r.Started.Add(time.Minute)
	saveSet(t, r, filepath.Join(dir, "baseline"), "baseline", 1, n)
	saveSet(t, &late, filepath.Join(dir, "candidate"), "candidate", 2, n)
	return dir
}

// Gating an A/B run's directory, or its two sides named as such, does
// not say its samples were not interleaved: an A/B run interleaves them,
// whatever a run of one sample a side shows in its start times. Stored
// results of another run still get the note.
func TestGateOfAnABRunIsInterleaved(t *testing.T) {
	dir := abRun(t, 1)
	for name, req := range map[string]GateRequest{
		"the directory": {Candidate: dir},
		"its two sides": {Baseline: filepath.Join(dir, "baseline"), Candidate: filepath.Join(dir, "candidate") + "/"},
	} {
		var notes bytes.Buffer
		req.Notes = &notes
		if _, err := Gate(t.Context(), req); err != nil && !errors.Is(err, ErrGateFailed) {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(notes.String(), "not interleaved") {
			t.Errorf("%s: %s", name, notes.String())
		}
	}
	other := abRun(t, 1)
	var notes bytes.Buffer
	if _, err := Gate(t.Context(), GateRequest{Baseline: filepath.Join(other, "baseline"), Candidate: filepath.Join(dir, "candidate"), Notes: &notes}); err != nil && !errors.Is(err, ErrGateFailed) {
		t.Fatal(err)
	}
	if !strings.Contains(notes.String(), "not interleaved") {
		t.Errorf("a baseline of another run: no note: %q", notes.String())
	}
}

// compare reads an A/B run's directory as its two sides; other readers
// call it an A/B run, not a matrix run.
func TestCompareAnABRun(t *testing.T) {
	dir := abRun(t, 2)
	c, err := Compare(t.Context(), []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sides) != 2 || c.Sides[0].Label != "baseline" || c.Sides[1].Label != "candidate" {
		t.Errorf("sides %+v, want baseline and candidate", c.Sides)
	}
	if _, err := Compare(t.Context(), []string{filepath.Join(dir, "baseline")}, nil); !spec.IsInput(err) || !strings.Contains(err.Error(), "two results or more") {
		t.Errorf("one side alone: %v", err)
	}
	_, _, err = store.ReadSide(t.Context(), dir)
	if err == nil || !strings.Contains(err.Error(), "is an A/B run") || strings.Contains(err.Error(), "matrix") {
		t.Errorf("reading an A/B run as one side: %v", err)
	}
}

// The same run copied into both sides is noticed: gate refuses it,
// naming the run, exit status 2; compare says so in a note.
func TestSameRunOnBothSidesIsRefused(t *testing.T) {
	dir := abRun(t, 2)
	copied := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(copied, os.DirFS(filepath.Join(dir, "candidate"))); err != nil {
		t.Fatal(err)
	}
	cand := filepath.Join(dir, "candidate")
	if c, err := Compare(t.Context(), []string{copied, cand}, nil); err != nil || len(c.Notes) == 0 || !strings.Contains(c.Notes[0], "both hold run candidate-1, figures and all") {
		t.Errorf("compare: %v, notes %q", err, c.Notes)
	}
	if _, err := Gate(t.Context(), GateRequest{Baseline: copied, Candidate: cand}); !spec.IsInput(err) || !strings.Contains(err.Error(), "both hold run candidate-1") {
		t.Errorf("gate: %v", err)
	}
}

// A baseline of another scenario is refused, --force or not: a quota's
// creates and a counter's read-modify-writes are not one "throughput".
func TestGateRefusesAnotherScenario(t *testing.T) {
	r, err := store.Read(t.Context(), "testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	quota := *r
	quota.RunID, quota.Spec.Scenario = "quota-1", "quota"
	if _, err := judge(nil, []*results.Result{&quota}, []*results.Result{r}, true); !spec.IsInput(err) || !strings.Contains(err.Error(), "scenario quota, the candidate counter") {
		t.Errorf("judge: %v", err)
	}
}

// An A/B request is checked for what would mislead: a setting given
// twice to --baseline-with (which one would win?), a baseline of another
// scenario; and a baseline profile's own thresholds, which are not used,
// are named in a note.
func TestSidesRefuseAmbiguity(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"a setting twice", Request{Baseline: &Baseline{Overrides: []Override{Set("writers", 4), Set("writers", 8)}}},
			"--baseline-with writers=4 and --baseline-with writers=8 set writers twice"},
		{"another scenario", Request{Baseline: &Baseline{Overrides: []Override{Set("scenario", "quota")}}}, "the baseline runs scenario quota, the candidate counter"},
	} {
		if _, err := Resolve(t.Context(), tc.r); !spec.IsInput(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want bad input saying %q", tc.name, err, tc.want)
		}
	}
	prof := filepath.Join(t.TempDir(), "main.yaml")
	if err := os.WriteFile(prof, []byte("apiVersion: kb-bench.io/v1alpha1\nkind: Profile\nspec:\n  writers: 3\nthresholds:\n- p99 < 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := resolve(t, Request{Baseline: &Baseline{File: prof}})
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "thresholds of its own (p99 < 1s): they are not used") {
		t.Errorf("notes %q", p.Notes)
	}
}
