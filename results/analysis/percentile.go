package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// FewBeyond is how many operations must lie beyond a percentile for it to
// describe the latency distribution rather than a few slow operations.
// Of n operations, percentile q has n-ceil(q*n) (that is floor((1-q)*n))
// beyond it. How many of a run's operations fall beyond the true
// percentile is about Poisson with mean (1-q)*n: below 3 even the slowest
// operation is not a 95% upper bound for it (the rule of three), and at 5
// the 95% bound is still the second slowest. With fewer than FewBeyond
// beyond it, a percentile is one of the run's five slowest operations
// (p99.9 of 590 ops is the slowest): kb-bench says so wherever it shows,
// compares or gates one.
const FewBeyond = 5

// latencyPercentiles are a Latency's percentiles, by name, in order;
// quantiles their shares.
var (
	latencyPercentiles = []string{"p50", "p90", "p99", "p99.9"}
	quantiles          = map[string]float64{"p50": 0.5, "p90": 0.9, "p99": 0.99, "p99.9": 0.999}
)

// tailOp says which operation percentile q of n is when fewer than
// FewBeyond lie beyond it: "the 3rd slowest op"; "" otherwise.
func tailOp(q float64, n int64) string {
	if n <= 0 {
		return ""
	}
	beyond := n - metrics.Rank(q, n)
	switch {
	case beyond >= FewBeyond:
		return ""
	case beyond == 0:
		return "the slowest op"
	}
	return "the " + ordinal(beyond+1) + " slowest op"
}

// ordinal is "2nd", "3rd", "4th", "11th", "21st".
func ordinal(n int64) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		suffix = cmp.Or(map[int64]string{1: "st", 2: "nd", 3: "rd"}[n%10], suffix)
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// WeakPercentile says which operation percentile q (called name) of n
// operations is when fewer than FewBeyond lie beyond it: "p99.9 of 590 ops
// = the slowest op"; "" when it rests on enough operations.
func WeakPercentile(name string, q float64, n int64) string {
	if op := tailOp(q, n); op != "" {
		return fmt.Sprintf("%s of %d ops = %s", name, n, op)
	}
	return ""
}

// WeakPercentiles says, of n operations, which of the named latency
// percentiles are among the slowest few: "p99 of 300 ops = the 4th slowest
// op, p99.9 = the slowest op"; "" when none is.
func WeakPercentiles(n int64, names ...string) string {
	var parts []string
	for _, name := range names {
		if op := tailOp(quantiles[name], n); op != "" {
			if len(parts) == 0 {
				name = fmt.Sprintf("%s of %d ops", name, n)
			}
			parts = append(parts, name+" = "+op)
		}
	}
	return strings.Join(parts, ", ")
}

// WeaklySupported is the small-sample note of the latency summary of n
// operations; "" when none is needed.
func WeaklySupported(n int64) string {
	s := WeakPercentiles(n, latencyPercentiles...)
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%s (fewer than %d ops beyond: weakly supported)", s, FewBeyond)
}

// weakIn says which of rs have the named latency percentile among their
// slowest few operations: "2 of 3 samples: p99.9 of 590 ops = the slowest
// op"; "" when none has.
func weakIn(name string, rs []*results.Result) string {
	var which []string
	weak := 0
	for _, r := range rs {
		if s := weakWords(name, r); s != "" {
			weak++
			which = results.AppendNew(which, s)
		}
	}
	switch {
	case weak == 0:
		return ""
	case len(rs) == 1:
		return which[0]
	}
	return fmt.Sprintf("%d of %d samples: %s", weak, len(rs), strings.Join(which, ", "))
}

// weakWords is WeakPercentile for the named latency percentile of r. A
// rounded-rank percentile (an older result) sits at the nearest rank or
// one below it, so it is only known to be one of the slowest two there.
func weakWords(name string, r *results.Result) string {
	q, n := quantiles[name], r.Summary.Ops
	w := WeakPercentile(name, q, n)
	if pos := n - metrics.Rank(q, n) + 2; w != "" && r.Summary.Percentiles == results.PercentilesRoundedRank && pos <= n {
		return fmt.Sprintf("%s of %d ops = one of the %d slowest ops", name, n, pos)
	}
	return w
}

// definitions says how rs' percentiles were computed: "nearest rank", or
// "2 of 3 samples rounded rank (kb-bench.io/v1alpha2 results)".
func definitions(rs []*results.Result) string {
	var defs []string
	count := map[string]int{}
	for _, r := range rs {
		defs = results.AppendNew(defs, r.Summary.Percentiles)
		count[r.Summary.Percentiles]++
	}
	parts := make([]string, len(defs))
	for i, d := range defs {
		parts[i] = cmp.Or(definitionWords[d], strconv.Quote(d))
		if len(defs) > 1 {
			parts[i] = fmt.Sprintf("%d of %d samples %s", count[d], len(rs), parts[i])
		}
	}
	return strings.Join(parts, ", ")
}

// definitionWords name the percentile definitions a Summary records.
var definitionWords = map[string]string{
	results.PercentilesNearestRank: "nearest rank",
	results.PercentilesRoundedRank: "HdrHistogram's rounded rank (" + results.OlderAPIVersion + " results: it can understate the tail by an op)",
	"":                             "an unrecorded definition",
}

func sameDefinition(rs []*results.Result) bool {
	return !slices.ContainsFunc(rs, func(r *results.Result) bool { return r.Summary.Percentiles != rs[0].Summary.Percentiles })
}

// bySide joins f of each side's results that says something: "A: ...; B: ...".
func bySide(sides []results.Side, f func([]*results.Result) string) string {
	var parts []string
	for _, s := range sides {
		if w := f(s.Results); w != "" {
			parts = append(parts, s.Label+": "+w)
		}
	}
	return strings.Join(parts, "; ")
}

func allResults(sides []results.Side) []*results.Result {
	var all []*results.Result
	for _, s := range sides {
		all = append(all, s.Results...)
	}
	return all
}

// percentileNotes are a comparison's notes on its latency percentiles.
func percentileNotes(sides []results.Side) []string {
	var notes []string
	if !sameDefinition(allResults(sides)) {
		notes = append(notes, "the percentiles were computed differently, so their changes mix two definitions: "+bySide(sides, definitions))
	}
	for _, m := range figures {
		if name := m.percentile; name != "" && m.name != "" {
			if w := bySide(sides, func(rs []*results.Result) string { return weakIn(name, rs) }); w != "" {
				notes = append(notes, fmt.Sprintf("%s is weakly supported (fewer than %d ops beyond it): %s", m.name, FewBeyond, w))
			}
		}
	}
	return notes
}

// percentileNote is what a gate verdict on the percentile name ("" for
// other figures) adds to its why: that it rests on the slowest few
// operations, and how the percentiles were computed when that differs or
// is the older definition.
func percentileNote(name string, relative bool, baseline, candidate []*results.Result) string {
	if name == "" || len(candidate) == 0 {
		return ""
	}
	sides := []results.Side{{Label: "candidate", Results: candidate}}
	if relative && len(baseline) > 0 {
		sides = append(sides, results.Side{Label: "baseline", Results: baseline})
	}
	var note string
	if w := bySide(sides, func(rs []*results.Result) string { return weakIn(name, rs) }); w != "" {
		note += fmt.Sprintf("; weakly supported, fewer than %d ops beyond it: %s", FewBeyond, w)
	}
	if all := allResults(sides); !sameDefinition(all) || all[0].Summary.Percentiles == results.PercentilesRoundedRank {
		note += "; percentiles computed by " + bySide(sides, definitions)
	}
	return note
}
