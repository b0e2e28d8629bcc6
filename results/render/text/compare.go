package text

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
)

// CompareFormats are the formats a comparison is written in.
var CompareFormats = []string{"text", "markdown", "csv", "json"}

// WriteComparison writes c in format (one of CompareFormats).
func WriteComparison(w io.Writer, c *analysis.Comparison, format string) error {
	switch format {
	case "json":
		return writeJSON(w, c)
	case "csv":
		cw := csv.NewWriter(w)
		header := []string{"metric"}
		for _, s := range c.Sides {
			for _, col := range []string{"median", "min", "max", "delta", "p"} {
				header = append(header, csvCell(s.Label+" "+col))
			}
		}
		_ = cw.Write(header)
		for _, row := range c.Rows {
			rec := []string{csvCell(row.Metric)}
			for _, cell := range row.Cells {
				delta, p := "", ""
				if cell.Delta != nil {
					delta = strconv.FormatFloat(*cell.Delta, 'g', 6, 64)
				}
				if cell.P != nil {
					p = strconv.FormatFloat(*cell.P, 'g', 6, 64)
				}
				if cell.Unknown != "" {
					rec = append(rec, "unknown", "", "", "", "")
					continue
				}
				rec = append(rec, fmt.Sprint(cell.Median), fmt.Sprint(cell.Min), fmt.Sprint(cell.Max), delta, p)
			}
			_ = cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	case "text", "markdown":
		md := format == "markdown"
		if err := writeRows(w, c.Table("metric"), md); err != nil {
			return err
		}
		list := func(heading string, items []string) {
			if len(items) > 0 {
				fmt.Fprintf(w, "\n%s:\n", heading)
				for _, it := range items {
					fmt.Fprintf(w, "  %s\n", it)
				}
			}
		}
		list("note: left out of the medians and tests, as they did not measure what they were asked to", c.LeftOut)
		list("WARNING: not every sample measured what it was asked to, and their side has no other; their figures are in the medians", c.Incomplete)
		list("note: the sides ran different workloads", c.Workloads)
		for _, n := range c.Notes {
			fmt.Fprintf(w, "\nnote: %s\n", n)
		}
		if len(c.Sides) > 1 {
			test := "Mann-Whitney U"
			if slices.ContainsFunc(c.Sides[1:], func(s analysis.ComparedSide) bool { return s.Test != nil }) {
				test = "the test each note names, else Mann-Whitney U"
				if !slices.ContainsFunc(c.Sides[1:], func(s analysis.ComparedSide) bool { return s.Test == nil }) {
					test = "the Wilcoxon signed-rank test over interleaved pairs"
				}
			}
			fmt.Fprintf(w, "\nmedians (range); changes against %s by %s, ~ where p > %g\n", c.Sides[0].Label, test, analysis.Alpha)
		}
		return nil
	}
	return fmt.Errorf("format %q is not known: use %s", format, strings.Join(CompareFormats, ", "))
}

// OneLine is a result's headline figures on one line.
func OneLine(r *results.Result) string {
	s := r.Summary
	server := "server not checked"
	if c := r.Server; c != nil && c.Available {
		server = "server " + map[bool]string{true: "match", false: "MISMATCH"}[c.Match]
	}
	p99 := words.Duration(s.Latency.P99)
	if few := analysis.WeakPercentiles(s.Ops, "p99"); few != "" {
		p99 += " (" + strings.TrimPrefix(few, "p99 ") + ")"
	}
	lost := "lost updates unknown (" + results.UnknownLostUpdates(r.Checks) + ")"
	if s.LostUpdates != nil {
		lost = fmt.Sprintf("%d lost updates", *s.LostUpdates)
	}
	line := fmt.Sprintf("%.1f ops/s, %.1f successful writes/s, %s conflicts, p99 %s, %s, %s",
		s.Throughput, s.WriteThroughput, words.Percent(s.ConflictRate), p99, lost, server)
	switch {
	case r.TargetLost != "":
		line += " (TARGET LOST: the figures cover what ran before)"
	case r.Interrupted:
		line += " (INTERRUPTED: the figures cover what ran)"
	}
	return line
}

// writeRows writes a table whose first row is its header, as a markdown
// table or aligned text.
func writeRows(w io.Writer, rows [][]string, markdown bool) error {
	cells := func(r []string) []string {
		out := make([]string, len(r))
		for i, c := range r {
			out[i] = tableCell(c, markdown)
		}
		return out
	}
	if markdown {
		for i, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells(r), " | "))
			if i == 0 {
				fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(r)))
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(cells(r), "\t"))
	}
	return tw.Flush()
}

// oneLine puts s on one line: line breaks and tabs would end a row or cell.
var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// markdownEscaper escapes what would end a markdown table cell early.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "|", `\|`)

// tableCell is s as one cell of a table, so that a label (a directory's
// name may hold anything) cannot break the table.
func tableCell(s string, markdown bool) string {
	s = oneLine.Replace(s)
	if markdown {
		s = markdownEscaper.Replace(s)
	}
	return s
}

// csvCell defuses a cell a spreadsheet would run as a formula by
// prefixing a quote; numbers, negative ones too, are left as they are.
func csvCell(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return s
	}
	return "'" + s
}
