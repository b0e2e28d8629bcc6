package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/results/store"
)

// startServing starts kb-bench with args (a command and its flags, with
// --metrics-addr) and returns it once it says where it serves its live
// figures, with the URL and a channel closed when its stderr ends.
func startServing(t *testing.T, bin, tmp string, args ...string) (cmd *exec.Cmd, url string, ended <-chan struct{}) {
	t.Helper()
	cmd = exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp, "XDG_STATE_HOME="+tmp)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	urls, done := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("kb-bench: " + sc.Text())
			if u, ok := strings.CutPrefix(sc.Text(), "metrics: serving the run's live figures at "); ok {
				urls <- u
			}
		}
	}()
	select {
	case url = <-urls:
	case <-done:
		t.Fatal("kb-bench ended without serving its live figures")
	}
	return cmd, url, done
}

// series are one scrape's kb-bench series: by run id, then by name and
// the labels beyond the run's (e.g. `kb_bench_operations_total{outcome="success"}`).
type series map[string]map[string]float64

// scrapeLive scrapes url in the text format; ok is false when nothing
// answers there (any more).
func scrapeLive(t *testing.T, url string) (s series, ok bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, false
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("the live exposition does not parse: %v\n%s", err, b)
	}
	s = series{}
	for name, mf := range families {
		for _, m := range mf.Metric {
			var run string
			var extra []string
			for _, lp := range m.Label {
				switch lp.GetName() {
				case "run_id":
					run = lp.GetValue()
				case "scenario", "strategy", "point":
				default:
					extra = append(extra, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
				}
			}
			sort.Strings(extra)
			key := name
			if len(extra) > 0 {
				key += "{" + strings.Join(extra, ",") + "}"
			}
			if s[run] == nil {
				s[run] = map[string]float64{}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				s[run][key] = m.Counter.GetValue()
			case dto.MetricType_GAUGE:
				s[run][key] = m.Gauge.GetValue()
			case dto.MetricType_HISTOGRAM:
				s[run][key+"_count"] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return s, true
}

// scenarioSeries are the series of a scenario's figures:
// kb_bench_scenario_<name>, name and labels in snake_case, a duration in
// seconds (_seconds), a count that adds up a counter (_total).
func scenarioSeries(figures []results.Figure) map[string]float64 {
	snake := func(s string) string {
		return strings.ToLower(regexp.MustCompile("([A-Z])").ReplaceAllString(s, "_$1"))
	}
	w := map[string]float64{}
	for _, f := range figures {
		name, v := "kb_bench_scenario_"+snake(f.Name), f.Value
		switch {
		case f.Unit == results.UnitDuration:
			name, v = name+"_seconds", v/1e9
		case f.Sum:
			name += "_total"
		}
		var labels []string
		for k, lv := range f.Labels {
			labels = append(labels, fmt.Sprintf("%s=%q", snake(k), lv))
		}
		if sort.Strings(labels); len(labels) > 0 {
			name += "{" + strings.Join(labels, ",") + "}"
		}
		w[name] = v
	}
	return w
}

// want are the series a run's live figures must end at: result.json's.
func want(r *results.Result) map[string]float64 {
	m := r.Measurements
	w := map[string]float64{
		"kb_bench_warmup_operations_total":          float64(m.WarmupOps),
		"kb_bench_write_retries_total":              float64(live.Retries(m.Attempts)),
		"kb_bench_gave_up_total":                    float64(m.GaveUp),
		"kb_bench_client_retries_total":             float64(m.Client.Retries),
		"kb_bench_client_rate_limited_total":        float64(m.Client.RateLimited),
		"kb_bench_client_stream_waited_total":       float64(m.Client.StreamWaited),
		"kb_bench_operation_duration_seconds_count": float64(m.Ops),
		"kb_bench_finished":                         1,
		"kb_bench_window_seconds":                   r.Summary.Seconds,
	}
	for o := range metrics.NumOutcomes {
		n := o.String()
		w[fmt.Sprintf("kb_bench_operations_total{outcome=%q}", n)] = float64(m.Outcomes[n])
		w[fmt.Sprintf("kb_bench_requests_total{kind=\"read\",outcome=%q}", n)] = float64(m.ReadOutcomes[n])
		w[fmt.Sprintf("kb_bench_requests_total{kind=\"write\",outcome=%q}", n)] = float64(m.WriteOutcomes[n])
	}
	return w
}

// readResults reads every result.json under dir.
func readResults(t *testing.T, dir string) []*results.Result {
	t.Helper()
	var all []*results.Result
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != store.ResultFile {
			return err
		}
		r, err := store.Read(t.Context(), filepath.Dir(path))
		all = append(all, r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestLiveMetricsEqualResults scrapes kb-bench's endpoint all through a
// run and a sweep on the real local control plane: counters never go
// down, and once each run ended, what it shows is its result.json's
// figures exactly (operations and requests by outcome, retries, the
// client's waits, the histogram's count). kb-bench then stops serving,
// after that scrape of the final figures.
func TestLiveMetricsEqualResults(t *testing.T) {
	bin, cpBin := binary(t)
	for _, tc := range []struct {
		name string
		args []string
		runs int
		// scenario: the scenario's own figures in result.json are on the
		// endpoint too; during are those a scrape of the run in progress
		// must show.
		scenario bool
		during   func(got map[string]float64) bool
	}{
		{name: "run", args: []string{"run", "--writers", "4", "--duration", "3s"}, runs: 1},
		{name: "sweep", args: []string{"sweep", "--writers", "1,3", "--duration", "2s", "--stop-at", "none"}, runs: 2},
		// The coordinator adds up its shards' figures as they go.
		{name: "shards", args: []string{"run", "--writers", "4", "--shards", "2", "--duration", "3s"}, runs: 1,
			during: func(got map[string]float64) bool { return got[`kb_bench_operations_total{outcome="success"}`] > 0 }},
		{name: "quota", args: []string{"run", "--scenario", "quota", "--writers", "4", "--duration", "2s"}, runs: 1,
			scenario: true, during: func(got map[string]float64) bool { return got["kb_bench_scenario_creates_total"] > 0 }},
		{name: "leader-election", args: []string{"run", "--scenario", "leader-election", "--writers", "3", "--duration", "4s"}, runs: 1,
			scenario: true, during: func(got map[string]float64) bool { return got["kb_bench_scenario_leaders"] == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "result")
			args := append(append([]string(nil), tc.args...), "--control-plane-bin", cpBin, "--out", out,
				"--metrics-addr", "127.0.0.1:0", "--metrics-final-scrape", "10m")
			cmd, url, ended := startServing(t, bin, tmp, args...)
			last, scrapes, running, seen := map[string]map[string]float64{}, 0, 0, false
			for {
				s, ok := scrapeLive(t, url)
				if !ok {
					break // kb-bench stopped serving: it saw a scrape of the final figures
				}
				scrapes++
				for run, got := range s {
					if got["kb_bench_finished"] == 0 {
						running++
						seen = seen || tc.during != nil && tc.during(got)
					}
					for key, v := range got {
						if strings.HasSuffix(key, "_total") && v < last[run][key] {
							t.Errorf("%s %s went down: %v, then %v", run, key, last[run][key], v)
						}
					}
					last[run] = got
				}
				// A scraper's interval, not a wait for an event: the run
				// lasts seconds, and kb-bench serves until it has seen a
				// scrape of its final figures (--metrics-final-scrape), so
				// a slow machine only means fewer scrapes.
				time.Sleep(100 * time.Millisecond)
			}
			<-ended
			if err := cmd.Wait(); err != nil {
				t.Fatalf("kb-bench: %v", err)
			}
			if running == 0 {
				t.Errorf("no scrape in %d saw a run in progress", scrapes)
			}
			if tc.during != nil && !seen {
				t.Errorf("no scrape of the run in progress showed its figures as they happen")
			}
			rs := readResults(t, out)
			if len(rs) != tc.runs || len(last) != tc.runs {
				t.Fatalf("%d results and %d runs on the endpoint, want %d", len(rs), len(last), tc.runs)
			}
			for _, r := range rs {
				got := last[r.RunID]
				if got == nil {
					t.Errorf("run %s is not on the endpoint (runs %v)", r.RunID, keys(last))
					continue
				}
				if r.Measurements.Ops == 0 {
					t.Errorf("run %s measured nothing", r.RunID)
				}
				w := want(r)
				if tc.scenario {
					if len(r.Figures) == 0 {
						t.Errorf("run %s: no scenario figures in result.json", r.RunID)
					}
					maps.Copy(w, scenarioSeries(r.Figures))
				}
				for key, w := range w {
					if g, ok := got[key]; !ok || g != w {
						t.Errorf("run %s: %s = %v (present %v), result.json says %v", r.RunID, key, g, ok, w)
					}
				}
				t.Logf("run %s: %d ops, outcomes %v, write requests %v: equal on the endpoint", r.RunID, r.Measurements.Ops, r.Measurements.Outcomes, r.Measurements.WriteOutcomes)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

// TestMetricsPortInUse: a --metrics-addr whose port is taken is bad input
// (exit 2) found before anything starts: no control plane, no run.
func TestMetricsPortInUse(t *testing.T) {
	bin, cpBin := binary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, command := range []string{"run", "sweep"} {
		t.Run(command, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(bin, command, "--control-plane-bin", cpBin, "--out", filepath.Join(tmp, "out"), "--writers", "2", "--duration", "1s", "--metrics-addr", ln.Addr().String())
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp, "XDG_STATE_HOME="+tmp)
			b, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2:\n%s", err, b)
			}
			msg := string(b)
			if !strings.Contains(msg, "address already in use") || !strings.Contains(msg, "pick a free port") {
				t.Errorf("the error does not say the port is in use and what to do:\n%s", msg)
			}
			if strings.Contains(msg, "control plane") || strings.Contains(msg, "target:") {
				t.Errorf("something started before the port was found taken:\n%s", msg)
			}
			if _, err := os.Stat(filepath.Join(tmp, "out")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a result directory was made: %v", err)
			}
		})
	}
}
