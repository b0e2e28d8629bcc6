package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

// resolve resolves a request of the given overrides that must be good.
func resolve(t *testing.T, r Request) *Plan {
	t.Helper()
	p, err := Resolve(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOverridesReplaceTheProfile(t *testing.T) {
	p := resolve(t, Request{Profile: "hot-key", Overrides: []Override{Set("writers", 3), Set("duration", spec.D(2*time.Second))}})
	s := p.Cells[0].Spec
	if s.Writers != 3 || s.Duration.Duration != 2*time.Second {
		t.Errorf("the overrides did not replace the profile's: writers %d, duration %s", s.Writers, s.Duration)
	}
	if s.Settings["distribution"] != "zipf" || s.Settings["objects"] != float64(100) {
		t.Errorf("the profile's own settings were lost: %v", s.Settings)
	}
	if s.Target.Kind != spec.TargetLocal {
		t.Errorf("target %q, want local", s.Target.Kind)
	}
	if p.Source != "profile hot-key" || len(p.Cells) != 1 || p.Cells[0].Label != "" || p.Count != 1 {
		t.Errorf("plan %+v: want one cell of the profile, one sample", p)
	}
}

func TestContextAloneSelectsKubeconfigTarget(t *testing.T) {
	s := resolve(t, Request{Overrides: []Override{Set("context", "staging")}}).Cells[0].Spec
	if s.Target.Kind != spec.TargetKubeconfig || s.Target.Context != "staging" {
		t.Fatalf("target %+v, want kubeconfig with context staging", s.Target)
	}
}

// A list given to a matrix setting runs every combination; each is
// resolved and validated on its own, and the samples interleave.
func TestMatrix(t *testing.T) {
	p := resolve(t, Request{Count: 2, Overrides: []Override{Set("strategy", "update", "retry", "ssa"), Set("writers", 1, 8)}})
	var got []string
	for _, c := range p.Cells {
		got = append(got, c.Label)
		if c.Spec.Strategy == spec.StrategyRetry && c.Spec.Backoff == nil {
			t.Errorf("%s: retry without its default backoff", c.Label)
		}
		if !strings.Contains(c.Workload, "strategy "+string(c.Spec.Strategy)) {
			t.Errorf("%s: workload %q", c.Label, c.Workload)
		}
	}
	want := "strategy=update writers=1|strategy=update writers=8|strategy=retry writers=1|strategy=retry writers=8|strategy=ssa writers=1|strategy=ssa writers=8"
	if strings.Join(got, "|") != want {
		t.Errorf("cells %q, want %q", strings.Join(got, "|"), want)
	}
	// Rounds: sample 1 of every cell, then sample 2 of every cell; the
	// order is drawn once.
	order := p.Samples()
	if len(order) != 12 || !slices.Equal(order, p.Samples()) {
		t.Fatalf("samples %v, then %v: want 12, the same each time", order, p.Samples())
	}
	for round := range 2 {
		var cells []int
		for _, smp := range order[6*round : 6*round+6] {
			if smp.Index != round+1 {
				t.Errorf("samples %v: round %d holds sample %d", order, round+1, smp.Index)
			}
			cells = append(cells, smp.Cell)
		}
		if slices.Sort(cells); !slices.Equal(cells, []int{0, 1, 2, 3, 4, 5}) {
			t.Errorf("samples %v: round %d runs cells %v, want every cell once", order, round+1, cells)
		}
	}
}

// Each round's order is drawn at random, so that with no real difference
// which side of a pair met a slow moment is a coin toss: over 1,000
// rounds of two cells both orders come up, neither in more than 60% of
// them (a fair coin goes beyond that once in some billions of runs; a
// fixed order, A B B A, would come out at exactly 50%, so the test asks
// for a draw too: not every round like its neighbour).
func TestRoundsRunInARandomOrder(t *testing.T) {
	const rounds = 1000
	first, same := 0, 0
	order := interleave(2, rounds, rand.Perm)
	for i := 0; i < len(order); i += 2 {
		if order[i].Index != order[i+1].Index || order[i].Cell == order[i+1].Cell {
			t.Fatalf("round %d: %v, want both cells' sample %d", i/2+1, order[i:i+2], i/2+1)
		}
		if order[i].Cell == 0 {
			first++
		}
		if i > 0 && order[i].Cell == order[i-2].Cell {
			same++
		}
	}
	if first < rounds*4/10 || first > rounds*6/10 || same < rounds*4/10 || same > rounds*6/10 {
		t.Errorf("the baseline went first in %d of %d rounds, and %d rounds began as the one before: not a fair draw", first, rounds, same)
	}
}

// An A/B run that names no count takes DefaultABCount samples a side, the
// count whose false alarms and power the README states; a single run
// still takes one, and a count given is kept.
func TestABCountDefault(t *testing.T) {
	ab := Request{Baseline: &Baseline{Overrides: []Override{Set("writers", 1)}}}
	if got := resolve(t, ab).Count; got != DefaultABCount {
		t.Errorf("an A/B run with no --count takes %d samples a side, want %d", got, DefaultABCount)
	}
	ab.Count = 3
	if got := resolve(t, ab).Count; got != 3 {
		t.Errorf("an A/B run with --count 3 takes %d samples a side", got)
	}
	if got := resolve(t, Request{}).Count; got != 1 {
		t.Errorf("a run with no --count takes %d samples, want 1", got)
	}
}

// An A/B request is two cells, baseline then candidate: the candidate as
// asked, the baseline the same settings with its own on top, or from its
// own profile; sides on different local control planes each get a fresh
// one per sample.
func TestSides(t *testing.T) {
	p := resolve(t, Request{Count: 5, Overrides: []Override{Set("writers", 16), Set("duration", spec.D(time.Second))},
		Baseline: &Baseline{Overrides: []Override{Set("writers", 1)}}})
	if !p.Sides || p.FreshTargets() || len(p.Cells) != 2 || p.Cells[0].Label != "baseline" || p.Cells[1].Label != "candidate" {
		t.Fatalf("plan %+v", p)
	}
	if p.Cells[0].Spec.Writers != 1 || p.Cells[1].Spec.Writers != 16 || p.Cells[0].Spec.Duration != spec.D(time.Second) {
		t.Errorf("baseline %+v, candidate %+v: want 1 and 16 writers, both 1s", p.Cells[0].Spec, p.Cells[1].Spec)
	}
	for i, smp := range p.Samples() {
		if smp.Index != i/2+1 {
			t.Errorf("samples %v: want pairs, sample 1 of both sides, then sample 2, ...", p.Samples())
			break
		}
	}
	bins := resolve(t, Request{Overrides: []Override{Set("control-plane-bin", "/pr/bin")},
		Baseline: &Baseline{Overrides: []Override{Set("control-plane-bin", "/main/bin")}}})
	if !bins.FreshTargets() || !bins.PrivateControlPlane || bins.Cells[0].Spec.Target.ControlPlaneBin != "/main/bin" {
		t.Errorf("sides of two builds: %+v", bins)
	}
	prof := filepath.Join(t.TempDir(), "main.yaml")
	if err := os.WriteFile(prof, []byte("apiVersion: kb-bench.io/v1alpha1\nkind: Profile\nspec:\n  writers: 3\n  strategy: ssa\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile := resolve(t, Request{Overrides: []Override{Set("duration", spec.D(time.Second))}, Baseline: &Baseline{File: prof}})
	if b := fromFile.Cells[0].Spec; b.Writers != 3 || b.Strategy != spec.StrategySSA || b.Duration != spec.D(time.Second) {
		t.Errorf("baseline from %s with the flags on top: %+v", prof, b)
	}
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"a matrix", Request{Overrides: []Override{Set("writers", 1, 2)}, Baseline: &Baseline{}}, "give each setting one value"},
		{"another target", Request{Baseline: &Baseline{Overrides: []Override{Set("target", "kind")}}}, "an A/B run alternates its samples on one target"},
		{"a bad baseline", Request{Baseline: &Baseline{Overrides: []Override{Set("writers", -1)}}}, "the baseline: invalid settings"},
	} {
		if _, err := Resolve(t.Context(), tc.r); !spec.IsInput(err) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s: %v, want bad input saying %q", tc.name, err, tc.want)
		}
	}
	for text, want := range map[string]string{"writers": "give SETTING=VALUE", "nope=1": "not a setting", "writers=many": "writers=many"} {
		if _, err := ParseOverride(text); !spec.IsInput(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseOverride(%q): %v, want bad input saying %q", text, err, want)
		}
	}
	if o, err := ParseOverride("--qps=0"); err != nil || o.String() != "qps=0" {
		t.Errorf("ParseOverride(--qps=0): %v, %v", o, err)
	}
}

func TestResolveRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"a bad value in a list", Request{Overrides: []Override{Set("strategy", "update", "put")}}, `"put"`},
		{"a list where one value goes", Request{Overrides: []Override{Set("duration", spec.D(time.Second), spec.D(2*time.Second))}}, "--duration takes one value"},
		{"zero for a default", Request{Overrides: []Override{Set("writers", 0)}}, "--writers 0 would mean its default (8) here"},
		{"another scenario's setting", Request{Overrides: []Override{Set("lease-duration", spec.D(time.Second))}}, "--lease-duration is a setting of scenario leader-election, not counter"},
		{"two profiles", Request{File: "x.yaml", Profile: "hot-key"}, "-f and --profile both given"},
		{"too many samples", Request{Count: 1001}, "--count 1001: use 1 to 1000 samples"},
		{"a setting of another type", Request{Overrides: []Override{Set("writers", 2.5)}}, "--writers takes values of type int, not 2.5"},
		{"a setting that does not parse", Request{Overrides: []Override{Set("writers", "many")}}, `--writers many: "many" is not a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(t.Context(), tc.r)
			if err == nil || !spec.IsInput(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want bad input saying %q", err, tc.want)
			}
		})
	}
}

// A sweep's matrix splits into one series per strategy, each going up the
// axis; the axis is writers even when strategies were given first.
func TestSplitSweep(t *testing.T) {
	p := resolve(t, Request{Overrides: []Override{Set("strategy", "update", "ssa"), Set("writers", 1, 4, 16)}})
	all, xs, err := splitSweep(p.Cells, "writers")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(xs, ",") != "1,4,16" || len(all) != 2 || all[0].label != "strategy=update" || all[1].label != "strategy=ssa" {
		t.Fatalf("series %+v, values %v", all, xs)
	}
	for _, ser := range all {
		for i, c := range ser.cells {
			sp := p.Cells[c].Spec
			if want := []int{1, 4, 16}[i]; sp.Writers != want || "strategy="+string(sp.Strategy) != ser.label {
				t.Errorf("%s point %d: writers %d strategy %s", ser.label, i, sp.Writers, sp.Strategy)
			}
		}
	}
	down := resolve(t, Request{Overrides: []Override{Set("writers", 4, 1)}})
	if _, _, err := splitSweep(down.Cells, "writers"); err == nil || !strings.Contains(err.Error(), "a sweep goes up") {
		t.Errorf("a sweep down: %v", err)
	}
}

// A Go caller gives a setting as a profile writes it, or as its type.
func TestOverrideValues(t *testing.T) {
	p := resolve(t, Request{Overrides: []Override{Set("duration", "3s"), Set("warmup", spec.D(time.Second)), Set("strategy", "retry"), Set("backoff", "default-backoff"), Set("writers", int64(4))}})
	s := p.Cells[0].Spec
	if s.Duration.Duration != 3*time.Second || s.Warmup.Duration != time.Second || s.Strategy != spec.StrategyRetry || s.Backoff == nil || s.Backoff.String() != "default-backoff" || s.Writers != 4 {
		t.Errorf("spec %+v", s)
	}
	if _, err := Resolve(t.Context(), Request{Overrides: []Override{Set("duration", "soon")}}); err == nil || !spec.IsInput(err) {
		t.Errorf("a duration of %q: %v", "soon", err)
	}
}

// A cell's spec is resolved once, by Resolve; a cell changed by hand
// afterwards runs what it says now.
func TestCellResolvedOnce(t *testing.T) {
	p := resolve(t, Request{})
	r, err := p.Cells[0].resolve("")
	if err != nil || r != p.Cells[0].resolved {
		t.Fatalf("the plan's cell resolved again: %v", err)
	}
	p.Cells[0].Spec.Writers = 3
	r, err = p.Cells[0].resolve("")
	if err != nil || r.Spec.Writers != 3 {
		t.Errorf("a cell changed by hand runs %+v (%v), want 3 writers", r, err)
	}
}

// A library caller who asks for an output the engine does not print is
// told the two it does, in the library's words, not the CLI's.
func TestOptionsRefuseAnUnknownFormat(t *testing.T) {
	o := Options{Format: "table"}
	err := o.check(&Plan{})
	if err == nil || !strings.Contains(err.Error(), `Options.Format "table" is not known: use text or json`) {
		t.Errorf("err = %v, want the format refused with text and json named", err)
	}
}
