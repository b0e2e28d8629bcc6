package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// saveSample writes r as dir/result.json (created).
func saveSample(t *testing.T, dir string, r *results.Result) {
	t.Helper()
	b, err := results.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// counterSample is a sample of the counter workload with writers writers.
func counterSample(id string, writers int) *results.Result {
	r := resultstest.Sample(100, 20)
	r.RunID = id
	r.Spec.Scenario, r.Spec.Writers = "counter", writers
	return r
}

// A side is read as what its directory is, and its samples must be of one
// workload, each run counted once.
func TestReadSide(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, rs ...*results.Result) string {
		dir := filepath.Join(root, name)
		for i, r := range rs {
			saveSample(t, filepath.Join(dir, "s"+string(rune('a'+i))), r)
		}
		return dir
	}
	quota := counterSample("q", 8)
	quota.Workload, quota.Spec.Scenario = "quota: 8 writers", "quota"
	mixed := mk("mixed", counterSample("1", 8), counterSample("2", 8), quota)
	otherSpec := mk("other-spec", counterSample("1", 8), counterSample("2", 4))
	copies := mk("copies", counterSample("1", 8), counterSample("1", 8), counterSample("1", 8), counterSample("1", 8))
	copies2 := mk("copies2", counterSample("1", 8), counterSample("2", 8), counterSample("1", 8))

	// A set is the samples its set.json lists, not whatever else is there.
	set := mk("set", counterSample("s1", 8), counterSample("s2", 8), counterSample("stray", 2))
	if err := WriteSet(set, &results.ResultSet{RunID: "s", Samples: []string{"sa", "sb"}}); err != nil {
		t.Fatal(err)
	}
	escape := mk("escape", counterSample("e", 8))
	if err := WriteSet(escape, &results.ResultSet{RunID: "e", Samples: []string{"../set/sa"}}); err != nil {
		t.Fatal(err)
	}
	// A sweep's points are different workloads.
	sweep := mk("sweep", counterSample("w1", 1), counterSample("w2", 2))
	if err := WriteSweep(sweep, &results.Sweep{Axis: "writers", SLO: time.Second, Series: []results.SweepSeries{{Points: []results.SweepPoint{{Value: 1, Dir: "sa"}, {Value: 2, Dir: "sb"}}}}}); err != nil {
		t.Fatal(err)
	}
	// A matrix run is a set per configuration.
	matrix := filepath.Join(root, "matrix")
	for _, c := range []string{"strategy-update", "strategy-ssa"} {
		dir := mk(filepath.Join("matrix", c), counterSample(c, 8))
		if err := WriteSet(dir, &results.ResultSet{RunID: c, Samples: []string{"sa"}}); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name    string
		path    string
		samples int
		note    string
		wantErr []string
	}{
		{"one workload", mk("alike", counterSample("1", 8), counterSample("2", 8)), 2, "", nil},
		{"workloads mixed", mixed, 0, "", []string{"mixed: its samples are not of one workload", filepath.Join(mixed, "sc") + " (run q) ran \"quota: 8 writers\"", filepath.Join(mixed, "sa")}},
		{"settings differ", otherSpec, 0, "", []string{"ran other settings (spec.writers 4 vs 8)"}},
		{"copies of one run", copies, 1, "run 1 is there 4 times", nil},
		{"a copy among others", copies2, 2, "run 1 is there 2 times (" + filepath.Join(copies2, "sa") + ", " + filepath.Join(copies2, "sc") + ")", nil},
		{"a set", set, 2, "", nil},
		{"a set's file", filepath.Join(set, SetFile), 2, "", nil},
		{"a set listing outside it", escape, 0, "", []string{`lists sample "../set/sa", which is not a directory inside the set`}},
		{"a sweep", sweep, 0, "", []string{"is a sweep: its points ran different workloads", "pass one point's directory (" + filepath.Join(sweep, "sa")}},
		{"a sweep's file", filepath.Join(sweep, SweepFile), 0, "", []string{"is a sweep"}},
		{"a matrix", matrix, 0, "", []string{"is a matrix run", "strategy-ssa, strategy-update", "pass each as a side of its own"}},
		{"nothing", t.TempDir(), 0, "", []string{"holds no result"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			side, notes, err := ReadSide(t.Context(), tt.path)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("read %d samples, want an error", len(side.Results))
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(side.Results) != tt.samples {
				t.Errorf("%d samples, want %d", len(side.Results), tt.samples)
			}
			if got := strings.Join(notes, "\n"); (tt.note == "") != (got == "") || !strings.Contains(got, tt.note) {
				t.Errorf("notes %q, want %q", got, tt.note)
			}
		})
	}
}
