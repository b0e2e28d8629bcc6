package profiles

import (
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

// resolve checks a profile's spec with the engine, as package bench does.
func resolve(s spec.Spec) field.ErrorList {
	_, errs := workload.Resolve(s)
	return errs
}

// registered lists the registered scenarios as an unknown one's error does.
func registered() string {
	var names []string
	for _, d := range workload.Scenarios() {
		names = append(names, strconv.Quote(d.Name))
	}
	return strings.Join(names, ", ")
}

func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		file string
		want string
		// prefix: want is the start of the error (the file and line);
		// the rest is yaml.v3's own wording.
		prefix bool
	}{
		// The document and its YAML.
		{"invalid-api-version.yaml", `testdata/invalid-api-version.yaml:1: apiVersion is "kb-bench.io/v1": this kb-bench reads kb-bench.io/v1alpha1 profiles`, false},
		{"invalid-no-api-version.yaml", `testdata/invalid-no-api-version.yaml: apiVersion is missing: a profile begins with "apiVersion: kb-bench.io/v1alpha1" and "kind: Profile"`, false},
		{"invalid-kind.yaml", `testdata/invalid-kind.yaml:2: kind is "Result", not Profile: this file is not a profile`, false},
		{"invalid-no-kind.yaml", `testdata/invalid-no-kind.yaml: kind is missing: a profile begins with "apiVersion: kb-bench.io/v1alpha1" and "kind: Profile"`, false},
		{"invalid-empty.yaml", `testdata/invalid-empty.yaml: the profile is empty: it begins with "apiVersion: kb-bench.io/v1alpha1" and "kind: Profile"`, false},
		{"invalid-list.yaml", `testdata/invalid-list.yaml:1: a profile is a mapping of fields (apiVersion, kind, name, description, spec), not a list`, false},
		{"invalid-two-documents.yaml", `testdata/invalid-two-documents.yaml:4: a second YAML document starts here: put one profile per file`, false},
		{"invalid-syntax.yaml", `testdata/invalid-syntax.yaml:3: did not find expected ',' or ']'`, false},

		// Unknown, repeated and mistyped fields of the shared spec: the
		// walker names them with their line, before anything is validated.
		{"invalid-unknown-field.yaml", `testdata/invalid-unknown-field.yaml:6: unknown field "writerz" in spec (did you mean "writers"?)`, false},
		{"invalid-unknown-nested.yaml", `testdata/invalid-unknown-nested.yaml:6: unknown field "limit" in spec.client (fields here: qps, burst, contentType, userAgent, latency, jitter)`, false},
		{"invalid-unknown-top.yaml", `testdata/invalid-unknown-top.yaml:3: unknown field "specs" at the top level (did you mean "spec"?)`, false},
		{"invalid-kebab-case.yaml", `testdata/invalid-kebab-case.yaml:4: unknown field "think-time" in spec (did you mean "thinkTime"?)`, false},
		{"invalid-no-suggestion.yaml", `testdata/invalid-no-suggestion.yaml:5: unknown field "cluster" in spec.target (fields here: kind, kubeconfig, context, kindCluster, kindNodeImage, kindPull, keepCluster, storage, controlPlaneBin, controllerManager, apiservers, etcdLatency, etcdJitter, killAPIServer, killAPIServerAt)`, false},
		{"invalid-duplicate.yaml", `testdata/invalid-duplicate.yaml:6: field "writers" in spec is set twice (first on line 4): keep one`, false},
		{"invalid-types.yaml", strings.Join([]string{
			`testdata/invalid-types.yaml:4: spec.writers is "eight": use a whole number`,
			`testdata/invalid-types.yaml:5: spec.rate is "fast": use a number`,
			`testdata/invalid-types.yaml:6: spec.keep is "maybe": use true or false`,
			`testdata/invalid-types.yaml:7: spec.client is a group of fields (qps, burst, contentType, userAgent, latency, jitter), not "protobuf"`,
			`testdata/invalid-types.yaml:8: spec.operations takes a whole number, not a mapping`,
		}, "\n"), false},
		{"invalid-fraction.yaml", strings.Join([]string{
			`testdata/invalid-fraction.yaml:4: spec.writers is "1.5": use a whole number`,
			`testdata/invalid-fraction.yaml:5: spec.operations is "lots": use a whole number`,
		}, "\n"), false},
		{"invalid-duration.yaml", strings.Join([]string{
			`testdata/invalid-duration.yaml:4: spec.duration: "10" is not a duration (use e.g. 500ms, 10s, 2m)`,
			`testdata/invalid-duration.yaml:5: spec.warmup: "2 seconds" is not a duration (use e.g. 500ms, 10s, 2m)`,
		}, "\n"), false},
		// The backoff is parsed where it is read, with the parser's message.
		{"invalid-backoff.yaml", `testdata/invalid-backoff.yaml:5: spec.backoff: "3,x,1,0" is not a backoff: use default-retry, default-backoff or STEPS,DURATION,FACTOR,JITTER such as 10,5ms,1.5,0.1 (DURATION must be a duration such as 10ms)`, false},

		// Validation of the shared spec: each error on the line of the
		// field its path names, nested ones included.
		{"invalid-scenario.yaml", `testdata/invalid-scenario.yaml:4: spec.scenario: Unsupported value: "countr": supported values: ` + registered() + ` (--scenario)`, false},
		{"invalid-writers.yaml", `testdata/invalid-writers.yaml:4: spec.writers: Invalid value: -2: use 1 to 100000 (--writers)`, false},
		{"invalid-strategy.yaml", strings.Join([]string{
			`testdata/invalid-strategy.yaml:4: spec.strategy: Unsupported value: "optimistic": supported values: "update", "retry", "patch", "ssa" (--strategy)`,
			`testdata/invalid-strategy.yaml:5: spec.force: Forbidden: applies only to strategy ssa, not optimistic: drop it`,
		}, "\n"), false},
		{"invalid-rate-think-time.yaml", `testdata/invalid-rate-think-time.yaml:5: spec.thinkTime: Forbidden: an open loop (--rate) schedules arrivals itself: drop --think-time or --rate`, false},
		{"invalid-rate-nan.yaml", `testdata/invalid-rate-nan.yaml:4: spec.rate: Invalid value: NaN: must be a finite number (--rate)`, false},
		{"invalid-client-target.yaml", strings.Join([]string{
			`testdata/invalid-client-target.yaml:7: spec.client.burst: Invalid value: 0: a client-side limit (--qps) needs --burst of at least 1`,
			`testdata/invalid-client-target.yaml:11: spec.target.storage: Forbidden: applies only to the local control plane: drop --storage`,
		}, "\n"), false},
		// A scenario without strategies refuses them (quota's traits).
		{"invalid-quota.yaml", strings.Join([]string{
			`testdata/invalid-quota.yaml:5: spec.strategy: Forbidden: this scenario has no write strategies: drop it`,
			`testdata/invalid-quota.yaml:6: spec.backoff: Forbidden: this scenario has no write strategies: drop it`,
			`testdata/invalid-quota.yaml:9: spec.settings.hard: Invalid value: -1: use at least 1 (--quota-hard)`,
		}, "\n"), false},
		// A scenario that paces itself refuses a rate and strategies
		// (leader-election's traits).
		{"invalid-self-paced.yaml", strings.Join([]string{
			`testdata/invalid-self-paced.yaml:7: spec.strategy: Forbidden: this scenario has no write strategies: drop it`,
			`testdata/invalid-self-paced.yaml:6: spec.rate: Forbidden: this scenario paces its own requests (client-go's timers), so there is no loop to set: drop it`,
		}, "\n"), false},

		// The scenario's settings: each error on the line of its key
		// inside settings:.
		{"invalid-zipf-exponent.yaml", `testdata/invalid-zipf-exponent.yaml:7: spec.settings.zipfExponent: Invalid value: 1: must be greater than 1, e.g. 1.1 (--zipf-exponent)`, false},
		{"invalid-zipf-without-zipf.yaml", `testdata/invalid-zipf-without-zipf.yaml:7: spec.settings.zipfExponent: Forbidden: applies only to distribution zipf: drop --zipf-exponent or set --distribution zipf`, false},
		{"invalid-unknown-setting.yaml", `testdata/invalid-unknown-setting.yaml:7: spec.settings.exponent: Forbidden: this scenario has no setting of that name: use objects, objectSize, distribution, zipfExponent, hotFraction, hotShare, writersPerObject, fields, manifest, fieldPath, subresource, installCRD`, false},
		{"invalid-settings-types.yaml", strings.Join([]string{
			`testdata/invalid-settings-types.yaml:7: spec.settings.distribution: Invalid value: 3: must be a string`,
			`testdata/invalid-settings-types.yaml:5: spec.settings.objects: Invalid value: "many": must be a whole number`,
			`testdata/invalid-settings-types.yaml:6: spec.settings.writersPerObject: Invalid value: 1.5: must be a whole number`,
		}, "\n"), false},
		// settings that is not a mapping: the line is right, the words are
		// the YAML decoder's.
		{"invalid-settings-shape.yaml", `testdata/invalid-settings-shape.yaml:5: `, true},
		// A scenario's settings may refuse a shared setting it cannot
		// honour: the error points at the top-level field.
		{"invalid-controller-status.yaml", strings.Join([]string{
			`testdata/invalid-controller-status.yaml:8: spec.settings.controllers: Invalid value: -1: use at least 1 (--controllers)`,
			`testdata/invalid-controller-status.yaml:6: spec.patchType: Invalid value: "json": controller-status patches a condition in a list keyed by type, which a json patch cannot address: use --patch-type merge or strategic`,
		}, "\n"), false},
		{"invalid-leader-election.yaml", `testdata/invalid-leader-election.yaml:6: spec.settings.leaseDuration: Invalid value: "2s": is recorded as 2s in the Lease, which is not longer than renewDeadline 3s: raise --lease-duration or lower --renew-deadline`, false},
	}

	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			p, err := Load(t.Context(), filepath.Join("testdata", tt.file), resolve)
			if err == nil {
				t.Fatalf("Load succeeded (%+v), want error:\n%s", p, tt.want)
			}
			got := err.Error()
			if tt.prefix && (!strings.HasPrefix(got, tt.want) || strings.Contains(got, "\n")) {
				t.Errorf("error:\n%s\nwant one line starting:\n%s", got, tt.want)
			}
			if !tt.prefix && got != tt.want {
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
				Scenario:    "counter",
				Writers:     12,
				Clients:     4,
				Strategy:    spec.StrategyRetry,
				Backoff:     &spec.Backoff{Steps: 10, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 0.1},
				Rate:        200,
				MaxInFlight: 32,
				Duration:    spec.D(90 * time.Second),
				Operations:  5000,
				Warmup:      spec.D(2 * time.Second),
				OpTimeout:   spec.D(3 * time.Second),
				Client:      spec.Client{QPS: 100, Burst: 200, ContentType: spec.ContentProtobuf, UserAgent: "my-bench/1"},
				Target:      spec.Target{Kind: spec.TargetLocal, Storage: spec.StorageMemory, ControlPlaneBin: "/opt/kb/bin"},
				Keep:        true,
				Settings: map[string]any{
					"objects": 3, "objectSize": 2048, "distribution": "hotspot", "hotFraction": 0.2, "hotShare": 0.8, "fields": "disjoint",
				},
			},
		}},
		{"valid-zipf.yaml", Profile{Name: "zipf", Spec: spec.Spec{
			Strategy:  spec.StrategyPatch,
			PatchType: spec.PatchJSON,
			ThinkTime: spec.D(20 * time.Millisecond),
			Settings:  map[string]any{"objects": 50, "distribution": "zipf", "zipfExponent": 1.5},
		}}},
		{"valid-ssa.yaml", Profile{Name: "ssa", Spec: spec.Spec{
			Strategy: spec.StrategySSA, FieldManager: spec.ManagerShared, Force: true, Operations: 100,
		}}},
		{"valid-quota.yaml", Profile{Name: "quota", Spec: spec.Spec{
			Scenario: "quota", Writers: 4, Rate: 100,
			Settings: map[string]any{"resource": "requests.nvidia.com/gpu", "hard": 7},
		}}},
		{"valid-controller-status.yaml", Profile{Name: "cs", Spec: spec.Spec{
			Scenario: "controller-status", Strategy: spec.StrategyPatch, PatchType: spec.PatchStrategic,
			Settings: map[string]any{"controllers": 2, "objectsPerController": 1, "sharedObjects": 3},
		}}},
		{"valid-leader-election.yaml", Profile{Name: "le", Spec: spec.Spec{
			Scenario: "leader-election",
			Writers:  3,
			Settings: map[string]any{
				"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s", "failoverEvery": "2s", "releaseOnCancel": true,
			},
		}}},
		// The loader checks a resolved copy; the raw spec must keep the
		// unset fields unset (the backoff pointer, the settings the
		// scenario defaults) so flags can still fill them.
		{"valid-partial-pointers.yaml", Profile{
			Name:        "partial",
			Description: "Only the strategy and the distribution set; the rest must stay unset in the raw spec.",
			Spec: spec.Spec{
				Strategy: spec.StrategyRetry,
				Settings: map[string]any{"distribution": "hotspot"},
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
			got, err := Load(t.Context(), filepath.Join("testdata", tt.file), resolve)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
			// What the loader accepted resolves: it checked that.
			s := got.Spec
			r, errs := workload.Resolve(s)
			if len(errs) > 0 {
				t.Errorf("loaded spec does not resolve:\n%s", spec.Describe(errs))
			}
			s = r.Spec
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

// Resolving the loaded spec fills in the defaults the raw spec left out,
// the scenario's settings included, without touching the profile.
func TestLoadThenResolve(t *testing.T) {
	p, err := Load(t.Context(), "testdata/valid-partial-pointers.yaml", resolve)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	r, errs := workload.Resolve(s)
	if len(errs) > 0 {
		t.Fatal(spec.Describe(errs))
	}
	s = r.Spec
	if s.Backoff == nil || *s.Backoff != spec.DefaultRetry {
		t.Errorf("resolved backoff %v, want default-retry", s.Backoff)
	}
	want := map[string]any{"objects": 1.0, "distribution": "hotspot", "hotFraction": 0.1, "hotShare": 0.9, "fields": "shared"}
	if !reflect.DeepEqual(s.Settings, want) {
		t.Errorf("resolved settings %v, want %v", s.Settings, want)
	}
	if p.Spec.Backoff != nil || !reflect.DeepEqual(p.Spec.Settings, map[string]any{"distribution": "hotspot"}) {
		t.Errorf("resolving a copy changed the profile: %+v", p.Spec)
	}
}

// locate points each error at the line of the deepest key of its path
// found in the spec: the key itself, else its closest parent, else only the
// file.
func TestLocate(t *testing.T) {
	data := []byte(`apiVersion: kb-bench.io/v1alpha1
kind: Profile
spec:
  writers: 4
  client:
    qps: 5
  settings:
    distribution: zipf
`)
	root, err := parseNode("p.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		err  *field.Error
		want string
	}{
		{field.Invalid(field.NewPath("writers"), 4, "x"), "p.yaml:4: spec.writers: Invalid value: 4: x"},
		{field.Invalid(field.NewPath("client", "qps"), 5, "x"), "p.yaml:6: spec.client.qps: Invalid value: 5: x"},
		{field.Invalid(field.NewPath("client", "burst"), 0, "x"), "p.yaml:5: spec.client.burst: Invalid value: 0: x"},
		{field.Forbidden(field.NewPath("settings", "distribution"), "x"), "p.yaml:8: spec.settings.distribution: Forbidden: x"},
		{field.Invalid(field.NewPath("settings", "zipfExponent"), 1, "x"), "p.yaml:7: spec.settings.zipfExponent: Invalid value: 1: x"},
		{field.Required(field.NewPath("duration"), "x"), "p.yaml: spec.duration: Required value: x"},
		{field.Forbidden(field.NewPath("target", "storage"), "x"), "p.yaml: spec.target.storage: Forbidden: x"},
	}
	for _, tt := range tests {
		t.Run(tt.err.Field, func(t *testing.T) {
			if got := locate("p.yaml", lookup(root, "spec"), field.ErrorList{tt.err}).Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// A profile without a spec has no lines to point at.
	if got := locate("p.yaml", nil, field.ErrorList{field.Required(field.NewPath("duration"), "x")}).Error(); got != "p.yaml: spec.duration: Required value: x" {
		t.Errorf("without a spec: got %s", got)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(t.Context(), "testdata/no-such-profile.yaml", resolve)
	if err == nil || !spec.IsInput(err) {
		t.Fatalf("Load of a missing file: got %v, want an input error", err)
	}
	if !strings.Contains(err.Error(), "testdata/no-such-profile.yaml") {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestShipped(t *testing.T) {
	want := []string{"controller-status", "counter", "custom-resource", "deployment-status", "hot-key", "informer", "leader-election", "lease-renewal", "quota", "regional", "slow-disk", "ssa-disjoint", "ssa-shared"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	scenario := map[string]string{
		"controller-status": "controller-status",
		"counter":           "counter",
		"custom-resource":   "counter",
		"deployment-status": "counter",
		"hot-key":           "counter",
		"informer":          "counter",
		"lease-renewal":     "counter",
		"leader-election":   "leader-election",
		"quota":             "quota",
		"regional":          "counter",
		"slow-disk":         "counter",
		"ssa-disjoint":      "counter",
		"ssa-shared":        "counter",
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			p, err := Shipped(name, resolve)
			if err != nil {
				t.Fatalf("Shipped: %v", err)
			}
			if p.Name != name {
				t.Errorf("name is %q, want the file's name %q", p.Name, name)
			}
			if p.Description == "" || strings.Contains(p.Description, "\n") {
				t.Errorf("description %q must be one non-empty line", p.Description)
			}
			// Shipped profiles name their scenario: they do not rely on
			// the default.
			if p.Spec.Scenario != scenario[name] {
				t.Errorf("scenario is %q, want %q", p.Spec.Scenario, scenario[name])
			}
			s := p.Spec
			r, errs := workload.Resolve(s)
			if len(errs) > 0 {
				t.Errorf("spec does not resolve:\n%s", spec.Describe(errs))
			}
			s = r.Spec
			// Shipped profiles run as shipped, so they must stay short.
			if s.Duration.Duration == 0 || s.Duration.Duration > 10*time.Second {
				t.Errorf("duration is %s, want a short bound (at most 10s)", s.Duration)
			}
			data, err := ShippedYAML(name)
			if err != nil {
				t.Fatalf("ShippedYAML: %v", err)
			}
			again, err := Parse("x.yaml", data, resolve)
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Errorf("ShippedYAML does not parse back to the same profile: %v", err)
			}
		})
	}
}

func TestShippedSettings(t *testing.T) {
	// The checks read the resolved spec, as a result records it: the
	// scenario's settings as plain data (numbers are float64).
	tests := []struct {
		name  string
		check func(s spec.Spec, set map[string]any) bool
	}{
		{"counter", func(s spec.Spec, set map[string]any) bool {
			return s.Writers == 8 && s.Strategy == spec.StrategyUpdate && set["objects"] == 1.0 && set["fields"] == "shared"
		}},
		{"hot-key", func(s spec.Spec, set map[string]any) bool {
			e, ok := set["zipfExponent"].(float64)
			return set["objects"] == 100.0 && set["distribution"] == "zipf" && ok && e > 1
		}},
		{"informer", func(s spec.Spec, set map[string]any) bool {
			return s.Read == spec.ReadInformer && s.Watchers == 4 && s.Clients == 2 && s.Strategy == spec.StrategyUpdate
		}},
		{"ssa-disjoint", func(s spec.Spec, set map[string]any) bool {
			return s.Strategy == spec.StrategySSA && set["fields"] == "disjoint" && s.FieldManager == spec.ManagerPerWriter
		}},
		{"ssa-shared", func(s spec.Spec, set map[string]any) bool {
			return s.Strategy == spec.StrategySSA && set["fields"] == "shared" && s.FieldManager == spec.ManagerPerWriter && !s.Force
		}},
		{"leader-election", func(s spec.Spec, set map[string]any) bool {
			every, _ := set["failoverEvery"].(string)
			d, err := time.ParseDuration(every)
			return s.Writers == 5 && s.Strategy == "" && s.Rate == 0 && err == nil && d > 0
		}},
		{"quota", func(s spec.Spec, set map[string]any) bool {
			return s.Writers == 16 && s.Strategy == "" && set["resource"] == "count/configmaps" && set["hard"] == 50.0
		}},
		{"regional", func(s spec.Spec, set map[string]any) bool {
			return s.Target.APIServers == 3 && s.Clients == 3 && s.Client.Latency.Duration == time.Millisecond && s.Target.EtcdLatency.Duration == 2*time.Millisecond && s.Strategy == spec.StrategyUpdate
		}},
		{"slow-disk", func(s spec.Spec, set map[string]any) bool {
			return s.Target.EtcdLatency.Duration == 10*time.Millisecond && s.Target.APIServerCount() == 1 && s.Strategy == spec.StrategyUpdate
		}},
		{"custom-resource", func(s spec.Spec, set map[string]any) bool {
			m, _ := set["manifest"].(string)
			return set["subresource"] == "status" && set["fieldPath"] == ".status.count" &&
				strings.Contains(m, "kind: CustomResourceDefinition") && strings.Contains(m, "x-kubernetes-validations")
		}},
		{"deployment-status", func(s spec.Spec, set map[string]any) bool {
			m, _ := set["manifest"].(string)
			return s.Writers > 1 && set["subresource"] == "status" && strings.Contains(m, "kind: Deployment")
		}},
		{"lease-renewal", func(s spec.Spec, set map[string]any) bool {
			m, _ := set["manifest"].(string)
			return s.Writers == 100 && set["objects"] == 100.0 && set["writersPerObject"] == 1.0 && s.ThinkTime.Duration > 0 && strings.Contains(m, "kind: Lease")
		}},
		{"controller-status", func(s spec.Spec, set map[string]any) bool {
			c, _ := set["controllers"].(float64)
			own, _ := set["objectsPerController"].(float64)
			shared, _ := set["sharedObjects"].(float64)
			return c > 1 && own > 0 && shared > 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Shipped(tt.name, resolve)
			if err != nil {
				t.Fatal(err)
			}
			s := p.Spec
			r, errs := workload.Resolve(s)
			if len(errs) > 0 {
				t.Fatal(spec.Describe(errs))
			}
			s = r.Spec
			if !tt.check(s, s.Settings) {
				t.Errorf("profile %s does not say what its name promises: %+v", tt.name, s)
			}
		})
	}
}

func TestShippedUnknown(t *testing.T) {
	for _, get := range []func(string) error{
		func(n string) error { _, err := Shipped(n, resolve); return err },
		func(n string) error { _, err := ShippedYAML(n); return err },
	} {
		err := get("countr")
		want := `no shipped profile is called "countr": use one of controller-status, counter, custom-resource, deployment-status, hot-key, informer, leader-election, lease-renewal, quota, regional, slow-disk, ssa-disjoint, ssa-shared (kb-bench profiles list)`
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
		{"patch_type", "patchType"},
		{"max-in-flight", "maxInFlight"},
		{"setings", "settings"},
		{"Settings", "settings"},
		{"warmpu", "warmup"},
		// Moved into settings: no longer a field of spec.
		{"objects", ""},
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
