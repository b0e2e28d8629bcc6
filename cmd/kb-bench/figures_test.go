package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A scenario's own figures are data that every reader takes from the
// saved result, with no scenario code: a quota run's rejections and a
// leader-election run's failover times are in show, compare and the HTML
// report, and 'kb-bench gate' fails a run on one of them with a real
// threshold and passes it on one that holds. (The live endpoint's copy of
// every figure is TestLiveMetricsEqualResults'.)
func TestScenarioFiguresReachEveryReader(t *testing.T) {
	bin, env, state := localUp(t)
	run := func(args ...string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "result")
		if code, stdout, stderr := kbBench(t, bin, env, append(append([]string{"run"}, args...), "--state-dir", state, "--out", out)...); code != 0 {
			t.Fatalf("run %s: exit %d\n%s\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
		return out
	}
	gate := func(dir string, thresholds ...string) (int, string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "gate.yaml")
		doc := "apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- '" + strings.Join(thresholds, "'\n- '") + "'\n"
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := kbBench(t, bin, env, "gate", dir, "--thresholds", path)
		return code, stdout + stderr
	}

	// Two writers against a hard limit of 3 are refused within the window;
	// against a limit they cannot reach, never.
	full := run("--scenario", "quota", "--quota-hard", "3", "--writers", "2", "--duration", "2s")
	roomy := run("--scenario", "quota", "--quota-hard", "100000", "--writers", "2", "--duration", "2s")
	// A leader stopped every second fails over within the window.
	leader := run("--scenario", "leader-election", "--writers", "3", "--lease-duration", "2s", "--renew-deadline", "1s",
		"--retry-period", "200ms", "--failover-every", "1s", "--duration", "5s")

	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{full, []string{"rejected"}},
		{leader, []string{"failovers", "failoverTime"}},
	} {
		code, shown, _ := kbBench(t, bin, env, "show", tc.dir)
		html := filepath.Join(t.TempDir(), "report.html")
		rcode, rout, rerr := kbBench(t, bin, env, "report", tc.dir, "-o", html)
		page, err := os.ReadFile(html)
		if code != 0 || rcode != 0 || err != nil {
			t.Fatalf("show: exit %d; report: exit %d (%v)\n%s%s", code, rcode, err, rout, rerr)
		}
		for _, name := range tc.want {
			if !strings.Contains(shown, name) {
				t.Errorf("show %s does not name %s:\n%s", filepath.Base(tc.dir), name, shown)
			}
			if !strings.Contains(string(page), name) {
				t.Errorf("the HTML report of %s does not name %s", tc.dir, name)
			}
		}
	}
	if code, compared, _ := kbBench(t, bin, env, "compare", roomy, full); code != 0 || !strings.Contains(compared, "rejected") {
		t.Errorf("compare: exit %d, want 0 and a rejected row:\n%s", code, compared)
	}

	for _, tc := range []struct {
		dir, threshold string
		code           int
	}{
		{full, "rejected < 1", 1},
		{roomy, "rejected < 1", 0},
		{leader, "failovers >= 1", 0},
		{leader, `failoverTime{quantile="1"} < 1ms`, 1},
		{leader, "noSuchFigure < 1", 1},
	} {
		code, verdict := gate(tc.dir, tc.threshold)
		if code != tc.code {
			t.Errorf("gate %q on %s: exit %d, want %d:\n%s", tc.threshold, tc.dir, code, tc.code, verdict)
		}
		if name, _, _ := strings.Cut(tc.threshold, " "); !strings.Contains(verdict, name) {
			t.Errorf("gate %q: the verdict does not name its figure:\n%s", tc.threshold, verdict)
		}
	}
}
