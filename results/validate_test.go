package results_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/resultstest"
)

// A result whose figures no run can produce (the file is damaged or was
// edited) is refused on read, naming the figure; so compare, gate and
// report never judge or draw it.
func TestReadRefusesImpossibleResults(t *testing.T) {
	good, err := results.Encode(resultstest.Simulated(t, false, resultstest.All, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := results.Decode(bytes.NewReader(good)); err != nil {
		t.Fatalf("a real result: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(r *results.Result)
		want  string
	}{
		{"negative throughput", func(r *results.Result) { r.Summary.Throughput = -1 }, "summary.throughput: Invalid value: -1: must be 0 or more"},
		{"negative lost updates", func(r *results.Result) {
			r.Checks, r.Summary.LostUpdates = []results.Check{{Name: "counter kb-bench-0", Passed: true}}, new(int64(-1))
		}, "summary.lostUpdates: Invalid value: -1: a count is 0 or more"},
		{"p99 of MaxInt64", func(r *results.Result) { r.Summary.Latency.P99 = math.MaxInt64 }, "summary.latency.p99: Invalid value: 9223372036854775807"},
		{"negative p50", func(r *results.Result) { r.Summary.Latency.P50 = -time.Millisecond }, "summary.latency.p50"},
		{"conflict rate over 1", func(r *results.Result) { r.Summary.ConflictRate = 1.5 }, "summary.conflictRate: Invalid value: 1.5: must be 0 to 1"},
		{"huge throughput is finite", func(r *results.Result) { r.Summary.Throughput = -math.MaxFloat64 }, "summary.throughput"},
		{"negative outcome", func(r *results.Result) { r.Measurements.Outcomes["success"] = -5 }, "measurements.outcomes[success]"},
		{"damaged histogram", func(r *results.Result) {
			r.Measurements.Histograms[results.HistOp] = "AAAAAAAA" + r.Measurements.Histograms[results.HistOp][8:]
		}, "measurements.histograms[op]"},
		{"damaged series histogram", func(r *results.Result) { r.Series[0].Histogram = "not base64!" }, "series[0].histogram"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := results.Decode(bytes.NewReader(good))
			if err != nil {
				t.Fatal(err)
			}
			tc.spoil(r)
			doc, err := results.Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			_, err = results.Decode(bytes.NewReader(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "damaged or was edited by hand") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A document with several impossible figures is refused with the same
// message every time it is read, in the document's order: the first ten
// problems, not ten picked by map order.
func TestRefusalNamesTheSameProblemsEachTime(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	r.Cost = &results.Cost{Apiserver: results.ProcessCost{CPUSeconds: -1}, Etcd: results.ProcessCost{CPUSeconds: -1}, Client: results.ProcessCost{CPUSeconds: -1}}
	r.Measurements.ReadOutcomes = map[string]int64{"success": -1}
	r.Measurements.WriteOutcomes = map[string]int64{"success": -1}
	for name := range r.Measurements.Histograms {
		r.Measurements.Histograms[name] = "not base64!"
	}
	first := r.Validate()
	if first == nil {
		t.Fatal("a result with impossible figures was not refused")
	}
	for range 20 {
		if err := r.Validate(); err.Error() != first.Error() {
			t.Fatalf("the refusal changed between two reads of one document:\n%v\n---\n%v", first, err)
		}
	}
	if msg := first.Error(); !strings.Contains(msg, "measurements.readOutcomes[success]") || strings.Index(msg, "measurements.readOutcomes") > strings.Index(msg, "measurements.writeOutcomes") {
		t.Errorf("want read outcomes, then write outcomes, among the first problems:\n%s", msg)
	}
}

// A sweep's figures are checked the same way: an axis of ±1.7e308 (which
// once sent the report's tick loop into an endless loop) is refused.
func TestReadSweepRefusesImpossibleSweeps(t *testing.T) {
	good := func() *results.Sweep {
		return &results.Sweep{APIVersion: results.APIVersion, Kind: results.KindSweep, Axis: "writers", SLO: time.Second,
			Series: []results.SweepSeries{{Points: []results.SweepPoint{{Value: 1, Throughput: 10, WriteThroughput: 10, P99: time.Millisecond}, {Value: 2, Throughput: 12, WriteThroughput: 12, P99: time.Millisecond}}}}}
	}
	for _, tc := range []struct {
		name  string
		spoil func(s *results.Sweep)
		want  string
	}{
		{"fine", func(*results.Sweep) {}, ""},
		{"axis at the ends of float64", func(s *results.Sweep) {
			s.Series[0].Points[0].Value = -1.7e308
			s.Series[0].Points[1].Value = 1.7e308
		}, "series[0].points[0].value: Invalid value: -1.7e+308: an axis value above 0"},
		{"zero writers", func(s *results.Sweep) { s.Series[0].Points[0].Value = 0 }, "series[0].points[0].value"},
		{"negative throughput", func(s *results.Sweep) { s.Series[0].Points[1].WriteThroughput = -3 }, "series[0].points[1].writeThroughput"},
		{"absurd p99", func(s *results.Sweep) { s.Series[0].Points[1].P99 = math.MaxInt64 }, "series[0].points[1].p99"},
		{"no objective", func(s *results.Sweep) { s.SLO = 0 }, "slo: Invalid value: 0"},
		{"model of huge numbers", func(s *results.Sweep) {
			s.Series[0].Model = &results.USL{Lambda: math.MaxFloat64, Sigma: -math.MaxFloat64}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.spoil(s)
			doc, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			_, err = results.DecodeSweep(doc)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A result written before an unmeasured count was told from a measured
// one says "lostUpdates": 0 beside a check that could not be made; read
// back, its count is unknown. One whose checks were made keeps its count.
func TestDecodeTellsUnmeasuredLostUpdates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks []results.Check
		want   string
	}{
		{"check not made", []results.Check{{Name: "objects read back", Detail: "connection refused"}}, "unknown"},
		{"not checked", nil, "unknown"},
		{"checked", []results.Check{{Name: "counter kb-bench-0", Lost: 3, Expected: 10, Observed: 7}}, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resultstest.Simulated(t, false, resultstest.All, tc.checks)
			r.Summary.LostUpdates = new(int64(0))
			if tc.checks != nil && tc.checks[0].Lost > 0 {
				r.Summary.LostUpdates = new(int64(3))
			}
			doc, err := results.Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			back, err := results.Decode(bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := results.FormatLost(back.Summary.LostUpdates); got != tc.want {
				t.Errorf("lost updates read back as %s, want %s", got, tc.want)
			}
		})
	}
}

// A v1alpha4 result's Details are converted once, at read time, with no
// scenario code: numbers 0 or more and bools become figures named by
// their path, in the order written, an array's index or a key that is no
// name a label; strings and negative numbers are not figures.
func TestDecodeConvertsV1alpha4Details(t *testing.T) {
	r := resultstest.Simulated(t, false, resultstest.All, nil)
	doc, err := results.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	doc = bytes.Replace(doc, []byte(`"apiVersion": "`+results.APIVersion+`"`), []byte(`"apiVersion": "`+results.PreFiguresAPIVersion+`"`), 1)
	details := `"details": {"hard": 50, "lock": "watch", "released": true, "detection": -5,
		"failovers": [{"duration": 1200000000, "faults": [{"lost": 2}]}], "perController": {"ctrl-a": {"conflicts": 3}}},`
	doc = bytes.Replace(doc, []byte(`"kind": "Result",`), []byte(`"kind": "Result",`+details), 1)
	back, err := results.Decode(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range back.Figures {
		got = append(got, f.Key()+" "+f.Text())
	}
	want := `hard 50|released yes|failoversDuration{index="0"} 1200000000|failoversFaultsLost{index="0",index2="0"} 2|perControllerConflicts{key="ctrl-a"} 3`
	if strings.Join(got, "|") != want {
		t.Errorf("figures %s\nwant    %s", strings.Join(got, "|"), want)
	}
	if f := back.Figures[0]; f.Unit != results.UnitCount || !strings.Contains(f.Help, "details.hard of a kb-bench.io/v1alpha4 result (its unit is not known)") {
		t.Errorf("converted figure %+v", f)
	}
}
