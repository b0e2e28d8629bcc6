package text

import (
	"fmt"
	"io"
	"strconv"

	"github.com/kb-bench/kb-bench/results"
)

// WriteSweepTables writes a table per series (text or markdown), with the
// fitted model and the summary in words under each.
func WriteSweepTables(w io.Writer, s *results.Sweep, format string) error {
	markdown := format == "markdown"
	if s.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the sweep was stopped; the point under way is left out")
		fmt.Fprintln(w)
	}
	for i, ser := range s.Series {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := ser.Label
		if title == "" {
			title = s.Workload
		}
		if markdown {
			fmt.Fprintf(w, "### %s\n\n", oneLine.Replace(title))
		} else {
			fmt.Fprintf(w, "%s\n", oneLine.Replace(title))
		}
		rows := [][]string{{s.Axis, "ops/s", "successful writes/s", "conflict rate", "attempts p99", "p99", "gave up", "lost updates", "server"}}
		cost := hasCost(ser)
		if cost {
			rows[0] = append(rows[0], "apiserver cores", "apiserver CPU/write", "etcd CPU/write")
		}
		for _, p := range ser.Points {
			server := "match"
			if !p.ServerMatch {
				server = "MISMATCH"
			}
			gaveUp := "-"
			if p.GaveUp > 0 {
				gaveUp = results.Percent(p.GaveUpRatio)
			}
			rows = append(rows, []string{s.AxisValue(p.Value), fmt.Sprintf("%.1f", p.Throughput), fmt.Sprintf("%.1f", p.WriteThroughput),
				results.Percent(p.ConflictRate), strconv.FormatInt(p.AttemptsP99, 10), results.FormatDuration(p.P99), gaveUp, strconv.FormatInt(p.LostUpdates, 10), server})
			if cost {
				rows[len(rows)-1] = append(rows[len(rows)-1], costCells(p.Cost)...)
			}
		}
		if err := writeRows(w, rows, markdown); err != nil {
			return err
		}
		if markdown {
			fmt.Fprintln(w)
		}
		switch {
		case ser.Model != nil:
			fmt.Fprintf(w, "USL fit: %s\n", ser.Model)
		case s.Axis == "writers" && ser.ModelNote != "":
			fmt.Fprintf(w, "USL fit: none (%s)\n", ser.ModelNote)
		}
		switch {
		case ser.CostModel != nil:
			fmt.Fprintf(w, "apiserver CPU per write fit, c·(1 + σ(N−1) + κN(N−1)): %s\n", ser.CostModel)
		case ser.CostModelNote != "":
			fmt.Fprintf(w, "apiserver CPU per write fit: none (%s)\n", ser.CostModelNote)
		}
		if markdown {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, ser.Summary+".")
	}
	return nil
}

// hasCost says whether any point of ser has a cost (the columns are shown).
func hasCost(ser results.SweepSeries) bool {
	for _, p := range ser.Points {
		if p.Cost != nil {
			return true
		}
	}
	return false
}

// costCells are a point's cost columns: apiserver cores, apiserver and
// etcd CPU per successful write ("-" where not measured).
func costCells(c *results.PointCost) []string {
	if c == nil {
		return []string{"-", "-", "-"}
	}
	etcd := "-"
	if c.HasEtcd {
		etcd = results.FormatDuration(c.EtcdPerWrite)
	}
	return []string{fmt.Sprintf("%.2f", c.ApiserverCores), results.FormatDuration(c.ApiserverPerWrite), etcd}
}
