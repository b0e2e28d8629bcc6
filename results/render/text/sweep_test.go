package text

import (
	"bytes"
	"testing"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

func TestSweepTablesGolden(t *testing.T) {
	sw := resultstest.Sweep()
	analysis.Analyze(sw)
	for _, f := range []string{"text", "markdown"} {
		var out bytes.Buffer
		if err := WriteSweepTables(&out, sw, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "sweep."+f+".golden", out.Bytes())
	}
}
