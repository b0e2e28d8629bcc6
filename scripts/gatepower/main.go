// Command gatepower judges recorded A/B run directories (kb-bench run
// --baseline-with ... --out DIR) again with kb-bench's default gate, on
// their first K pairs of samples for each K asked, twice: as kb-bench
// judges them (the signed-rank test over interleaved pairs when they are
// enough, else Mann-Whitney U) and with Mann-Whitney U alone (the
// samples' start times hidden, so they do not pair). Both verdicts come
// from the same samples, so the two tests are compared on one machine's
// moments, not on two. scripts/gate-noise.sh runs it over each case's
// directories; it prints, per K, how many directories each way failed.
//
//	gatepower -pairs 5,6,8 -label "A/A" DIR...
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/store"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gatepower:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gatepower", flag.ContinueOnError)
	pairs := fs.String("pairs", "5", "comma-separated numbers of pairs to judge each directory's first samples at")
	label := fs.String("label", "runs", "what the directories are, for the summary")
	verbose := fs.Bool("v", false, "print every directory's verdicts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ks []int
	for f := range strings.SplitSeq(*pairs, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			return fmt.Errorf("-pairs %q: write numbers of pairs above 0, e.g. 5,6,8", *pairs)
		}
		ks = append(ks, k)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("name the A/B run directories to judge")
	}
	type tally struct{ runs, auto, mw, paired int }
	tallies := make([]tally, len(ks))
	g := analysis.DefaultGate(true)
	for _, dir := range fs.Args() {
		base, err := side(filepath.Join(dir, "baseline"))
		if err != nil {
			return err
		}
		cand, err := side(filepath.Join(dir, "candidate"))
		if err != nil {
			return err
		}
		for i, k := range ks {
			if k > len(base) || k > len(cand) {
				continue
			}
			b, c := base[:k], cand[:k]
			auto, err := analysis.Judge(g, b, c)
			if err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
			mw, err := analysis.Judge(g, unpaired(b), unpaired(c))
			if err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
			t := &tallies[i]
			t.runs++
			if !analysis.Passed(auto) {
				t.auto++
			}
			if !analysis.Passed(mw) {
				t.mw++
			}
			if analysis.InterleavedPairs(b, c).Len() == k {
				t.paired++
			}
			if *verbose {
				fmt.Printf("%s %d pairs: kb-bench %s, Mann-Whitney %s\n", dir, k, words(auto), words(mw))
			}
		}
	}
	for i, k := range ks {
		t := tallies[i]
		if t.runs == 0 {
			continue
		}
		fmt.Printf("%s, first %d pairs (%d of %d interleaved): kb-bench's gate failed %s; Mann-Whitney alone %s\n",
			*label, k, t.paired, t.runs, wilson(t.auto, t.runs), wilson(t.mw, t.runs))
	}
	return nil
}

// side reads one side's samples, in the order they began.
func side(path string) ([]*results.Result, error) {
	s, _, err := store.ReadSide(context.Background(), path)
	if err != nil {
		return nil, err
	}
	rs := slices.Clone(s.Results)
	slices.SortStableFunc(rs, func(a, b *results.Result) int { return cmp.Compare(a.Started.UnixNano(), b.Started.UnixNano()) })
	return rs, nil
}

// unpaired are copies of rs without their start times: they pair with
// nothing, and the gate judges them with Mann-Whitney U.
func unpaired(rs []*results.Result) []*results.Result {
	out := make([]*results.Result, len(rs))
	for i, r := range rs {
		c := *r
		c.Started = time.Time{}
		out[i] = &c
	}
	return out
}

// words are the failed thresholds of vs with their p-values, or PASS.
func words(vs []analysis.Verdict) string {
	var failed []string
	for _, v := range vs {
		if v.Passed {
			continue
		}
		p := ""
		if v.P != nil {
			p = fmt.Sprintf(" p=%.3f", *v.P)
		}
		failed = append(failed, v.Text+p)
	}
	if len(failed) == 0 {
		return "PASS"
	}
	return "FAIL (" + strings.Join(failed, "; ") + ")"
}

// wilson is k of n with its 95% Wilson score interval.
func wilson(k, n int) string {
	z, p, nf := 1.959964, float64(k)/float64(n), float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return fmt.Sprintf("%d of %d = %.1f%% (95%% CI %.1f%%-%.1f%%)", k, n, 100*p, 100*max(c-h, 0), 100*min(c+h, 1))
}
