package bench

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/store"
)

// saveSet saves copies of r as a set of n samples in dir, labelled as
// configuration cell of a matrix run.
func saveSet(t *testing.T, r *results.Result, dir, label string, cell, n int) {
	t.Helper()
	set := &results.ResultSet{RunID: "m", Label: label, Cell: cell}
	for i := 1; i <= n; i++ {
		c := *r
		c.RunID = strings.ReplaceAll(label, "=", "-") + "-" + string(rune('0'+i))
		if err := store.Write(store.SampleDir(dir, i), &c); err != nil {
			t.Fatal(err)
		}
		set.Samples = append(set.Samples, filepath.Base(store.SampleDir(dir, i)))
	}
	if err := store.WriteSet(dir, set); err != nil {
		t.Fatal(err)
	}
}

// A matrix run is shown as it ran: its configurations in the order they
// ran (not their directories' names'), named as the run named them, their
// samples interleaved, then their comparison.
func TestShowMatrix(t *testing.T) {
	r, err := store.Read(t.Context(), "testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	saveSet(t, r, filepath.Join(dir, store.DirName("strategy=update")), "strategy=update", 1, 2)
	saveSet(t, r, filepath.Join(dir, store.DirName("strategy=ssa")), "strategy=ssa", 2, 2)
	var out bytes.Buffer
	if err := Show(t.Context(), &out, dir, "text"); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, line := range strings.Split(out.String(), "\n") {
		if label, _, ok := strings.Cut(line, ": "); ok && strings.Contains(label, " sample ") {
			labels = append(labels, label)
		}
	}
	if got := strings.Join(labels, "|"); got != "strategy=update sample 1|strategy=ssa sample 1|strategy=ssa sample 2|strategy=update sample 2" {
		t.Errorf("samples shown in the order %q:\n%s", got, out.String())
	}
	if !strings.Contains(out.String(), "strategy=update (n=2)  strategy=ssa (n=2)  vs strategy=update") {
		t.Errorf("the comparison does not put the configurations in their order:\n%s", out.String())
	}
	var docs bytes.Buffer
	if err := Show(t.Context(), &docs, dir, "json"); err != nil || strings.Count(docs.String(), `"kind": "Result"`) != 4 {
		t.Errorf("--format json: %v\n%.300s", err, docs.String())
	}
	if err := Show(t.Context(), &out, t.TempDir(), "text"); err == nil || !strings.Contains(err.Error(), "holds no result") {
		t.Errorf("an empty directory: %v", err)
	}
}
