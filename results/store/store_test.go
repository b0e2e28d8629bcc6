package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// golden and -update live in golden_test.go.

func TestWriteReadRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		openLoop bool
	}{{"closed-loop", false}, {"open-loop", true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := resultstest.Simulated(t, tc.openLoop, resultstest.All, []results.Check{{Name: "counter kb-bench-0", Passed: true, Expected: 10, Observed: 10}})
			r.Workload = results.Describe(r.Spec, resultstest.What, true)
			r.Server = results.UnavailableServerCheck("forbidden")
			r.Warnings = []string{"the apiserver's /metrics is not readable"}
			if tc.openLoop {
				// Every part of an available check, and the scenario's own
				// figures, survive the file.
				r.Warnings = nil
				r.Measurements.Client.SentContent = map[string]int64{"application/apply-patch+yaml": 10}
				r.Measurements.Client.ReceivedContent = map[string]int64{"application/vnd.kubernetes.protobuf": 10}
				r.Server = &results.ServerCheck{
					Available: true,
					Requests: []results.RequestCount{
						{Verb: "APPLY", Resource: "configmaps", Code: "200", Client: 9, Server: 10},
						{Verb: "APPLY", Resource: "configmaps", Code: results.CodeNoResponse, Client: 1},
					},
					Mismatch:            "APPLY configmaps 200: apiserver 10, kb-bench 9",
					Internal:            []results.RequestCount{{Verb: "PUT", Resource: "resourcequotas/status", Code: "200", Server: 10}},
					Etcd:                []results.EtcdRequests{{Resource: "configmaps", Operation: "update", Count: 12, Mean: 2 * time.Millisecond}},
					Races:               []results.EtcdRaces{{Resource: "configmaps", Updates: 12, Failed: 2, Absorbed: 2}},
					FlowControlRejected: 1, FlowControlWaited: 3, FlowControlMeanWait: 250 * time.Microsecond,
				}
				r.Details = json.RawMessage(`{"failovers":[{"at":"2s","stopped":"candidate-1"}],"leaderships":4}`)
			}
			dir := t.TempDir()
			if err := Write(dir, r); err != nil {
				t.Fatal(err)
			}
			got, err := Read(t.Context(), dir)
			if err != nil {
				t.Fatal(err)
			}
			// The details come back indented as the file has them: the
			// same JSON.
			if got.Details != nil {
				var compact bytes.Buffer
				if err := json.Compact(&compact, got.Details); err != nil {
					t.Fatal(err)
				}
				if compact.String() != string(r.Details) {
					t.Errorf("details changed in the round trip: %s, want %s", compact.String(), r.Details)
				}
				got.Details = r.Details
			}
			if !reflect.DeepEqual(got, r) {
				t.Errorf("result changed in the round trip:\n got %+v\nwant %+v", got, r)
			}
			// The figures a user reads are recomputed identically from
			// the decoded histograms.
			again, err := results.Summarize(got.Measurements, got.Summary.Seconds, got.Checks)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, r.Summary) {
				t.Errorf("summary recomputed from the file differs:\n got %+v\nwant %+v", again, r.Summary)
			}
			for _, f := range []string{ResultFile, HlogFile, SeriesFile} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				golden.Check(t, tc.name+"-"+f+".golden", b)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 3 {
				t.Errorf("result directory holds %d entries, want the 3 files and no temporary leftovers", len(entries))
			}
		})
	}
}

// The .hlog holds real per-second intervals that add up to the whole-run
// histogram, readable by the HdrHistogram log reader.
func TestHlogIntervalsAddUpToTheRun(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	var buf bytes.Buffer
	if err := WriteHlog(&buf, r); err != nil {
		t.Fatal(err)
	}
	lr := hdrhistogram.NewHistogramLogReader(&buf)
	sum, intervals := (*hdrhistogram.Histogram)(nil), 0
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		if h.Tag() != results.HistOp {
			t.Errorf("interval tag %q, want %q", h.Tag(), results.HistOp)
		}
		if sum == nil {
			sum = h
		} else {
			sum.Merge(h)
		}
		intervals++
	}
	if intervals < 4 {
		t.Fatalf("%d intervals in the log, want one per measured second (4+)", intervals)
	}
	whole, _, err := r.Measurements.Histogram(results.HistOp)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Equals(whole) {
		t.Errorf("intervals add up to %d ops (p99 %dµs), the run has %d (p99 %dµs)", sum.TotalCount(), sum.ValueAtQuantile(99), whole.TotalCount(), whole.ValueAtQuantile(99))
	}
}

func TestReadRefuses(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	doc, err := results.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	swap := func(old, new string) []byte { return []byte(strings.Replace(string(doc), old, new, 1)) }
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"newer version", swap(`"apiVersion": "kb-bench.io/v1alpha5"`, `"apiVersion": "kb-bench.io/v1beta1"`), "upgrade kb-bench"},
		{"newer major", swap(`"apiVersion": "kb-bench.io/v1alpha5"`, `"apiVersion": "kb-bench.io/v2"`), "upgrade kb-bench"},
		{"older version", swap(`"apiVersion": "kb-bench.io/v1alpha5"`, `"apiVersion": "kb-bench.io/v1alpha1"`), "not supported"},
		{"percentiles field in a v1alpha2 result", swap(`"apiVersion": "kb-bench.io/v1alpha5"`, `"apiVersion": "kb-bench.io/v1alpha2"`), "summary.percentiles is not a kb-bench.io/v1alpha2 field"},
		{"foreign group", swap(`"apiVersion": "kb-bench.io/v1alpha5"`, `"apiVersion": "apps/v1"`), "not supported"},
		{"wrong kind", swap(`"kind": "Result"`, `"kind": "Profile"`), "not a kb-bench result"},
		{"unknown field", swap(`"runID"`, `"runId2": 1, "runID"`), "unknown field"},
		{"not JSON", []byte("apiVersion: kb-bench.io/v1alpha5\n"), "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ResultFile)
			if err := os.WriteFile(path, tc.doc, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(t.Context(), path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read error = %v, want one saying %q", err, tc.want)
			}
		})
	}
	// A v1alpha3 result is read; one holding the background CPU that
	// version did not have is not one.
	t.Run("v1alpha3", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), ResultFile)
		if err := os.WriteFile(path, swap(`"apiVersion": "kb-bench.io/v1alpha5"`, `"apiVersion": "kb-bench.io/v1alpha3"`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(t.Context(), path); err != nil {
			t.Fatalf("Read of a v1alpha3 result: %v", err)
		}
		r.Cost = &results.Cost{Apiserver: results.ProcessCost{Available: true, CPUSeconds: 1}, ApiserverIdle: &results.IdleCPU{Seconds: 1, CPUSeconds: 0.02}}
		if doc, err = results.Encode(r); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, swap(`"apiVersion": "kb-bench.io/v1alpha5"`, `"apiVersion": "kb-bench.io/v1alpha3"`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(t.Context(), path); err == nil || !strings.Contains(err.Error(), "cost.apiserverIdle is not a kb-bench.io/v1alpha3 field") {
			t.Fatalf("Read of a v1alpha3 result with apiserverIdle: %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		if _, err := Read(t.Context(), filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Fatal("Read of a missing file succeeded")
		}
	})
}

// A kb-bench.io/v1alpha2 result (testdata: the open-loop golden as the
// previous version wrote it) is still read, as it was written: its
// percentiles are HdrHistogram's rounded rank and say so. Its lossless
// histograms give the nearest-rank figures, which differ at p99.9.
func TestReadOlderResult(t *testing.T) {
	r, err := Read(t.Context(), filepath.Join("testdata", "v1alpha2-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.Percentiles != results.PercentilesRoundedRank {
		t.Errorf("percentiles of a v1alpha2 result read as %q, want %q", r.Summary.Percentiles, results.PercentilesRoundedRank)
	}
	if got, want := r.Summary.Latency.P999, 1035775*time.Microsecond; got != want {
		t.Errorf("stored p99.9 read as %s, want %s as written", got, want)
	}
	again, err := results.Summarize(r.Measurements, r.Summary.Seconds, r.Checks)
	if err != nil {
		t.Fatal(err)
	}
	if again.Percentiles != results.PercentilesNearestRank || again.Latency.P999 != 1041919*time.Microsecond {
		t.Errorf("summarized again: %s p99.9 %s, want %s 1.041919s", again.Percentiles, again.Latency.P999, results.PercentilesNearestRank)
	}
	// Written again, it is a current document that still says how its
	// figures were computed.
	doc, err := results.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := results.Decode(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if back.Summary.Percentiles != results.PercentilesRoundedRank || back.Summary.Latency != r.Summary.Latency {
		t.Errorf("re-encoded v1alpha2 result reads back as %s %+v, want %s %+v", back.Summary.Percentiles, back.Summary.Latency, results.PercentilesRoundedRank, r.Summary.Latency)
	}
}

// Writing again replaces the files whole, leaving no temporary files.
func TestWriteReplacesAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	r.Interrupted = true
	r.Ended = r.Ended.Add(time.Second)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	got, err := Read(t.Context(), filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Interrupted {
		t.Error("second write did not replace the first")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// A write that fails part way leaves nothing of the result: not the files
// written before the failure, not the directories it made. The failure is
// a full disk where the test may mount a small tmpfs (as root), and a
// name taken by a directory everywhere.
func TestFailedWriteLeavesNothing(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	t.Run("name taken", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, HlogFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Write(dir, r); err == nil {
			t.Fatal("Write over a directory named latency.hlog succeeded")
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("left %v, want only the directory that was there", entries)
		}
	})
	t.Run("disk full", func(t *testing.T) {
		mnt := t.TempDir()
		if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=8k"); err != nil {
			t.Skipf("cannot mount a small tmpfs here (%v): the case above covers the clean-up", err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(mnt, 0) })
		err := Write(filepath.Join(mnt, "out", "sample-1"), r)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Write on a full disk: %v, want ENOSPC", err)
		}
		if entries, _ := os.ReadDir(mnt); len(entries) != 0 {
			t.Errorf("a failed write left %s behind", entries[0].Name())
		}
	})
}

// A log reader places each interval at its own time, also when the run did
// not start on a whole second.
func TestHlogIntervalsKeepTheirTimes(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	shift := 250 * time.Millisecond
	r.Measurements.SeriesStart = r.Measurements.SeriesStart.Add(shift)
	r.Started, r.Ended = r.Started.Add(shift), r.Ended.Add(shift)
	var buf bytes.Buffer
	if err := WriteHlog(&buf, r); err != nil {
		t.Fatal(err)
	}
	lr := hdrhistogram.NewHistogramLogReader(&buf)
	var points []time.Time
	for _, p := range r.Series {
		if p.Histogram != "" {
			points = append(points, r.Measurements.SeriesStart.Add(p.At-p.Span))
		}
	}
	for i := 0; ; i++ {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			if i != len(points) {
				t.Errorf("%d intervals in the log, want %d", i, len(points))
			}
			break
		}
		if i >= len(points) {
			t.Fatalf("more intervals in the log than series points")
		}
		if d := h.StartTimeMs() - points[i].UnixMilli(); d < -1 || d > 1 {
			t.Errorf("interval %d read back as starting %dms off its series point", i, d)
		}
	}
}

func TestSweepRoundTrip(t *testing.T) {
	dir := t.TempDir()
	sw := resultstest.Sweep()
	analysis.Analyze(sw)
	if err := WriteSweep(dir, sw); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSweep(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != results.KindSweep || len(got.Series) != 2 || got.Series[0].Model == nil || got.Series[1].Stopped != sw.Series[1].Stopped {
		t.Errorf("read back %+v", got)
	}
	if _, err := ReadSweep(t.Context(), filepath.Join(dir, "nope")); err == nil {
		t.Error("a missing sweep read without error")
	}
}
