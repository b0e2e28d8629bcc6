package profiles

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

// The CEL cost A/B of the README (examples/cel-cost): each side loads and
// resolves as a run, and a rule's side differs from the baseline in its
// one rule only (and its kind's name), so the A/B measures the rule.
func TestCELCostExamples(t *testing.T) {
	const dir = "../examples/cel-cost/"
	load := func(name string) (*Profile, string) {
		t.Helper()
		p, err := Load(t.Context(), dir+name+".yaml", resolve)
		if err != nil {
			t.Fatal(err)
		}
		if _, errs := workload.Resolve(p.Spec); len(errs) > 0 {
			t.Fatalf("%s does not resolve:\n%s", name, spec.Describe(errs))
		}
		manifest, _ := p.Spec.Settings["manifest"].(string)
		_, list, _ := strings.Cut(manifest, "items: [0, 1, 2")
		list, _, _ = strings.Cut(list, "]")
		if n := strings.Count(list, ", ") + 3; n != 200 {
			t.Errorf("%s: the object's list has %d items, want 0 to 199", name, n)
		}
		return p, manifest
	}
	kinds := regexp.MustCompile(`(?i)heavyplain|heavycel|linearcel`)
	base, baseManifest := load("cr-list")
	if strings.Contains(baseManifest, "x-kubernetes-validations") {
		t.Errorf("the baseline has a CEL rule")
	}
	for name, rule := range map[string]string{
		"cr-list-unique": "self.items.all(x, self.items.filter(y, y == x).size() == 1)",
		"cr-list-each":   "self.items.all(x, x <= 1000000 - self.count)",
	} {
		p, manifest := load(name)
		ruleLines := regexp.MustCompile(`(?m)^ *x-kubernetes-validations:\n *- \{rule: "` + regexp.QuoteMeta(rule) + `", message: "[^"]*"\}\n`)
		if len(ruleLines.FindAllString(manifest, -1)) != 1 {
			t.Errorf("%s has not the rule %s once", name, rule)
			continue
		}
		if got, want := kinds.ReplaceAllString(ruleLines.ReplaceAllString(manifest, ""), "K"), kinds.ReplaceAllString(baseManifest, "K"); got != want {
			t.Errorf("%s differs from cr-list beyond its rule:\n%s\nwant\n%s", name, got, want)
		}
		s, b := p.Spec, base.Spec
		s.Settings, b.Settings = nil, nil
		if s.Scenario != b.Scenario || s.Writers != b.Writers || s.Duration != b.Duration || s.Strategy != b.Strategy || p.Spec.Settings["fieldPath"] != base.Spec.Settings["fieldPath"] {
			t.Errorf("%s runs otherwise than cr-list: %+v, want %+v", name, p.Spec, base.Spec)
		}
	}
	data, err := os.ReadFile(dir + "gate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g, err := analysis.ParseGate("gate.yaml", data); err != nil || len(g.Thresholds) != 1 {
		t.Errorf("gate.yaml: %+v, %v", g, err)
	}
}
