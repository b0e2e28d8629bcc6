package quota

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

func TestSettingsDefault(t *testing.T) {
	var set Settings
	set.Default(nil)
	if want := (Settings{Resource: ResourceConfigMaps, Hard: 50}); set != want {
		t.Errorf("defaults %+v, want %+v", set, want)
	}
	set = Settings{Resource: ResourceGPU, Hard: 3}
	set.Default(nil)
	if want := (Settings{Resource: ResourceGPU, Hard: 3}); set != want {
		t.Errorf("defaulted %+v, want %+v: values that were set must stay", set, want)
	}
}

func TestSettingsValidate(t *testing.T) {
	tests := []struct {
		name string
		set  Settings
		want map[string]string // field path -> part of the message
	}{
		{"configmaps", Settings{Resource: ResourceConfigMaps, Hard: 1, ObjectSize: scenario.MaxObjectSize}, nil},
		{"gpu", Settings{Resource: ResourceGPU, Hard: 50}, nil},
		{"unsupported resource", Settings{Resource: "count/secrets", Hard: 50},
			map[string]string{"settings.resource": "--quota-resource"}},
		{"negative hard", Settings{Resource: ResourceConfigMaps, Hard: -1},
			map[string]string{"settings.hard": "use at least 1 (--quota-hard)"}},
		{"object too big", Settings{Resource: ResourceConfigMaps, Hard: 50, ObjectSize: scenario.MaxObjectSize + 1},
			map[string]string{"settings.objectSize": "use 0 to 921600 bytes (--object-size)"}},
		{"filler on Pods", Settings{Resource: ResourceGPU, Hard: 50, ObjectSize: 10},
			map[string]string{"settings.objectSize": "drop --object-size"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.set.Validate(&spec.Spec{}, field.NewPath("settings"))
			got := map[string]string{}
			for _, e := range errs {
				got[e.Field] = e.Error()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("errors %v, want errors at %v", errs, tt.want)
			}
			for path, part := range tt.want {
				if !strings.Contains(got[path], part) {
					t.Errorf("error at %s: %q, want it to say %q", path, got[path], part)
				}
			}
		})
	}
}

func TestSharedSettingsRefused(t *testing.T) {
	s := spec.Spec{Strategy: spec.StrategyRetry}
	s.Defaults(Definition.Traits())
	errs := s.Validate(Definition.Traits())
	if len(errs) != 1 || errs[0].Field != "strategy" {
		t.Errorf("errors %v, want strategy refused: the quota scenario has no write strategies", errs)
	}
	s = spec.Spec{Rate: 100}
	s.Defaults(Definition.Traits())
	if errs := s.Validate(Definition.Traits()); len(errs) > 0 {
		t.Errorf("errors %v for an open loop, want none: the scenario is driven", errs)
	}
	set := Settings{Resource: ResourceConfigMaps, Hard: 50, ObjectSize: 1024}
	s.MaxInFlight = 3
	if got, want := set.Describe(&s), "3 writers creating ConfigMaps under a ResourceQuota of count/configmaps=50, 1024 B filler"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name   string
		rep    Report
		passed [3]bool
	}{
		{"full and consistent", Report{Hard: 10, InitialUsed: 2, Admitted: 8, ExistingAtEnd: 10, UsedAtEnd: 10}, [3]bool{true, true, true}},
		{"not full", Report{Hard: 10, Admitted: 3, ExistingAtEnd: 3, UsedAtEnd: 3}, [3]bool{true, true, true}},
		{"over-admitted by creates", Report{Hard: 10, InitialUsed: 1, Admitted: 10, ExistingAtEnd: 11, UsedAtEnd: 11}, [3]bool{false, false, true}},
		{"timed-out create exists beyond hard", Report{Hard: 10, Admitted: 10, ExistingAtEnd: 11, UsedAtEnd: 10}, [3]bool{true, false, false}},
		{"used drifted above what exists", Report{Hard: 10, Admitted: 9, ExistingAtEnd: 9, UsedAtEnd: 10}, [3]bool{true, true, false}},
		{"end not read", Report{Hard: 10, Admitted: 9, EndError: "connection refused"}, [3]bool{true, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := tt.rep.Checks()
			if len(cs) != 3 {
				t.Fatalf("%d checks, want 3", len(cs))
			}
			for i, c := range cs {
				if c.Passed != tt.passed[i] {
					t.Errorf("%s: passed = %t, want %t (%+v)", c.Name, c.Passed, tt.passed[i], c)
				}
				if !c.Passed && c.Detail == "" {
					t.Errorf("%s failed without a detail", c.Name)
				}
				if c.Lost != 0 {
					t.Errorf("%s counts %d lost updates: the quota checks find none", c.Name, c.Lost)
				}
			}
		})
	}
}

// The report's figures say what the summary said: the creates by answer,
// when the quota filled, the end state when it was read, the latencies by
// quantile when there were some; each validates as a Result's.
func TestFigures(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	full := &Report{Resource: ResourceConfigMaps, Hard: 50, Writers: 8, StatusInitialized: true,
		Creates: 1200, Admitted: 50, Rejected: 1149, Errors: 1, FullAt: ms(180), ExistingAtEnd: 50, UsedAtEnd: 50,
		AdmittedLatency: results.Latency{P50: ms(4), P90: ms(10), P99: ms(21), P999: ms(29), Max: ms(30)},
		RejectedLatency: results.Latency{P50: ms(0.9), P90: ms(2), P99: ms(3), P999: ms(4), Max: ms(5)}}
	notRead := &Report{Resource: ResourceGPU, Hard: 1000, Writers: 1, InitialUsed: 3,
		Creates: 20, Admitted: 20, EndError: "connection refused",
		AdmittedLatency: results.Latency{P50: ms(6), P90: ms(7), P99: ms(150), P999: ms(151), Max: ms(151)}}
	counts := func(resource, hard, creates, admitted, rejected, conflicts, errors, writers, initial string) []string {
		return []string{fmt.Sprintf("hard{resource=%q} %s", resource, hard), "creates " + creates, "admitted " + admitted, "rejected " + rejected,
			"conflicts " + conflicts, "errors " + errors, "writers " + writers, "initialUsed " + initial}
	}
	tests := []struct {
		name string
		rep  *Report
		want []string
	}{
		{"full", full, append(counts("count/configmaps", "50", "1200", "50", "1149", "0", "1", "8", "0"),
			"statusInitialized 1", "fullAt 180ms", "existingAtEnd 50", "usedAtEnd 50",
			`admittedLatency{quantile="0.5"} 4ms`, `admittedLatency{quantile="0.9"} 10ms`, `admittedLatency{quantile="0.99"} 21ms`,
			`admittedLatency{quantile="0.999"} 29ms`, `admittedLatency{quantile="1"} 30ms`,
			`rejectedLatency{quantile="0.5"} 900µs`, `rejectedLatency{quantile="0.9"} 2ms`, `rejectedLatency{quantile="0.99"} 3ms`,
			`rejectedLatency{quantile="0.999"} 4ms`, `rejectedLatency{quantile="1"} 5ms`)},
		// Not full: no fullAt; the end not read: no end state; no
		// rejection: no rejected latency.
		{"end not read", notRead, append(counts("requests.nvidia.com/gpu", "1000", "20", "20", "0", "0", "0", "1", "3"),
			`admittedLatency{quantile="0.5"} 6ms`, `admittedLatency{quantile="0.9"} 7ms`, `admittedLatency{quantile="0.99"} 150ms`,
			`admittedLatency{quantile="0.999"} 151ms`, `admittedLatency{quantile="1"} 151ms`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range tt.rep.Figures() {
				v := fmt.Sprint(f.Value)
				if f.Unit == results.UnitDuration {
					v = time.Duration(f.Value).String()
				}
				got = append(got, f.Key()+" "+v)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("figures\n%q\nwant\n%q", got, tt.want)
			}
			if errs := results.ValidateFigures(field.NewPath("figures"), tt.rep.Figures()); len(errs) > 0 {
				t.Errorf("the figures do not validate: %v", errs)
			}
		})
	}
}

// fakeAPI answers the n-th create (from 0) with answer(n), keeps the
// names created, and answers every read with a 500. It imitates no
// apiserver semantics: what the apiserver does is tested against the real
// one (integration_test.go).
type fakeAPI struct {
	t      testing.TB
	answer func(n int) (int, []byte)

	mu    sync.Mutex
	names []string
}

func (f *fakeAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		return f.respond(r, http.StatusInternalServerError, statusBody(f.t, 500, metav1.StatusReasonInternalError, "etcd is down"))
	}
	var cm corev1.ConfigMap
	if err := json.NewDecoder(r.Body).Decode(&cm); err != nil {
		f.t.Errorf("%s %s: reading the body: %v", r.Method, r.URL.Path, err)
	}
	r.Body.Close()
	f.mu.Lock()
	code, body := f.answer(len(f.names))
	f.names = append(f.names, cm.Name)
	f.mu.Unlock()
	return f.respond(r, code, body)
}

func (f *fakeAPI) respond(r *http.Request, code int, body []byte) (*http.Response, error) {
	return &http.Response{
		StatusCode: code,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    r,
	}, nil
}

// statusBody is the JSON of a metav1.Status error answer.
func statusBody(t testing.TB, code int32, reason metav1.StatusReason, message string) []byte {
	t.Helper()
	b, err := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: message,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each create is one operation of one write attempt, named after its
// writer; the quota's 403 is a failed precondition, any other 403 an error.
func TestDoRecordsEachCreate(t *testing.T) {
	created, err := json.Marshal(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}})
	if err != nil {
		t.Fatal(err)
	}
	answers := []struct {
		code int
		body []byte
	}{
		{http.StatusCreated, created},
		{http.StatusForbidden, statusBody(t, 403, metav1.StatusReasonForbidden, `configmaps "w0-1" is forbidden: exceeded quota: kb-bench-quota, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1`)},
		{http.StatusConflict, statusBody(t, 409, metav1.StatusReasonConflict, "conflict")},
		{http.StatusForbidden, statusBody(t, 403, metav1.StatusReasonForbidden, `configmaps is forbidden: User "x" cannot create resource "configmaps"`)},
		{http.StatusInternalServerError, statusBody(t, 500, metav1.StatusReasonInternalError, "etcd is down")},
	}
	f := &fakeAPI{t: t, answer: func(n int) (int, []byte) { return answers[n].code, answers[n].body }}
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: "http://fake.invalid", Transport: f, QPS: -1,
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Spec{Writers: 2}
	s.Defaults(Definition.Traits())
	set := &Settings{}
	set.Default(&s)
	var warnings []string
	env := &scenario.Env{Spec: s, RunID: "test", Namespace: "kb-bench-test", Clients: []kubernetes.Interface{kube}, Admin: kube, Log: io.Discard,
		Warn: func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }}
	r := newQuota(env, set)
	start := time.Now()
	env.Recorder = metrics.NewRecorder(start, metrics.DefaultStripes(r.Workers()), false)
	r.measures = env.Measurers(r.Workers(), classify)

	for _, w := range []int{0, 0, 1, 0, 1} {
		r.Do(w, time.Now())
	}
	if want := []string{"w0-0", "w0-1", "w1-0", "w0-2", "w1-1"}; !slices.Equal(f.names, want) {
		t.Errorf("created %v, want %v: each writer numbers its own objects", f.names, want)
	}

	// The end cannot be read back: the figures stand, the end-state
	// checks fail and say why.
	rep, err := r.Finish(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	q := rep.(*Report)
	if len(warnings) != 1 || !strings.Contains(warnings[0], "were not checked") {
		t.Errorf("warnings %q, want one that the end was not checked", warnings)
	}
	if cs := q.Checks(); !cs[0].Passed || cs[1].Passed || cs[2].Passed || !strings.Contains(cs[2].Detail, "etcd is down") {
		t.Errorf("checks %+v: want creates within hard, the end-state checks failed with the reason", cs)
	}
	if q.Creates != 5 || q.Admitted != 1 || q.Rejected != 1 || q.Conflicts != 1 || q.Errors != 2 {
		t.Errorf("creates %d: admitted %d, rejected %d, conflicts %d, errors %d; want 5: 1, 1, 1, 2",
			q.Creates, q.Admitted, q.Rejected, q.Conflicts, q.Errors)
	}
	if q.FullAt <= 0 || q.FullAt > time.Since(start) {
		t.Errorf("full after %s, want the time of the rejection after the first create", q.FullAt)
	}
	if q.AdmittedLatency.Max == 0 || q.RejectedLatency.Max == 0 {
		t.Errorf("latencies admitted %+v, rejected %+v: want one of each", q.AdmittedLatency, q.RejectedLatency)
	}

	snap := env.Recorder.Snapshot(time.Now())
	want := map[metrics.Outcome]int64{metrics.Success: 1, metrics.FailedPrecondition: 1, metrics.VersionConflict: 1, metrics.Other: 1, metrics.ServerError: 1}
	for o, n := range want {
		if snap.Outcomes[o] != n {
			t.Errorf("%d operations %s, want %d", snap.Outcomes[o], o, n)
		}
	}
	if snap.Ops != 5 || len(snap.Attempts) != 2 || snap.Attempts[1] != 5 {
		t.Errorf("%d ops, attempts per op %v: want 5 ops of one attempt each", snap.Ops, snap.Attempts)
	}
}
