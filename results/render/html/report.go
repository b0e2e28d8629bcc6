// Package html renders results, result sets and sweeps as one
// self-contained HTML page with inline SVG charts: it needs no script,
// font or link at view time, and is deterministic (golden files).
package html

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// Run is one configuration: one result, or the samples of a set (at
// least one; all share a spec).
type Run = results.Side

// Page is what one report shows.
type Page struct {
	Title   string
	Version string // kb-bench version that wrote the report
	Runs    []Run
	Sweeps  []*results.Sweep
}

//go:embed page.html.tmpl
var pageTemplate string

// Write renders p as HTML.
func Write(w io.Writer, p Page) error {
	v, err := newView(p)
	if err != nil {
		return err
	}
	t, err := template.New("page").Parse(pageTemplate)
	if err != nil {
		return fmt.Errorf("the report template: %w", err)
	}
	if err := t.Execute(w, v); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// view is what the template shows, every figure already formatted.
type view struct {
	Title, Version string
	// Contents says what the page holds: "2 runs, 1 sweep".
	Contents   string
	Nav        []link
	Comparison *comparisonView
	Runs       []runView
	Sweeps     []sweepView
}

type link struct{ ID, Text string }

// cell is a table cell: its text, and classes (num: right-aligned).
type cell struct {
	Text  string
	Class string
}

// num is a figure's cell, marked bad when it is.
func num(text string, bad bool) cell {
	return cell{Text: text, Class: map[bool]string{true: "num bad", false: "num"}[bad]}
}

// figure is a chart with its caption.
type figure struct {
	SVG     template.HTML
	Caption string
}

// newView checks p and turns it into what the template shows.
func newView(p Page) (*view, error) {
	if len(p.Runs) == 0 && len(p.Sweeps) == 0 {
		return nil, errors.New("nothing to report: give at least one result, set or sweep")
	}
	runs := make([]Run, len(p.Runs))
	for i, r := range p.Runs {
		r.Label = cmp.Or(r.Label, "run "+strconv.Itoa(i+1))
		if len(r.Results) == 0 {
			return nil, fmt.Errorf("%s holds no results", r.Label)
		}
		if j := slices.Index(r.Results, nil); j >= 0 {
			return nil, fmt.Errorf("%s: result %d is missing", r.Label, j+1)
		}
		runs[i] = r
	}
	if i := slices.Index(p.Sweeps, nil); i >= 0 {
		return nil, fmt.Errorf("sweep %d is missing", i+1)
	}
	v := &view{Title: cmp.Or(p.Title, "kb-bench report"), Version: cmp.Or(p.Version, "(version unknown)")}
	var contents []string
	if len(runs) > 0 {
		contents = append(contents, words.Plural(len(runs), "run"))
	}
	if len(p.Sweeps) > 0 {
		contents = append(contents, words.Plural(len(p.Sweeps), "sweep"))
	}
	v.Contents = strings.Join(contents, ", ")
	if len(runs) > 1 {
		c, err := newComparison(runs)
		if err != nil {
			return nil, err
		}
		v.Comparison = c
		v.Nav = append(v.Nav, link{"comparison", "Comparison"})
	}
	for i, r := range runs {
		rv, err := newRunView(i, r)
		if err != nil {
			return nil, err
		}
		v.Runs = append(v.Runs, rv)
		v.Nav = append(v.Nav, link{rv.ID, rv.Label})
	}
	for i, s := range p.Sweeps {
		sv := newSweepView(i, s)
		v.Sweeps = append(v.Sweeps, sv)
		v.Nav = append(v.Nav, link{sv.ID, sv.Title})
	}
	if len(v.Nav) < 2 {
		v.Nav = nil
	}
	return v, nil
}

// comparisonView is the runs side by side, each against the first.
type comparisonView struct {
	Head       []cell
	Rows       [][]cell
	Workloads  []string
	LeftOut    []string
	Incomplete []string
	Notes      []string
	Baseline   string
	Alpha      float64
	Chart      figure
}

func newComparison(runs []Run) (*comparisonView, error) {
	c, err := analysis.Compare(runs)
	if err != nil {
		return nil, err
	}
	cv := &comparisonView{Workloads: c.Workloads, LeftOut: c.LeftOut, Incomplete: c.Incomplete, Notes: c.Notes, Baseline: c.Sides[0].Label, Alpha: analysis.Alpha}
	table := c.Table("figure")
	cv.Head = []cell{{Text: table[0][0]}}
	for _, text := range table[0][1:] {
		cv.Head = append(cv.Head, cell{Text: text, Class: "num"})
	}
	for r, row := range c.Rows {
		line := []cell{{Text: row.Metric}}
		for j, text := range table[r+1][1:] {
			// Columns alternate from the second side: its value, its change.
			if i := (j + 1) / 2; j > 0 && j%2 == 0 {
				line = append(line, change(row.Cells[i], text, row.Neutral))
			} else {
				line = append(line, cell{Text: text, Class: "num"})
			}
		}
		cv.Rows = append(cv.Rows, line)
	}
	ch := chart{Title: "Latency by percentile, per run", X: spectrumX(), Y: latencyY()}
	for i, r := range runs {
		m, err := merged(r.Results)
		if err != nil {
			return nil, err
		}
		s, err := spectrumSeries(m, results.HistOp, r.Label, r.Label, i)
		if err != nil {
			return nil, err
		}
		ch.Series = append(ch.Series, s)
	}
	cv.Chart = figure{SVG: ch.SVG(), Caption: "Operation latency from the intended start; a set's samples merged. Hover a marker for its value."}
	return cv, nil
}

// change is a compared figure's change against the first side, as
// kb-bench compare says it (text), marked better or worse when significant
// (unless neutral: no way is better).
func change(c analysis.ComparedCell, text string, neutral bool) cell {
	switch {
	case text == "":
		return cell{Class: "num"}
	case !c.Significant || neutral:
		return cell{Text: text, Class: "num same"}
	case c.Better:
		return cell{Text: text + " better", Class: "num better"}
	}
	return cell{Text: text + " worse", Class: "num worse"}
}

// merged adds the samples' measurements.
func merged(rs []*results.Result) (results.Measurements, error) {
	ms := make([]results.Measurements, len(rs))
	for i, r := range rs {
		ms[i] = r.Measurements
	}
	return analysis.MergeMeasurements(ms...)
}

// joinNonEmpty joins the non-empty parts.
func joinNonEmpty(sep string, parts ...string) string {
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), sep)
}
