package controllerstatus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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
	if want := (Settings{Controllers: 4, ObjectsPerController: 10, SharedObjects: 2}); set != want {
		t.Errorf("defaults %+v, want %+v", set, want)
	}
	set = Settings{Controllers: 3, SharedObjects: 5}
	set.Default(nil)
	if want := (Settings{Controllers: 3, ObjectsPerController: 10, SharedObjects: 5}); set != want {
		t.Errorf("defaulted %+v, want %+v: values that were set must stay", set, want)
	}
}

func TestSettingsValidate(t *testing.T) {
	good := Settings{Controllers: 4, ObjectsPerController: 10, SharedObjects: 2}
	tests := []struct {
		name string
		set  Settings
		spec func(s *spec.Spec)
		want map[string]string // field path -> part of the message
	}{
		{"defaults", good, func(*spec.Spec) {}, nil},
		{"no controller", Settings{ObjectsPerController: 1}, func(*spec.Spec) {},
			map[string]string{"settings.controllers": "use at least 1 (--controllers)"}},
		{"negative counts", Settings{Controllers: 1, ObjectsPerController: -1, SharedObjects: -2}, func(*spec.Spec) {},
			map[string]string{"settings.objectsPerController": "--objects-per-controller", "settings.sharedObjects": "--shared-objects"}},
		{"no Pods", Settings{Controllers: 1}, func(*spec.Spec) {},
			map[string]string{"settings.objectsPerController": "need at least one Pod"}},
		{"only shared Pods", Settings{Controllers: 2, SharedObjects: 1}, func(*spec.Spec) {}, nil},
		{"json patch", good, func(s *spec.Spec) { s.Strategy, s.PatchType = spec.StrategyPatch, spec.PatchJSON },
			map[string]string{"patchType": "a json patch cannot address: use --patch-type merge or strategic"}},
		{"strategic patch", good, func(s *spec.Spec) { s.Strategy, s.PatchType = spec.StrategyPatch, spec.PatchStrategic }, nil},
		{"open loop", good, func(s *spec.Spec) { s.Rate = 100 }, nil},
		{"max in flight", good, func(s *spec.Spec) { s.Rate, s.MaxInFlight = 100, 3 },
			map[string]string{"maxInFlight": "drop --max-in-flight"}},
		{"an informer", good, func(s *spec.Spec) { s.Read = spec.ReadInformer }, nil},
		{"watchers", good, func(s *spec.Spec) { s.Watchers = 2 }, map[string]string{"watchers": "drop --watchers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec.Spec{Writers: 8}
			tt.spec(&s)
			s.Defaults(Definition.Traits())
			errs := tt.set.Validate(&s, field.NewPath("settings"))
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

func TestLayout(t *testing.T) {
	newLayout := func(writers int) (*controllers, *strings.Builder) {
		s := spec.Spec{Writers: writers}
		s.Defaults(Definition.Traits())
		var log strings.Builder
		return newControllers(&scenario.Env{Spec: s, Log: &log}, &Settings{Controllers: 3, ObjectsPerController: 2, SharedObjects: 2}), &log
	}
	r, _ := newLayout(3)
	if len(r.objects) != 3*2+2 {
		t.Fatalf("%d Pods, want 8", len(r.objects))
	}
	for c, views := range r.views {
		if len(views) != 4 {
			t.Fatalf("controller %d writes %d Pods, want its 2 plus 2 shared", c, len(views))
		}
		for i, v := range views {
			wantShared := i >= 2
			if v.obj.shared != wantShared {
				t.Errorf("controller %d view %d (%s): shared %t, want %t", c, i, v.obj.name, v.obj.shared, wantShared)
			}
			if wantShared && v.obj != r.views[0][i].obj {
				t.Errorf("controller %d's shared Pod %s is not controller 0's", c, v.obj.name)
			}
			if !wantShared && !strings.HasPrefix(v.obj.name, fmt.Sprintf("controller-%d-", c)) {
				t.Errorf("controller %d owns %s", c, v.obj.name)
			}
		}
	}

	// Three workers per controller split its four Pods as a work queue
	// would: each Pod has one worker.
	names := func(wk *worker) []string {
		var n []string
		for _, v := range wk.views {
			n = append(n, v.obj.name)
		}
		return n
	}
	if r.Workers() != 9 {
		t.Fatalf("%d workers, want 3 controllers x 3", r.Workers())
	}
	want := [][]string{{"controller-1-pod-0", "shared-1"}, {"controller-1-pod-1"}, {"shared-0"}}
	for w, names0 := range want {
		wk := r.workers[3+w]
		if got := names(wk); wk.c != 1 || !slices.Equal(got, names0) {
			t.Errorf("worker %d: controller %d, Pods %v; want controller 1, Pods %v", 3+w, wk.c, got, names0)
		}
	}

	// More writers than Pods: one worker per Pod, none without work.
	r, log := newLayout(6)
	if r.Workers() != 3*4 {
		t.Errorf("%d workers with 6 writers for 4 Pods each, want 3 x 4", r.Workers())
	}
	for w, wk := range r.workers {
		if len(wk.views) != 1 {
			t.Errorf("worker %d has %d Pods, want 1", w, len(wk.views))
		}
	}
	if !strings.Contains(log.String(), "4 workers per controller run") {
		t.Errorf("no note that only 4 of 6 workers per controller run: %q", log.String())
	}
	s := r.env.Spec
	if got, want := (&Settings{Controllers: 3, ObjectsPerController: 2, SharedObjects: 2}).Describe(&s), "3 controllers x 4 workers, 2 owned Pods each, 2 shared"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

// fakeAPI answers GETs with a Pod and status writes with write(n), n
// counting the writes from 0. It imitates no apiserver semantics: what
// the apiserver does is tested against the real one.
type fakeAPI struct {
	t     testing.TB
	write func(n int) (int, []byte)

	mu           sync.Mutex
	gets, writes int
}

func (f *fakeAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	code, body := http.StatusOK, cannedPod(f.t, "100")
	if r.Method == http.MethodGet {
		f.gets++
	} else {
		code, body = f.write(f.writes)
		f.writes++
	}
	return &http.Response{
		StatusCode: code,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    r,
	}, nil
}

// cannedPod is the JSON of a Pod at resourceVersion rv.
func cannedPod(t testing.TB, rv string) []byte {
	t.Helper()
	b, err := json.Marshal(corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "controller-0-pod-0", Namespace: "kb-bench-test", ResourceVersion: rv},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// statusBody is the JSON of a metav1.Status error answer.
func statusBody(t testing.TB, code int32, reason metav1.StatusReason) []byte {
	t.Helper()
	b, err := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: string(reason),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeRun is a run of one controller with one owned and one shared Pod
// and two workers (worker 0 has the owned Pod), over f, with its caches
// primed as Setup leaves them.
func fakeRun(t testing.TB, s spec.Spec, f *fakeAPI) (*controllers, *metrics.Recorder) {
	t.Helper()
	s.Writers = 2
	s.Defaults(Definition.Traits())
	set := &Settings{Controllers: 1, ObjectsPerController: 1, SharedObjects: 1}
	if errs := append(s.Validate(Definition.Traits()), set.Validate(&s, field.NewPath("settings"))...); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: "http://fake.invalid", Transport: f, QPS: -1,
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	env := &scenario.Env{Spec: s, RunID: "test", Namespace: "kb-bench-test", Clients: []kubernetes.Interface{kube}, Admin: kube, Log: io.Discard}
	r := newControllers(env, set)
	rec := metrics.NewRecorder(time.Now(), metrics.DefaultStripes(r.Workers()), false)
	env.Recorder = rec
	var pod corev1.Pod
	if err := json.Unmarshal(cannedPod(t, "1"), &pod); err != nil {
		t.Fatal(err)
	}
	for _, v := range r.views[0] {
		v.cached = pod.DeepCopy()
	}
	r.measures = env.Measurers(r.Workers(), nil)
	return r, rec
}

// Every write attempt is counted, and a 409 makes the controller read the
// Pod again before its next write: at once with retry, at the next
// reconcile with update.
func TestReconcileCountsAttemptsAndRereadsOnConflict(t *testing.T) {
	conflict := statusBody(t, http.StatusConflict, metav1.StatusReasonConflict)
	conflicts := func(n int) func(int) (int, []byte) {
		return func(i int) (int, []byte) {
			if i < n {
				return http.StatusConflict, conflict
			}
			return http.StatusOK, cannedPod(t, "200")
		}
	}
	backoff := func(s string) *spec.Backoff {
		b, err := spec.ParseBackoff(s)
		if err != nil {
			t.Fatal(err)
		}
		return &b
	}
	tests := []struct {
		name         string
		spec         spec.Spec
		write        func(int) (int, []byte)
		reconciles   int
		wantAttempts []int64 // ops by number of write attempts
		wantGets     int
		wantOutcomes map[metrics.Outcome]int64
		wantGaveUp   int64
	}{
		{"retry succeeds on the third attempt", spec.Spec{Strategy: spec.StrategyRetry, Backoff: backoff("5,1ms,1,0")}, conflicts(2),
			1, []int64{0, 0, 0, 1}, 2, map[metrics.Outcome]int64{metrics.Success: 1}, 0},
		{"retry runs out of steps", spec.Spec{Strategy: spec.StrategyRetry, Backoff: backoff("3,1ms,1,0")}, conflicts(100),
			1, []int64{0, 0, 0, 1}, 2, map[metrics.Outcome]int64{metrics.VersionConflict: 1}, 1},
		{"update: a 409 ends the reconcile, the next one re-reads", spec.Spec{Strategy: spec.StrategyUpdate}, conflicts(1),
			2, []int64{0, 2}, 1, map[metrics.Outcome]int64{metrics.VersionConflict: 1, metrics.Success: 1}, 0},
		{"patch without precondition never reads", spec.Spec{Strategy: spec.StrategyPatch}, conflicts(0),
			2, []int64{0, 2}, 0, map[metrics.Outcome]int64{metrics.Success: 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{t: t, write: tt.write}
			r, rec := fakeRun(t, tt.spec, f)
			for range tt.reconciles {
				r.Do(0, time.Now())
			}
			snap := rec.Snapshot(time.Now())
			if !slices.Equal(snap.Attempts, tt.wantAttempts) {
				t.Errorf("ops by write attempts %v, want %v", snap.Attempts, tt.wantAttempts)
			}
			if f.gets != tt.wantGets || snap.AttemptOutcomes[metrics.Read][metrics.Success] != int64(tt.wantGets) {
				t.Errorf("%d reads sent, %d recorded; want %d", f.gets, snap.AttemptOutcomes[metrics.Read][metrics.Success], tt.wantGets)
			}
			for o, n := range tt.wantOutcomes {
				if snap.Outcomes[o] != n {
					t.Errorf("outcomes %v, want %d %s", snap.Outcomes, n, o)
				}
			}
			if snap.GaveUp != tt.wantGaveUp {
				t.Errorf("%d ops gave up, want %d", snap.GaveUp, tt.wantGaveUp)
			}
			conflicts := snap.AttemptOutcomes[metrics.Write][metrics.VersionConflict]
			if w, c := r.tally.ownedWrites.Load(), r.tally.ownedConflicts.Load(); w != int64(f.writes) || c != conflicts {
				t.Errorf("owned tally %d writes, %d conflicts; sent %d writes, recorded %d conflicts", w, c, f.writes, conflicts)
			}
			if n := r.tally.sharedWrites.Load(); n != 0 {
				t.Errorf("%d writes counted on shared Pods, but worker 0 has only the owned one", n)
			}
		})
	}
}

// A write that may have landed (a 5xx) is unsure: the check accepts the
// Pod showing it or the last accepted write. One answered with a refusal
// is not.
func TestWritesOfUnknownFate(t *testing.T) {
	answers := map[int][]byte{
		http.StatusInternalServerError: statusBody(t, http.StatusInternalServerError, metav1.StatusReasonInternalError),
		http.StatusForbidden:           statusBody(t, http.StatusForbidden, metav1.StatusReasonForbidden),
	}
	for code, unsure := range map[int]bool{http.StatusInternalServerError: true, http.StatusForbidden: false} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			f := &fakeAPI{t: t, write: func(n int) (int, []byte) {
				if n == 0 {
					return http.StatusOK, cannedPod(t, "200")
				}
				return code, answers[code]
			}}
			r, _ := fakeRun(t, spec.Spec{Strategy: spec.StrategyUpdate}, f)
			r.Do(0, time.Now())
			r.Do(0, time.Now())
			v := r.views[0][0]
			if v.lastOK != 1 || v.seq != 2 || v.cached != nil {
				t.Fatalf("view after a success and a %d: lastOK %d seq %d cached %v; want 1, 2 and a re-read due", code, v.lastOK, v.seq, v.cached != nil)
			}
			if got := slices.Equal(v.unsure, []int64{2}); got != unsure {
				t.Errorf("unsure writes %v after a %d, want the second one unsure: %t", v.unsure, code, unsure)
			}
		})
	}
}

func TestConditionPatch(t *testing.T) {
	cond := corev1.PodCondition{Type: conditionType(2), Status: corev1.ConditionTrue, Reason: conditionReason, Message: message(7)}
	tests := []struct {
		name string
		rv   string
		want string
	}{
		{"plain", "", `{"status":{"conditions":[{"type":"kb-bench.io/controller-2","status":"True","reason":"Reconciled","message":"write 7"}]}}`},
		{"with resourceVersion", "42", `{"metadata":{"resourceVersion":"42"},"status":{"conditions":[{"type":"kb-bench.io/controller-2","status":"True","reason":"Reconciled","message":"write 7"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := conditionPatch(cond, tt.rv)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tt.want {
				t.Errorf("patch\n%s\nwant\n%s", body, tt.want)
			}
			if !json.Valid(body) {
				t.Errorf("not JSON")
			}
		})
	}
}

func TestSetConditionAndSeqOf(t *testing.T) {
	var pod corev1.Pod
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}
	setCondition(&pod.Status, corev1.PodCondition{Type: conditionType(0), Message: message(1)})
	setCondition(&pod.Status, corev1.PodCondition{Type: conditionType(1), Message: message(5)})
	setCondition(&pod.Status, corev1.PodCondition{Type: conditionType(0), Message: message(3)})
	if n := len(pod.Status.Conditions); n != 3 {
		t.Fatalf("%d conditions, want 3 (one per type)", n)
	}
	tests := []struct {
		c    int
		want int64
	}{{0, 3}, {1, 5}, {2, 0}}
	for _, tt := range tests {
		if got := seqOf(&pod, tt.c); got != tt.want {
			t.Errorf("seqOf(controller %d) = %d, want %d", tt.c, got, tt.want)
		}
	}
	pod.Status.Conditions[1].Message = "edited by hand"
	if got := seqOf(&pod, 0); got != 0 {
		t.Errorf("seqOf of an unreadable message = %d, want 0", got)
	}
}

func TestJudge(t *testing.T) {
	owned0 := &object{name: "controller-0-pod-0"}
	owned1 := &object{name: "controller-1-pod-0"}
	shared := &object{name: "shared-0", shared: true}
	podWith := func(name string, seqs map[int]int64) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name = name
		for c, n := range seqs {
			setCondition(&p.Status, corev1.PodCondition{Type: conditionType(c), Message: message(n)})
		}
		return p
	}
	views := func(ok0, ok1, sh0, sh1 *view) [][]*view {
		ok0.obj, ok1.obj, sh0.obj, sh1.obj = owned0, owned1, shared, shared
		return [][]*view{{ok0, sh0}, {ok1, sh1}}
	}
	tests := []struct {
		name  string
		views [][]*view
		pods  []*corev1.Pod
		want  []results.Check
	}{
		{
			name:  "everything holds",
			views: views(&view{lastOK: 4}, &view{lastOK: 2}, &view{lastOK: 9}, &view{lastOK: 7}),
			pods:  []*corev1.Pod{podWith("controller-0-pod-0", map[int]int64{0: 4}), podWith("controller-1-pod-0", map[int]int64{1: 2}), podWith("shared-0", map[int]int64{0: 9, 1: 7})},
			want: []results.Check{
				{Name: "controller status: controller-0's own Pods hold its last status", Passed: true, Expected: 1, Observed: 1},
				{Name: "controller status: controller-1's own Pods hold its last status", Passed: true, Expected: 1, Observed: 1},
				{Name: "controller status: shared Pod shared-0 holds every controller's last status", Passed: true, Expected: 2, Observed: 2},
			},
		},
		{
			name: "a write of unknown fate may show; nothing written shows nothing",
			// Controller 1 never got a write through on its Pod.
			views: views(&view{lastOK: 4, unsure: []int64{5, 6}}, &view{}, &view{lastOK: 9}, &view{lastOK: 7}),
			pods:  []*corev1.Pod{podWith("controller-0-pod-0", map[int]int64{0: 6}), podWith("controller-1-pod-0", nil), podWith("shared-0", map[int]int64{0: 9, 1: 7})},
			want: []results.Check{
				{Name: "controller status: controller-0's own Pods hold its last status", Passed: true, Expected: 1, Observed: 1},
				{Name: "controller status: controller-1's own Pods hold its last status", Passed: true, Expected: 1, Observed: 1},
				{Name: "controller status: shared Pod shared-0 holds every controller's last status", Passed: true, Expected: 2, Observed: 2},
			},
		},
		{
			name:  "lost updates",
			views: views(&view{lastOK: 4}, &view{lastOK: 2}, &view{lastOK: 9}, &view{lastOK: 7}),
			pods:  []*corev1.Pod{podWith("controller-0-pod-0", map[int]int64{0: 3}), podWith("shared-0", map[int]int64{1: 7})},
			want: []results.Check{
				{Name: "controller status: controller-0's own Pods hold its last status", Expected: 1, Lost: 1,
					Detail: `1 of 1 Pods lost their last status update; e.g. controller-0's condition on Pod controller-0-pod-0 says "write 3", but its last accepted write was "write 4"`},
				{Name: "controller status: controller-1's own Pods hold its last status", Expected: 1, Lost: 1,
					Detail: `1 of 1 Pods lost their last status update; e.g. Pod controller-1-pod-0 is gone, with controller-1's last accepted write "write 2"`},
				{Name: "controller status: shared Pod shared-0 holds every controller's last status", Expected: 2, Observed: 1, Lost: 1,
					Detail: `1 of 2 controllers lost their last status update; e.g. controller-0's condition on Pod shared-0 is missing, but its last accepted write was "write 9"`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := map[string]*corev1.Pod{}
			for _, p := range tt.pods {
				pods[p.Name] = p
			}
			got := judge(tt.views, pods)
			if len(got) != len(tt.want) {
				t.Fatalf("%d checks, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("check %d:\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// The report's figures are the writes and 409s on owned and on shared
// Pods, by a label, as a Result keeps them.
func TestReportFigures(t *testing.T) {
	r := &Report{OwnedWrites: 120, OwnedConflicts: 0, SharedWrites: 80, SharedConflicts: 31}
	got := map[string]float64{}
	for _, f := range r.Figures() {
		got[f.Key()] = f.Value
	}
	want := map[string]float64{`statusWrites{pods="owned"}`: 120, `statusConflicts{pods="owned"}`: 0, `statusWrites{pods="shared"}`: 80, `statusConflicts{pods="shared"}`: 31}
	if !maps.Equal(got, want) {
		t.Errorf("figures %v, want %v", got, want)
	}
	if errs := results.ValidateFigures(field.NewPath("figures"), r.Figures()); len(errs) > 0 {
		t.Errorf("the figures do not validate: %v", errs)
	}
}
