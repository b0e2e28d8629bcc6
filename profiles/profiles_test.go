package profiles

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"invalid-unknown-field.yaml", `testdata/invalid-unknown-field.yaml:6: unknown field "writerz" in spec (did you mean "writers"?)`},
		{"invalid-unknown-nested.yaml", `testdata/invalid-unknown-nested.yaml:6: unknown field "exponent" in spec.distribution (fields here: kind, zipfExponent, hotFraction, hotShare)`},
		{"invalid-unknown-top.yaml", `testdata/invalid-unknown-top.yaml:3: unknown field "specs" at the top level (did you mean "spec"?)`},
		{"invalid-kebab-case.yaml", `testdata/invalid-kebab-case.yaml:4: unknown field "think-time" in spec (did you mean "thinkTime"?)`},
		{"invalid-no-suggestion.yaml", `testdata/invalid-no-suggestion.yaml:5: unknown field "cluster" in spec.target (fields here: kind, kubeconfig, context, kindCluster, storage, controlPlaneBin)`},
		{"invalid-api-version.yaml", `testdata/invalid-api-version.yaml:1: apiVersion is "kb-bench.io/v1": this kb-bench reads kb-bench.io/v1alpha1 profiles`},
		{"invalid-no-api-version.yaml", `testdata/invalid-no-api-version.yaml: apiVersion is missing: a profile begins with "apiVersion: kb-bench.io/v1alpha1" and "kind: Profile"`},
		{"invalid-kind.yaml", `testdata/invalid-kind.yaml:2: kind is "Result", not Profile: this file is not a profile`},
		{"invalid-no-kind.yaml", `testdata/invalid-no-kind.yaml: kind is missing: a profile begins with "apiVersion: kb-bench.io/v1alpha1" and "kind: Profile"`},
		{"invalid-empty.yaml", `testdata/invalid-empty.yaml: the profile is empty: it begins with "apiVersion: kb-bench.io/v1alpha1" and "kind: Profile"`},
		{"invalid-list.yaml", `testdata/invalid-list.yaml:1: a profile is a mapping of fields (apiVersion, kind, name, description, spec), not a list`},
		{"invalid-two-documents.yaml", `testdata/invalid-two-documents.yaml:4: a second YAML document starts here: put one profile per file`},
		{"invalid-syntax.yaml", `testdata/invalid-syntax.yaml:3: did not find expected ',' or ']'`},
		{"invalid-duplicate.yaml", `testdata/invalid-duplicate.yaml:6: field "writers" in spec is set twice (first on line 4): keep one`},
		{"invalid-types.yaml", strings.Join([]string{
			`testdata/invalid-types.yaml:4: spec.writers is "eight": use a whole number`,
			`testdata/invalid-types.yaml:5: spec.rate is "fast": use a number`,
			`testdata/invalid-types.yaml:6: spec.keep is "maybe": use true or false`,
			`testdata/invalid-types.yaml:7: spec.distribution is a group of fields (kind, zipfExponent, hotFraction, hotShare), not "zipf"`,
			`testdata/invalid-types.yaml:8: spec.objects takes a whole number, not a mapping`,
		}, "\n")},
		{"invalid-fraction.yaml", strings.Join([]string{
			`testdata/invalid-fraction.yaml:4: spec.writers is "1.5": use a whole number`,
			`testdata/invalid-fraction.yaml:5: spec.operations is "lots": use a whole number`,
		}, "\n")},
		{"invalid-duration.yaml", strings.Join([]string{
			`testdata/invalid-duration.yaml:4: spec.duration: invalid duration "10" (use e.g. "500ms", "10s", "2m")`,
			`testdata/invalid-duration.yaml:5: spec.warmup: invalid duration "2 seconds" (use e.g. "500ms", "10s", "2m")`,
		}, "\n")},
		{"invalid-rate-think-time.yaml", `testdata/invalid-rate-think-time.yaml:4: rate and thinkTime both set: an open loop (--rate) schedules arrivals itself; drop --think-time or --rate`},
		{"invalid-zipf-exponent.yaml", `testdata/invalid-zipf-exponent.yaml:7: distribution.zipfExponent is 1 (--zipf-exponent): it must be greater than 1, e.g. 1.1`},
		{"invalid-writers.yaml", strings.Join([]string{
			`testdata/invalid-writers.yaml:4: writers is -2 (--writers): it must be at least 1`,
		}, "\n")},
		{"invalid-strategy.yaml", strings.Join([]string{
			`testdata/invalid-strategy.yaml:4: strategy "optimistic" is not known (--strategy): use one of update, retry, patch, ssa`,
			`testdata/invalid-strategy.yaml:5: force applies only to strategy ssa: drop --force`,
		}, "\n")},
		{"invalid-rate-nan.yaml", `testdata/invalid-rate-nan.yaml:4: rate is NaN (--rate): it must be a finite number`},
		{"invalid-leader-election.yaml", `testdata/invalid-leader-election.yaml:6: leaderElection.leaseDuration 2s is recorded as 2s in the Lease, which is not longer than renewDeadline 3s: raise --lease-duration or lower --renew-deadline`},
	}

	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			p, err := Load(filepath.Join("testdata", tt.file))
			if err == nil {
				t.Fatalf("Load succeeded (%+v), want error:\n%s", p, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tt.want)
			}
			if !spec.IsInput(err) {
				t.Errorf("error is not a spec.Input error, so the CLI would not exit with status 2")
			}
		})
	}
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no case in this table", f)
		}
	}
}

func TestLoadValid(t *testing.T) {
	tests := []struct {
		file string
		want Profile
	}{
		{"valid-minimal.yaml", Profile{Name: "valid-minimal"}},
		{"valid-full.yaml", Profile{
			Name:        "everything",
			Description: "Sets every field a profile can hold.",
			Spec: spec.Spec{
				Scenario:     spec.ScenarioCounter,
				Writers:      12,
				Objects:      3,
				ObjectSize:   2048,
				Distribution: spec.Distribution{Kind: spec.DistHotspot, HotFraction: 0.2, HotShare: 0.8},
				Fields:       spec.FieldsDisjoint,
				Clients:      4,
				Strategy:     spec.StrategyRetry,
				Backoff:      "10,5ms,1.5,0.1",
				Rate:         200,
				MaxInFlight:  32,
				Duration:     spec.D(90 * time.Second),
				Operations:   5000,
				Warmup:       spec.D(2 * time.Second),
				OpTimeout:    spec.D(3 * time.Second),
				Client:       spec.Client{QPS: 100, Burst: 200, ContentType: spec.ContentProtobuf, UserAgent: "my-bench/1"},
				Target:       spec.Target{Kind: spec.TargetLocal, Storage: spec.StorageMemory, ControlPlaneBin: "/opt/kb/bin"},
				Keep:         true,
			},
		}},
		{"valid-zipf.yaml", Profile{Name: "zipf", Spec: spec.Spec{
			Objects:      50,
			Distribution: spec.Distribution{Kind: spec.DistZipf, ZipfExponent: 1.5},
			Strategy:     spec.StrategyPatch,
			PatchType:    spec.PatchJSON,
			ThinkTime:    spec.D(20 * time.Millisecond),
		}}},
		{"valid-ssa.yaml", Profile{Name: "ssa", Spec: spec.Spec{
			Strategy: spec.StrategySSA, FieldManager: spec.ManagerShared, Force: true, Operations: 100,
		}}},
		{"valid-leader-election.yaml", Profile{Name: "le", Spec: spec.Spec{
			Scenario: spec.ScenarioLeaderElection,
			Writers:  3,
			LeaderElection: &spec.LeaderElection{
				LeaseDuration:   spec.D(6 * time.Second),
				RenewDeadline:   spec.D(4 * time.Second),
				RetryPeriod:     spec.D(time.Second),
				FailoverEvery:   spec.D(2 * time.Second),
				ReleaseOnCancel: true,
			},
		}}},
		// The loader checks a defaulted copy; the raw spec must keep the
		// unset fields unset, pointers included, so flags can still fill them.
		{"valid-partial-pointers.yaml", Profile{
			Name:        "partial",
			Description: "Only failoverEvery set; the rest must stay unset in the raw spec.",
			Spec: spec.Spec{
				Scenario:       spec.ScenarioLeaderElection,
				LeaderElection: &spec.LeaderElection{FailoverEvery: spec.D(5 * time.Second)},
			},
		}},
		{"valid-anchors.yaml", Profile{Name: "anchors", Spec: spec.Spec{
			Warmup: spec.D(time.Second), ThinkTime: spec.D(time.Second),
		}}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			got, err := Load(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
	files, err := filepath.Glob("testdata/valid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no case in this table", f)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-profile.yaml")
	if err == nil || !spec.IsInput(err) {
		t.Fatalf("Load of a missing file: got %v, want an input error", err)
	}
	if !strings.Contains(err.Error(), "testdata/no-such-profile.yaml") {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestShipped(t *testing.T) {
	want := []string{"controller-status", "counter", "hot-key", "leader-election", "quota", "ssa-disjoint", "ssa-shared"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	scenario := map[string]string{
		"controller-status": spec.ScenarioControllerStatus,
		"counter":           spec.ScenarioCounter,
		"hot-key":           spec.ScenarioCounter,
		"leader-election":   spec.ScenarioLeaderElection,
		"quota":             spec.ScenarioQuota,
		"ssa-disjoint":      spec.ScenarioCounter,
		"ssa-shared":        spec.ScenarioCounter,
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			p, err := Shipped(name)
			if err != nil {
				t.Fatalf("Shipped: %v", err)
			}
			if p.Name != name {
				t.Errorf("name is %q, want the file's name %q", p.Name, name)
			}
			if p.Description == "" || strings.Contains(p.Description, "\n") {
				t.Errorf("description %q must be one non-empty line", p.Description)
			}
			s := p.Spec
			s.Defaults()
			if err := s.Validate(); err != nil {
				t.Errorf("defaulted spec does not validate: %v", err)
			}
			if s.Scenario != scenario[name] {
				t.Errorf("scenario is %q, want %q", s.Scenario, scenario[name])
			}
			// Shipped profiles run as shipped, so they must stay short.
			if s.Duration.Duration == 0 || s.Duration.Duration > 10*time.Second {
				t.Errorf("duration is %s, want a short bound (at most 10s)", s.Duration)
			}
			data, err := ShippedYAML(name)
			if err != nil {
				t.Fatalf("ShippedYAML: %v", err)
			}
			again, err := Parse("x.yaml", data)
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Errorf("ShippedYAML does not parse back to the same profile: %v", err)
			}
		})
	}
}

func TestShippedSettings(t *testing.T) {
	tests := []struct {
		name  string
		check func(s spec.Spec) bool
	}{
		{"counter", func(s spec.Spec) bool {
			return s.Writers == 8 && s.Objects == 1 && s.Strategy == spec.StrategyUpdate && s.Fields == spec.FieldsShared
		}},
		{"hot-key", func(s spec.Spec) bool {
			return s.Objects == 100 && s.Distribution.Kind == spec.DistZipf && s.Distribution.ZipfExponent > 1
		}},
		{"ssa-disjoint", func(s spec.Spec) bool {
			return s.Strategy == spec.StrategySSA && s.Fields == spec.FieldsDisjoint && s.FieldManager == spec.ManagerPerWriter
		}},
		{"ssa-shared", func(s spec.Spec) bool {
			return s.Strategy == spec.StrategySSA && s.Fields == spec.FieldsShared && s.FieldManager == spec.ManagerPerWriter && !s.Force
		}},
		{"leader-election", func(s spec.Spec) bool {
			return s.Writers == 5 && s.LeaderElection != nil && s.LeaderElection.FailoverEvery.Duration > 0
		}},
		{"quota", func(s spec.Spec) bool {
			return s.Writers == 16 && s.Quota != nil && s.Quota.Resource == "count/configmaps" && s.Quota.Hard == 50
		}},
		{"controller-status", func(s spec.Spec) bool {
			return s.Controller != nil && s.Controller.Controllers > 1 && s.Controller.SharedObjects > 0 && s.Controller.ObjectsPerController > 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Shipped(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(p.Spec) {
				t.Errorf("profile %s does not say what its name promises: %+v", tt.name, p.Spec)
			}
		})
	}
}

func TestShippedUnknown(t *testing.T) {
	for _, get := range []func(string) error{
		func(n string) error { _, err := Shipped(n); return err },
		func(n string) error { _, err := ShippedYAML(n); return err },
	} {
		err := get("countr")
		want := `no shipped profile is called "countr": use one of controller-status, counter, hot-key, leader-election, quota, ssa-disjoint, ssa-shared (kb-bench profiles list)`
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
		if !spec.IsInput(err) {
			t.Errorf("unknown profile name is not an input error")
		}
	}
}

func TestList(t *testing.T) {
	list, err := List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, Names()) {
		t.Errorf("List names %v, want %v (sorted)", names, Names())
	}
}

func TestSuggest(t *testing.T) {
	fields := fieldsOf(reflect.TypeFor[spec.Spec]())
	tests := []struct{ in, want string }{
		{"writerz", "writers"},
		{"Writers", "writers"},
		{"think_time", "thinkTime"},
		{"op-timeout", "opTimeout"},
		{"stratgy", "strategy"},
		{"objectsize", "objectSize"},
		{"warmpu", "warmup"},
		{"bananas", ""},
		{"x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := suggest(tt.in, fields); got != tt.want {
				t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
