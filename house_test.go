// The house's rules, checked: which of kb-bench's packages may import
// which. Each room is drawn over the rooms below it, and an import that
// runs back up, or across to a sibling that is not its business, fails
// here with the rule it breaks.
package kbbench_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kb-bench/kb-bench"

// A rule says which house packages the packages of a room may import. A
// pattern is a package path from the module root, or "dir/..." for dir
// and every package under it. Every house package is in one room: the
// rule whose "from" names it most closely (roomOf).
type rule struct {
	why  string
	from string
	may  []string
}

// leaves are the rooms that every floor may stand on.
var leaves = []string{"spec", "internal/words"}

var rules = []rule{
	{"the rules stand at the house's door and import none of it", "", nil},
	{"spec is the ground floor: the resolved request, imported by all", "spec", nil},
	{"words are a leaf", "internal/words", nil},
	{"internal helpers are leaves over spec", "internal/...", []string{"internal/atomicfile", "spec"}},
	{"the Kubernetes toolbox stands on metrics only", "internal/k8s", []string{"metrics", "spec"}},
	{"metrics record; they read no documents and no cluster", "metrics/...", with("metrics/...")},
	{"the documents stand on metrics and words", "results", with("metrics")},
	{"the readers and exporters of documents know no engine and no cluster", "results/...", with("results/...", "metrics", "internal/atomicfile", "internal/readfile")},
	{"targets know nothing of runs, documents or metrics", "cluster/...", with("cluster/...", "internal/...")},
	{"the transport meters requests; it knows no scenario", "workload/transport", with("internal/k8s", "internal/netdelay", "metrics", "results")},
	{"the scenario contract stands on metrics and documents", "workload/scenario", with("internal/k8s", "metrics", "results", "results/live")},
	{"what the scenarios whose writers read share stands on metrics and documents", "workload/reads", with("metrics", "results")},
	{"a scenario knows the contract and the reads, never the engine or another scenario", "workload/...", with("workload/scenario", "workload/reads", "internal/k8s", "internal/proc", "metrics", "results", "results/live")},
	{"the shard protocol knows the transport, not the scenarios", "workload/distributed", with("workload/transport", "internal/k8s", "metrics", "results", "results/analysis")},
	{"the shard runners start shards; they know the protocol and the targets", "workload/distributed/...", with("workload/distributed", "cluster", "internal/...")},
	{"the engine drives scenarios and writes documents; it never reads targets, stores or renders", "workload", with("workload/...", "internal/...", "metrics/...", "results", "results/analysis", "results/live")},
	{"profiles are spec in YAML: they know no engine", "profiles", with("internal/readfile", "results/analysis")},
	{"the library is the one door: it may call everything below the CLI", "bench", with("cluster", "internal/...", "metrics/...", "profiles", "results/...", "workload/...")},
	{"the CLI parses flags, calls the library and prints: it never calls the engine or a scenario", "cmd/...", with("cmd/...", "bench", "cluster", "internal/...", "metrics/...", "profiles", "results/...")},
	{"tools of the build read documents", "scripts/...", with("results/...", "internal/...")},
	{"examples are tests of their own", "examples/...", nil},
}

// with is a rule's may: the leaves and rooms.
func with(rooms ...string) []string { return append(slices.Clone(leaves), rooms...) }

// TestImportsRunOnlyDown holds every house package's imports (go list's,
// not its tests') against the rules of its room.
func TestImportsRunOnlyDown(t *testing.T) {
	pkgs := housePackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of %s: is the test run from the module?", len(pkgs), module)
	}
	for _, p := range pkgs {
		r, ok := roomOf(p.Path)
		if !ok {
			t.Errorf("package %s is in no room of the house's rules: add a rule for it in house_test.go", p.Path)
			continue
		}
		for _, imp := range p.Imports {
			if !slices.ContainsFunc(r.may, func(pat string) bool { return matches(pat, imp) }) {
				t.Errorf("%s imports %s (%s), breaking the rule %q: %s may import only %s",
					p.Path, imp, p.fileImporting(t, imp), r.why, r.from, strings.Join(r.may, ", "))
			}
		}
	}
}

// TestRulesNameRooms checks the table itself: a rule whose room holds no
// package (a path mistyped, a package moved) would guard nothing.
func TestRulesNameRooms(t *testing.T) {
	pkgs := housePackages(t)
	for _, r := range rules {
		if !slices.ContainsFunc(pkgs, func(p pkg) bool { in, _ := roomOf(p.Path); return in.from == r.from }) {
			t.Errorf("the rule %q names room %s, which holds no package: mend its path or drop it", r.why, r.from)
		}
	}
}

// roomOf is the rule of the room that holds path: the one whose from
// names it most closely ("workload" before "workload/...").
func roomOf(path string) (rule, bool) {
	var best rule
	bestScore := -1
	for _, r := range rules {
		dir, sub := strings.CutSuffix(r.from, "/...")
		score := 2 * len(dir)
		if !sub {
			score++
		}
		if matches(r.from, path) && score > bestScore {
			best, bestScore = r, score
		}
	}
	return best, bestScore >= 0
}

func matches(pattern, path string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == dir || strings.HasPrefix(path, dir+"/")
	}
	return path == pattern
}

// A pkg is a house package with the house packages it imports (not its
// tests'), both as paths from the module root.
type pkg struct {
	Path    string
	Dir     string
	Files   []string
	Imports []string
}

func housePackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles,Imports", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath, Dir  string
			GoFiles, Imports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's answer: %v", err)
		}
		h := pkg{Path: house(p.ImportPath), Dir: p.Dir, Files: p.GoFiles}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") {
				h.Imports = append(h.Imports, house(imp))
			}
		}
		pkgs = append(pkgs, h)
	}
	return pkgs
}

func house(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
}

// fileImporting names the file of p that imports imp, for the message.
func (p pkg) fileImporting(t *testing.T, imp string) string {
	for _, name := range p.Files {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		for _, s := range f.Imports {
			if path, _ := strconv.Unquote(s.Path.Value); path == module+"/"+imp {
				return fmt.Sprintf("in %s", filepath.Join(p.Path, name))
			}
		}
	}
	return "in a file go list names"
}
