// Package grafana_test checks the example Grafana dashboard: every query
// of every panel and variable names metrics that kb-bench's live endpoint
// or the real kube-apiserver export.
package grafana_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/results/live"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

var local clustertest.Shared

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

// DashboardFile is the dashboard the README documents.
const DashboardFile = "kb-bench.json"

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// queries are the dashboard's PromQL queries, each named by where it is.
func (d dashboard) queries(t *testing.T) map[string]string {
	q := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for i, tg := range p.Targets {
				q[fmt.Sprintf("panel %q query %d", p.Title, i+1)] = tg.Expr
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var s struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &s); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		q["variable "+v.Name] = s.Query
	}
	return q
}

// selector finds a metric name where PromQL selects it: before its label
// matchers, or as label_values' first argument.
var selector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{|label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)

// names adds the series names of families to known: a histogram's
// _bucket, _sum and _count too.
func names(known map[string]bool, families map[string]*dto.MetricFamily) {
	for name, mf := range families {
		known[name] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				known[name+s] = true
			}
		}
	}
}

// TestDashboardNamesExportedMetrics: the dashboard's every query names
// only metrics that a real run's live endpoint (the default scenario,
// leader election and quota, whose figures have panels of their own) or
// the real local kube-apiserver's /metrics export, so no panel stays
// empty because of a name.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(DashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", DashboardFile, err)
	}
	cfg := local.Config(t)
	known := map[string]bool{}

	// kb-bench's: what real runs export.
	x, ours := live.NewExporter(), map[string]*dto.MetricFamily{}
	for _, sc := range []string{"counter", "leader-election", "quota"} {
		s := spec.Spec{Scenario: sc, Writers: 2, Duration: spec.D(time.Second)}
		r, errs := workload.Resolve(s)
		if len(errs) > 0 {
			t.Fatal(spec.Describe(errs))
		}
		id := fmt.Sprintf("grafana-%d-%s", os.Getpid(), sc)
		run := x.Add(live.Labels{RunID: id, Scenario: sc})
		out, err := workload.Run(t.Context(), r, workload.Options{Config: cfg, RunID: id, Version: "test", FinalizeNamespace: true, Live: run})
		if err != nil {
			t.Fatalf("%s: %v", sc, err)
		}
		// Scraped before the run is saved, for the figures that live only
		// while it runs (the leaders now), and after, for the saved ones.
		gather(t, x, known, ours)
		if err := run.Finish(out.Result); err != nil {
			t.Fatal(err)
		}
		gather(t, x, known, ours)
	}

	// The apiserver's: its own /metrics, after those runs' requests.
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	theirs, err := parser.TextToMetricFamilies(strings.NewReader(string(text)))
	if err != nil {
		t.Fatalf("the apiserver's /metrics: %v", err)
	}
	names(known, theirs)

	used := map[string]bool{}
	for where, q := range d.queries(t) {
		found := selector.FindAllStringSubmatch(q, -1)
		if len(found) == 0 {
			t.Errorf("%s names no metric: %s", where, q)
		}
		for _, m := range found {
			name := m[1] + m[2]
			used[name] = true
			if !known[name] {
				t.Errorf("%s names %s, which neither kb-bench nor the apiserver exports (those it does of that family: %s): %s", where, name, strings.Join(kin(known, name), ", "), q)
			}
		}
	}
	// Both sides are on the dashboard.
	for _, want := range []string{"kb_bench_operations_total", "kb_bench_requests_total", "kb_bench_operation_duration_seconds",
		"kb_bench_scenario_leaders", "kb_bench_scenario_admitted_total",
		"apiserver_request_total", "apiserver_request_duration_seconds_bucket", "apiserver_flowcontrol_dispatched_requests_total"} {
		if !used[want] {
			t.Errorf("no panel shows %s", want)
		}
	}
	t.Logf("%d queries name %d metrics, all exported (kb-bench: %d families, apiserver: %d)", len(d.queries(t)), len(used), len(ours), len(theirs))
}

// gather adds the families x exports now to ours, and their names to known.
func gather(t *testing.T, x prometheus.Collector, known map[string]bool, ours map[string]*dto.MetricFamily) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(x)
	gathered, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range gathered {
		ours[mf.GetName()] = mf
	}
	names(known, ours)
}

// kin are the known names that share name's first two words.
func kin(known map[string]bool, name string) []string {
	words := strings.SplitN(name, "_", 3)
	prefix := strings.Join(words[:min(2, len(words))], "_") + "_"
	var k []string
	for n := range known {
		if strings.HasPrefix(n, prefix) && !strings.HasSuffix(n, "_sum") && !strings.HasSuffix(n, "_count") {
			k = append(k, n)
		}
	}
	slices.Sort(k)
	return k
}
