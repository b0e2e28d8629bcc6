package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/render/text"
)

// view is what a run or a sweep shows on its standard output: each sample
// as it ends, then the end of the run. Run and Sweep show through it as
// they go and Show from the saved results, so that the two are the same.
type view struct {
	w      io.Writer // nil: nothing is shown
	format string    // "text" or "json"
	// sets: each sample is one line, and the end compares the cells
	// (several samples, several cells, a sweep); otherwise the one
	// sample's whole summary.
	sets bool
}

// newView is the view of a run with options o.
func newView(o Options, sets bool) *view {
	v := &view{w: o.Stdout, format: o.Format, sets: sets}
	if o.Quiet && o.Format != "json" {
		v.w = nil
	}
	return v
}

// sample shows sample i of the cell labelled label: its JSON document, its
// line, or its summary with the scenario's own figures.
func (v *view) sample(label string, i int, r *results.Result) error {
	switch {
	case v.w == nil:
		return nil
	case v.format == "json":
		doc, err := results.Encode(r)
		if err != nil {
			return err
		}
		_, err = v.w.Write(doc)
		return err
	case v.sets:
		return v.line(strings.TrimSpace(fmt.Sprintf("%s sample %d", label, i)), r)
	}
	return text.WriteTable(v.w, r)
}

// line shows one sample on one line, after its label.
func (v *view) line(label string, r *results.Result) error {
	if v.w == nil {
		return nil
	}
	_, err := fmt.Fprintf(v.w, "%s: %s\n", label, text.OneLine(r))
	return err
}

// end shows, after a run of several samples, their medians and ranges,
// and the cells side by side.
func (v *view) end(sides []results.Side) error {
	if v.w == nil || !v.sets || v.format == "json" {
		return nil
	}
	fmt.Fprintln(v.w)
	c, err := analysis.Compare(sides)
	if err != nil {
		return err
	}
	return text.WriteComparison(v.w, c, "text")
}

// sweep shows a sweep's tables after its points.
func (v *view) sweep(sw *results.Sweep) error {
	if v.w == nil {
		return nil
	}
	fmt.Fprintln(v.w)
	return text.WriteSweepTables(v.w, sw, "text")
}

// showVerdicts shows a gated run's verdicts on w (nil: nowhere) after the
// rest, as 'kb-bench gate' does: in text after a blank line, or as JSON.
func showVerdicts(w io.Writer, format string, vs []analysis.Verdict) error {
	if w == nil {
		return nil
	}
	if format == "text" {
		fmt.Fprintln(w)
	}
	return text.WriteVerdicts(w, vs, format)
}
