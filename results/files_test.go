package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/kb-bench/kb-bench/internal/golden"
)

// golden and -update live in golden_test.go.

func TestWriteReadRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		openLoop bool
	}{{"closed-loop", false}, {"open-loop", true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := simResult(t, tc.openLoop, all, []Check{{Name: "counter kb-bench-0", Passed: true, Expected: 10, Observed: 10}})
			r.Workload = Describe(r.Spec, simWhat, true)
			r.Server = UnavailableServerCheck("forbidden")
			r.Warnings = []string{"the apiserver's /metrics is not readable"}
			if tc.openLoop {
				// Every part of an available check, and the scenario's own
				// figures, survive the file.
				r.Warnings = nil
				r.Measurements.Client.SentContent = map[string]int64{"application/apply-patch+yaml": 10}
				r.Measurements.Client.ReceivedContent = map[string]int64{"application/vnd.kubernetes.protobuf": 10}
				r.Server = &ServerCheck{
					Available: true,
					Requests: []RequestCount{
						{Verb: "APPLY", Resource: "configmaps", Code: "200", Client: 9, Server: 10},
						{Verb: "APPLY", Resource: "configmaps", Code: CodeNoResponse, Client: 1},
					},
					Mismatch:            "APPLY configmaps 200: apiserver 10, kb-bench 9",
					Internal:            []RequestCount{{Verb: "PUT", Resource: "resourcequotas/status", Code: "200", Server: 10}},
					Etcd:                []EtcdRequests{{Resource: "configmaps", Operation: "update", Count: 12, Mean: 2 * time.Millisecond}},
					Races:               []EtcdRaces{{Resource: "configmaps", Updates: 12, Failed: 2, Absorbed: 2}},
					FlowControlRejected: 1, FlowControlWaited: 3, FlowControlMeanWait: 250 * time.Microsecond,
				}
				r.Details = json.RawMessage(`{"failovers":[{"at":"2s","stopped":"candidate-1"}],"leaderships":4}`)
			}
			dir := t.TempDir()
			if err := Write(dir, r); err != nil {
				t.Fatal(err)
			}
			got, err := Read(dir)
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
			again, err := Summarize(got.Measurements, got.Summary.Seconds, got.Checks)
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
	r := simResult(t, false, all, nil)
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
		if h.Tag() != HistOp {
			t.Errorf("interval tag %q, want %q", h.Tag(), HistOp)
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
	whole, _, err := r.Measurements.Histogram(HistOp)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Equals(whole) {
		t.Errorf("intervals add up to %d ops (p99 %dµs), the run has %d (p99 %dµs)", sum.TotalCount(), sum.ValueAtQuantile(99), whole.TotalCount(), whole.ValueAtQuantile(99))
	}
}

func TestReadRefuses(t *testing.T) {
	r := simResult(t, false, all, nil)
	doc, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	swap := func(old, new string) []byte { return []byte(strings.Replace(string(doc), old, new, 1)) }
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"newer version", swap(`"apiVersion": "kb-bench.io/v1alpha2"`, `"apiVersion": "kb-bench.io/v1beta1"`), "upgrade kb-bench"},
		{"newer major", swap(`"apiVersion": "kb-bench.io/v1alpha2"`, `"apiVersion": "kb-bench.io/v2"`), "upgrade kb-bench"},
		{"older version", swap(`"apiVersion": "kb-bench.io/v1alpha2"`, `"apiVersion": "kb-bench.io/v1alpha0"`), "not supported"},
		{"foreign group", swap(`"apiVersion": "kb-bench.io/v1alpha2"`, `"apiVersion": "apps/v1"`), "not supported"},
		{"wrong kind", swap(`"kind": "Result"`, `"kind": "Profile"`), "not a kb-bench result"},
		{"unknown field", swap(`"runID"`, `"runId2": 1, "runID"`), "unknown field"},
		{"not JSON", []byte("apiVersion: kb-bench.io/v1alpha2\n"), "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ResultFile)
			if err := os.WriteFile(path, tc.doc, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read error = %v, want one saying %q", err, tc.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, err := Read(filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Fatal("Read of a missing file succeeded")
		}
	})
}

// Writing again replaces the files whole, leaving no temporary files.
func TestWriteReplacesAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r := simResult(t, false, all, nil)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	r.Interrupted = true
	r.Ended = r.Ended.Add(time.Second)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	got, err := Read(filepath.Join(dir, ResultFile))
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

// A log reader places each interval at its own time, also when the run did
// not start on a whole second.
func TestHlogIntervalsKeepTheirTimes(t *testing.T) {
	r := simResult(t, false, all, nil)
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
