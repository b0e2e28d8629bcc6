package text

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/results"
)

// WriteSweepTables writes a table per series (text or markdown), with the
// fitted model and the summary in words under each.
func WriteSweepTables(w io.Writer, s *results.Sweep, format string) error {
	markdown := format == "markdown"
	switch {
	case s.TargetLost != "":
		fmt.Fprintf(w, "TARGET LOST: %s; the sweep stopped there, and the point under way is listed apart, out of the fits\n\n", s.TargetLost)
	case s.Interrupted:
		fmt.Fprint(w, "INTERRUPTED: the sweep was stopped; the point under way is listed apart, out of the fits\n\n")
	}
	for i, ser := range s.Series {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := cmp.Or(ser.Label, s.Workload)
		if markdown {
			fmt.Fprintf(w, "### %s\n\n", oneLine.Replace(title))
		} else {
			fmt.Fprintf(w, "%s\n", oneLine.Replace(title))
		}
		rows := [][]string{append([]string{s.Axis}, results.SweepColumns...)}
		cost := slices.ContainsFunc(ser.Points, func(p results.SweepPoint) bool { return p.Cost != nil })
		if cost {
			rows[0] = append(rows[0], "apiserver cores", "apiserver CPU/write", "etcd CPU/write")
		}
		keys := ser.FigureColumns()
		rows[0] = append(rows[0], keys...)
		points := ser.Points
		if ser.UnderWay != nil {
			points = append(slices.Clip(points), *ser.UnderWay)
		}
		for i, p := range points {
			row := s.PointFigures(p)
			if i == len(ser.Points) {
				row[0] += " (under way, " + words.Plural(p.Samples, "sample") + ")"
			}
			if cost {
				row = append(row, costCells(p.Cost)...)
			}
			rows = append(rows, append(row, p.FigureCells(keys)...))
		}
		if err := writeRows(w, rows, markdown); err != nil {
			return err
		}
		if markdown {
			fmt.Fprintln(w)
		}
		usl, costFit := s.Fits(ser)
		for _, fit := range []string{usl, costFit} {
			if fit != "" {
				fmt.Fprintln(w, fit)
			}
		}
		if markdown {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, ser.Summary+".")
	}
	return nil
}

// costCells are a point's cost columns: apiserver cores, apiserver and
// etcd CPU per successful write ("-" where not measured).
func costCells(c *results.PointCost) []string {
	if c == nil {
		return []string{"-", "-", "-"}
	}
	etcd := "-"
	if c.HasEtcd {
		etcd = words.Duration(c.EtcdPerWrite)
	}
	return []string{fmt.Sprintf("%.2f", c.ApiserverCores), words.Duration(c.ApiserverPerWrite), etcd}
}
