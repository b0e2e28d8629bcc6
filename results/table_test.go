package results

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

func TestWriteTable(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) *Result
	}{
		{"table-retry-server-match", func(t *testing.T) *Result {
			r := simResult(t, false, all, []Check{{Name: "counter kb-bench-0", Passed: true, Expected: 1141, Observed: 1141}})
			v, fm := r.Measurements.Conflicts()
			r.Server = &ServerCheck{Available: true, Resource: "configmaps",
				ServerWrites: r.Summary.Writes, Writes: r.Summary.Writes, WritesMatch: true,
				ServerConflicts: v + fm, Conflicts: v + fm, ConflictsMatch: true,
				EtcdUpdates: r.Summary.Writes + 12, EtcdFailedUpdates: 12}
			return r
		}},
		{"table-lost-updates", func(t *testing.T) *Result {
			r := simResult(t, false, all, []Check{
				{Name: "counter kb-bench-0", Expected: 412, Observed: 375, Lost: 37},
				{Name: "counter kb-bench-1", Passed: true, Expected: 300, Observed: 300},
				{Name: "namespace kb-bench-x", Detail: "3 objects left behind"},
			})
			r.Spec.Unconditional, r.Spec.Strategy, r.Spec.Backoff = true, spec.StrategyUpdate, ""
			r.Server = UnavailableServerCheck("the apiserver's /metrics is not readable (HTTP 403)")
			r.Warnings = []string{"the apiserver's /metrics is not readable (HTTP 403): server cross-check skipped"}
			return r
		}},
		{"table-open-loop-mismatch", func(t *testing.T) *Result {
			r := simResult(t, true, all, nil)
			r.Spec.Client = spec.Client{QPS: 50, Burst: 100, ContentType: spec.ContentProtobuf}
			r.Spec.Objects, r.Spec.Distribution = 10, spec.Distribution{Kind: spec.DistZipf, ZipfExponent: 1.1}
			r.Target = Target{Kind: spec.TargetKubeconfig, Server: "https://127.0.0.1:6443", Context: "kind-kb", ServerVersion: "v1.37.1"}
			r.Interrupted = true
			r.Server = &ServerCheck{Available: true, Resource: "configmaps", ServerWrites: 1500, Writes: 1498,
				ServerConflicts: 20, Conflicts: 20, ConflictsMatch: true,
				Mismatch:    "apiserver 1500 successful writes, kb-bench 1498 (possible causes: 2 write attempts timed out on the client and may have completed on the server)",
				EtcdUpdates: 1610, EtcdFailedUpdates: 110, AbsorbedConflicts: 90, FlowControlRejected: 4}
			return r
		}},
		{"table-nothing-ran", func(t *testing.T) *Result {
			rec := metrics.NewRecorder(t0, 1, false)
			r := &Result{RunID: "20260301-120000-000000", Version: "v0.1.0-test", Spec: spec.Default(),
				Target: Target{Kind: spec.TargetLocal}, Interrupted: true}
			r.Measurements = FromSnapshot(rec.Snapshot(t0), ClientStats{})
			var err error
			if r.Summary, err = Summarize(r.Measurements, 0, nil); err != nil {
				t.Fatal(err)
			}
			return r
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTable(&buf, tc.build(t)); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".golden", buf.Bytes())
		})
	}
}

// The scenario reports render below the common table.
func TestWriteTableIncludesScenarioLines(t *testing.T) {
	r := simResult(t, false, all, nil)
	r.Quota = &QuotaReport{Resource: "count/configmaps", Hard: 50, Writers: 6}
	var buf bytes.Buffer
	if err := WriteTable(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "count/configmaps hard 50") {
		t.Errorf("quota lines missing:\n%s", buf.String())
	}
}

func TestFormatProgress(t *testing.T) {
	point := metrics.SeriesPoint{
		At: 12 * time.Second, Span: 500 * time.Millisecond, Ops: 600,
		Writes: map[string]int64{"success": 550, "conflict": 40, "field-manager-conflict": 10},
		P99:    12345 * time.Microsecond,
	}
	tests := []struct {
		name           string
		elapsed, total time.Duration
		p              metrics.SeriesPoint
		want           string
	}{
		{"running", 12*time.Second + 300*time.Millisecond, time.Minute, point, "[12s/1m0s, 48s left]  1200 ops/s  100 conflicts/s  p99 12.3ms"},
		{"bounded by operations", 12 * time.Second, 0, point, "[12s elapsed]  1200 ops/s  100 conflicts/s  p99 12.3ms"},
		{"draining", 61 * time.Second, time.Minute, point, "[1m1s/1m0s, finishing]  1200 ops/s  100 conflicts/s  p99 12.3ms"},
		{"idle interval", time.Second, 10 * time.Second, metrics.SeriesPoint{Span: time.Second}, "[1s/10s, 9s left]  0 ops/s  0 conflicts/s  p99 -"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatProgress(tc.elapsed, tc.total, tc.p); got != tc.want {
				t.Errorf("FormatProgress = %q\n                 want %q", got, tc.want)
			}
		})
	}
}
