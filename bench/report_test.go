package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results/store"
)

// A report's title says what it shows, never a directory's name ("kb-bench:
// s" for a set saved in s/).
func TestReportTitle(t *testing.T) {
	r, err := store.Read(t.Context(), "testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	s := filepath.Join(t.TempDir(), "s")
	if err := store.Write(s, r); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	if err := Report(t.Context(), []string{s}, out, "test", nil, nil); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<title>kb-bench: " + r.Workload + "</title>"; !strings.Contains(string(page), want) {
		t.Errorf("the report's title is not %q:\n%.400s", want, page)
	}
}
