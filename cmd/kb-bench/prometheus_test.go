package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results/store"
)

// requirePrometheus names the variable that makes a missing Prometheus
// fail TestPrometheusScrapesTheRun rather than skip it; scripts/test.sh
// installs Prometheus (scripts/prometheus.sh) and sets it.
const requirePrometheus = "KB_BENCH_REQUIRE_PROMETHEUS"

// syncBuffer is a bytes.Buffer a process and a test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// prometheus is a real Prometheus server of the test's own: loopback, a
// temporary configuration and storage, scraping every second the targets
// written into its file_sd file.
type prometheus struct {
	url     string
	targets string
	log     *syncBuffer
}

// startPrometheus starts Debian's prometheus (scripts/prometheus.sh
// installs it) and waits until it is ready.
func startPrometheus(t *testing.T) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv(requirePrometheus) != "" {
			t.Fatalf("%s is set but there is no prometheus in PATH: run scripts/prometheus.sh", requirePrometheus)
		}
		t.Skip("no prometheus in PATH (scripts/prometheus.sh installs it)")
	}
	dir := t.TempDir()
	p := &prometheus{targets: filepath.Join(dir, "targets.json"), log: &syncBuffer{}}
	if err := os.WriteFile(p.targets, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
- job_name: kb-bench
  file_sd_configs:
  - files: [%q]
    refresh_interval: 1s
`, p.targets)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	// A free port: Prometheus says which it took only in its log.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p.url = "http://" + addr
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--enable-feature=native-histograms")
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus' log:\n%s", p.log)
		}
	})
	await.Until(t, "prometheus to be ready", func() error {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited: %v\n%s", err, p.log)
		default:
		}
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	return p
}

// scrape has Prometheus scrape target (host:port) from now on.
func (p *prometheus) scrape(t *testing.T, target string) {
	t.Helper()
	b, _ := json.Marshal([]map[string]any{{"targets": []string{target}}})
	tmp := p.targets + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p.targets); err != nil { // Prometheus never reads half a file
		t.Fatal(err)
	}
}

// query runs an instant PromQL query through Prometheus' HTTP API and
// returns each series' value by the labels named.
func (p *prometheus) query(t *testing.T, q string, by string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if doc.Status != "success" {
		t.Fatalf("%s: %s", q, doc.Error)
	}
	got := map[string]float64{}
	for _, r := range doc.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: value %v: %v", q, r.Value, err)
		}
		got[r.Metric[by]] = v
	}
	return got
}

// firstAt is the time (Unix seconds, as PromQL's @ takes it) of the first
// sample of the range selector sel whose value is v.
func (p *prometheus) firstAt(t *testing.T, sel string, v float64) string {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(sel))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("%s: %v", sel, err)
	}
	for _, r := range doc.Data.Result {
		for _, s := range r.Values {
			if s[1] == strconv.FormatFloat(v, 'f', -1, 64) {
				if at, ok := s[0].(float64); ok {
					return strconv.FormatFloat(at, 'f', -1, 64)
				}
			}
		}
	}
	t.Fatalf("%s: no sample of %v", sel, v)
	return ""
}

// TestPrometheusScrapesTheRun: a real Prometheus scrapes kb-bench during a
// run on the real local control plane, and what it stored, read back
// through its query API, ends at result.json's counts: operations,
// successes, and every class of conflict and other outcome, of the
// operations and of their write requests; the native histogram counts
// every operation. kb-bench waits for Prometheus' scrape of the final
// figures before it stops serving; the test waits for Prometheus to have
// stored it.
func TestPrometheusScrapesTheRun(t *testing.T) {
	bin, cpBin := binary(t)
	prom := startPrometheus(t)
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "result")
	cmd, u, ended := startServing(t, bin, tmp, "run", "--control-plane-bin", cpBin, "--out", out, "--writers", "6", "--duration", "5s",
		"--metrics-addr", "127.0.0.1:0", "--metrics-final-scrape", "5m")
	target, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	prom.scrape(t, target.Host)
	<-ended
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kb-bench: %v", err)
	}
	r, err := store.Read(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf(`{run_id=%q}`, r.RunID)
	// kb-bench saw the final scrape; Prometheus stores it just after.
	await.Until(t, "Prometheus to store kb-bench's final figures", func() error {
		if prom.query(t, "last_over_time(kb_bench_finished"+run+"[1h])", "run_id")[r.RunID] != 1 {
			return errors.New("kb_bench_finished is not 1")
		}
		return nil
	})
	if during := prom.query(t, "min_over_time(kb_bench_finished"+run+"[1h])", "run_id")[r.RunID]; during != 0 {
		t.Error("Prometheus stored no scrape of the run in progress")
	}
	scrapes := prom.query(t, "count_over_time(kb_bench_finished"+run+"[1h])", "run_id")[r.RunID]

	m := r.Measurements
	ops := prom.query(t, "sum by (run_id) (last_over_time(kb_bench_operations_total"+run+"[1h]))", "run_id")[r.RunID]
	if ops != float64(m.Ops) || m.Ops == 0 {
		t.Errorf("Prometheus: %v operations, result.json: %d", ops, m.Ops)
	}
	byOutcome := prom.query(t, "last_over_time(kb_bench_operations_total"+run+"[1h])", "outcome")
	writes := prom.query(t, `last_over_time(kb_bench_requests_total{run_id="`+r.RunID+`",kind="write"}[1h])`, "outcome")
	for o := range metrics.NumOutcomes {
		n := o.String()
		if g, ok := byOutcome[n]; !ok || g != float64(m.Outcomes[n]) {
			t.Errorf("Prometheus: %v operations ended %s, result.json: %d", g, n, m.Outcomes[n])
		}
		if g, ok := writes[n]; !ok || g != float64(m.WriteOutcomes[n]) {
			t.Errorf("Prometheus: %v write requests answered %s, result.json: %d", g, n, m.WriteOutcomes[n])
		}
	}
	if m.WriteOutcomes[metrics.VersionConflict.String()] == 0 {
		t.Error("6 writers on one object made no conflict: the comparison proves less than it should")
	}
	// The native histogram as of the final scrape (last_over_time takes
	// no histograms in Prometheus 2.42): at the instant kb_bench_finished
	// was first 1.
	final := prom.firstAt(t, "kb_bench_finished"+run+"[1h]", 1)
	hist := prom.query(t, "histogram_count(kb_bench_operation_duration_seconds"+run+" @ "+final+")", "run_id")[r.RunID]
	if hist != float64(m.Ops) {
		t.Errorf("Prometheus' native histogram counts %v operations, result.json %d", hist, m.Ops)
	}
	checkDashboard(t, prom, final)
	var words []string
	for _, o := range []string{"success", "conflict", "field-manager-conflict"} {
		words = append(words, fmt.Sprintf("%s %v", o, byOutcome[o]))
	}
	t.Logf("Prometheus stored %v scrapes of run %s; final: %v ops (%s), write conflicts %v; result.json: %d ops, outcomes %v, write outcomes %v",
		scrapes, r.RunID, ops, strings.Join(words, ", "), writes["conflict"], m.Ops, m.Outcomes, m.WriteOutcomes)
}

// checkDashboard runs every query of the example Grafana dashboard through
// Prometheus at the instant at, the dashboard's variables set to show
// everything: each must parse and run, and each panel of kb-bench's
// figures that every run has must show data.
func checkDashboard(t *testing.T, prom *prometheus, at string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "grafana", "kb-bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "5s", "$run", ".*", "$apiserver", ".*")
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			q := vars.Replace(tg.Expr)
			resp, err := http.Get(prom.url + "/api/v1/query?time=" + at + "&query=" + url.QueryEscape(q))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Status string `json:"status"`
				Error  string `json:"error"`
				Data   struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			switch {
			case err != nil:
				t.Fatal(err)
			case doc.Status != "success":
				t.Errorf("panel %q: Prometheus refuses %s: %s", p.Title, q, doc.Error)
			case len(doc.Data.Result) == 0 && strings.Contains(q, "kb_bench_") && !strings.Contains(q, "kb_bench_scenario_") && !strings.Contains(q, "_bucket"):
				t.Errorf("panel %q shows nothing of the run: %s", p.Title, q)
			}
		}
	}
}
