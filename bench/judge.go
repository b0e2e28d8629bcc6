package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/spec"
)

// Compare reads the sides at paths (each a result, a set of samples, or a
// directory of result directories: see store.ReadSide) and compares every
// side with the first. What a side leaves out (a run seen twice) is
// noted on notes. Sides that cannot be read or compared are bad input.
func Compare(ctx context.Context, paths []string, notes io.Writer) (*analysis.Comparison, error) {
	var sides []results.Side
	for _, p := range paths {
		sidePaths := []string{p}
		if base, cand, ok := store.ABSides(p); ok {
			sidePaths = []string{base, cand} // an A/B run: its two sides
		}
		for _, sp := range sidePaths {
			s, err := ReadSide(ctx, sp, notes)
			if err != nil {
				return nil, err
			}
			sides = append(sides, s)
		}
	}
	if len(sides) < 2 {
		return nil, spec.Input(errors.New("compare needs two results or more to compare, or an A/B run's directory (its baseline and candidate)"))
	}
	c, err := analysis.Compare(sides)
	return c, spec.Input(err)
}

// GateRequest is what Gate judges: a candidate side and a baseline side
// (none: ""), or an A/B run's directory as Candidate alone (its two
// sides), and a Gate file of thresholds ("": analysis.DefaultGate).
type GateRequest struct {
	Candidate, Baseline, Thresholds string
	// Force judges a baseline that ran another workload than the
	// candidate's; without it that is bad input.
	Force bool
	// Notes receives what a side leaves out (nil: nothing).
	Notes io.Writer
}

// Gate judges the candidate against the thresholds and the baseline. It
// returns the verdicts and, when a threshold does not hold,
// ErrGateFailed.
func Gate(ctx context.Context, r GateRequest) ([]analysis.Verdict, error) {
	// The sides of one A/B run ran interleaved, whatever their start
	// times say (one sample a side, an interrupted run).
	oneRun := sidesOfOneRun(r.Baseline, r.Candidate)
	if r.Baseline == "" {
		if base, cand, ok := store.ABSides(r.Candidate); ok {
			r.Baseline, r.Candidate, r.Force, oneRun = base, cand, true, true
		}
	}
	g := analysis.DefaultGate(r.Baseline != "")
	if r.Thresholds != "" {
		var err error
		if g, err = ReadGate(ctx, r.Thresholds); err != nil {
			return nil, err
		}
	}
	candidate, err := ReadSide(ctx, r.Candidate, r.Notes)
	if err != nil {
		return nil, err
	}
	var base results.Side
	if r.Baseline != "" {
		if base, err = ReadSide(ctx, r.Baseline, r.Notes); err != nil {
			return nil, err
		}
		if r.Notes != nil && !oneRun && !interleaved(base.Results, candidate.Results) {
			fmt.Fprintln(r.Notes, "kb-bench: note: "+storedBaseline)
		}
	}
	return judge(g, base.Results, candidate.Results, r.Force)
}

// storedBaseline is what a gate against results of another run cannot
// tell.
const storedBaseline = "the baseline's samples ran at another time than the candidate's, not interleaved with them: the gate cannot tell the machine's drift from a change " +
	"(on a busy 2-core machine sets of one spec drift by 10% and more); for a verdict that can, run both in one job: kb-bench run ... --baseline-with SETTING=VALUE, or --baseline-spec FILE"

// sidesOfOneRun reports whether base and cand are the baseline's and the
// candidate's directories of one A/B run (never when base is "").
func sidesOfOneRun(base, cand string) bool {
	b, c, ok := store.ABSides(filepath.Dir(filepath.Clean(base)))
	return ok && filepath.Clean(base) == b && filepath.Clean(cand) == c
}

// interleaved reports whether two sides' samples ran interleaved: neither
// side's all began before the other's.
func interleaved(a, b []*results.Result) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	began := func(x, y *results.Result) int { return x.Started.Compare(y.Started) }
	startsBeforeEnd := func(x, y []*results.Result) bool {
		return slices.MinFunc(x, began).Started.Before(slices.MaxFunc(y, began).Started)
	}
	return startsBeforeEnd(a, b) && startsBeforeEnd(b, a)
}

// ReadGate reads a Gate file of thresholds.
func ReadGate(ctx context.Context, path string) (*analysis.Gate, error) {
	data, err := readfile.Read(ctx, path, readfile.Small, "the thresholds")
	if err != nil {
		return nil, spec.Input(fmt.Errorf("%w (check the path given to --gate or --thresholds)", err))
	}
	g, err := analysis.ParseGate(path, data)
	return g, spec.Input(err)
}

// judge judges g on the candidate against base: the verdicts, and
// ErrGateFailed when one fails. A baseline that ran another workload is
// bad input unless force.
func judge(g *analysis.Gate, base, candidate []*results.Result, force bool) ([]analysis.Verdict, error) {
	if len(base) > 0 {
		if err := likeUnits(base[0], candidate[0]); err != nil {
			return nil, err
		}
	}
	if len(base) > 0 && !force {
		if err := likeWithLike(base, candidate[0].Workload); err != nil {
			return nil, err
		}
	}
	verdicts, err := analysis.Judge(g, base, candidate)
	if err != nil {
		return nil, spec.Input(err)
	}
	if !analysis.Passed(verdicts) {
		return verdicts, ErrGateFailed
	}
	return verdicts, nil
}

// gateEnd judges the run out with o's gate against o.Baseline, or an A/B
// run's (sides) candidate against its baseline (of another workload, as
// asked), saves the verdicts in out.Dir (see Show) and shows them.
func gateEnd(o Options, sides bool, out *Outcome) error {
	base := o.Baseline.Results
	if sides {
		base = out.Cells[0].Results
	}
	verdicts, err := judge(o.Gate, base, out.Cells[len(out.Cells)-1].Results, sides)
	if verdicts == nil {
		return err
	}
	if serr := store.WriteVerdicts(out.Dir, verdicts); serr != nil {
		err = errors.Join(err, fmt.Errorf("%w: the gate's verdicts, shown above, are not in %s: %w", ErrNotSaved, out.Dir, serr))
	}
	if werr := showVerdicts(o.Stdout, o.Format, verdicts); werr != nil {
		return fmt.Errorf("writing the verdicts: %w", werr)
	}
	return err
}

// checkGate refuses, before a run, a gate that cannot judge it: one of a
// matrix (it judges one configuration), relative thresholds without a
// baseline, a baseline without a gate or of another workload; and notes
// on log when the samples will be too few to test a difference.
func checkGate(g *analysis.Gate, p *Plan, baseline []*results.Result, log io.Writer) error {
	switch {
	case g == nil && baseline != nil:
		return spec.Input(errors.New("--baseline is for a gate: add --gate FILE (or run a profile with thresholds), or compare results with 'kb-bench compare'"))
	case g == nil:
		return nil
	case p.Sides && baseline != nil:
		return spec.Input(errors.New("--baseline names stored results to gate against, --baseline-spec and --baseline-with a baseline to run beside the candidate: choose one"))
	case p.Sides:
		if ok, need := analysis.Testable(p.Count, p.Count); !ok {
			fmt.Fprintf(log, "note: %s a side cannot show a significant difference: the gate's relative thresholds will be judged on the medians alone (--count %d or more for a tested verdict)\n", words.Plural(p.Count, "sample"), need)
		}
		return nil
	case p.Matrix():
		return spec.Input(errors.New("a gate judges one configuration: run the matrix without --gate (or a profile with thresholds) and gate each directory with 'kb-bench gate'"))
	case baseline == nil:
		// Found out now, not after the whole run.
		if err := g.NeedsBaseline(); err != nil {
			return spec.Input(err)
		}
		return nil
	}
	// The workload the run will have is known now: a baseline of another
	// is refused before the run, not after it.
	if err := likeWithLike(baseline, p.Cells[0].Workload); err != nil {
		return err
	}
	fmt.Fprintln(log, "note: "+storedBaseline)
	if ok, need := analysis.Testable(len(baseline), p.Count); !ok {
		fmt.Fprintf(log, "note: %s against the baseline's %d cannot show a significant difference: the gate's relative thresholds will be judged on the medians alone (--count %d or more on both sides for a tested verdict)\n",
			words.Plural(p.Count, "sample"), len(baseline), need)
	}
	return nil
}

// likeWithLike refuses a baseline that ran another workload than the
// candidate's (a side's samples are of one workload: see
// results.Samples).
func likeWithLike(base []*results.Result, candidate string) error {
	if b := base[0].Workload; b != candidate {
		return spec.Input(fmt.Errorf("the baseline ran %q but the candidate %q: a gate compares like with like; pass --force to judge them anyway", b, candidate))
	}
	return nil
}

// likeUnits refuses, even with --force, a baseline of another scenario
// than the candidate's: their operations are different things (a quota
// create, a counter's read-modify-write, a lease renewal), so throughput,
// latency and conflicts measured in them do not compare under one name.
func likeUnits(base, cand *results.Result) error {
	if b, c := base.Spec.Scenario, cand.Spec.Scenario; b != c && b != "" && c != "" {
		return spec.Input(fmt.Errorf("the baseline ran scenario %s, the candidate %s: their operations are different things, so their throughput, latency and conflicts do not compare under one name; gate each scenario against a baseline of its own, or look at both with 'kb-bench compare', which names each side's workload", b, c))
	}
	return nil
}

// ReadSide reads the samples at path as one side (see store.ReadSide),
// noting on notes (nil: nowhere) what it leaves out; errors are bad input.
func ReadSide(ctx context.Context, path string, notes io.Writer) (results.Side, error) {
	side, ns, err := store.ReadSide(ctx, path)
	if notes != nil {
		for _, n := range ns {
			fmt.Fprintf(notes, "kb-bench: note: %s\n", n)
		}
	}
	return side, spec.Input(err)
}
