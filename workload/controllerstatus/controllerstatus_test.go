package controllerstatus

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

func TestCheck(t *testing.T) {
	clients := []kubernetes.Interface{fake.NewClientset()}
	defaulted := func(f func(s *spec.Spec)) spec.Spec {
		s := spec.Spec{Scenario: spec.ScenarioControllerStatus}
		f(&s)
		s.Defaults()
		return s
	}
	tests := []struct {
		name    string
		env     scenario.Env
		want    string // "" for no error
		isInput bool
	}{
		{"defaulted", scenario.Env{Clients: clients, Spec: defaulted(func(*spec.Spec) {})}, "", false},
		{"no controller settings", scenario.Env{Clients: clients, Spec: spec.Spec{}},
			"the controller-status scenario needs its controller settings: run with --scenario controller-status so they are defaulted", true},
		{"json patch", scenario.Env{Clients: clients, Spec: defaulted(func(s *spec.Spec) { s.Strategy, s.PatchType = spec.StrategyPatch, spec.PatchJSON })},
			"controller-status patches a condition in a list keyed by type, which a json patch cannot address: use --patch-type merge or strategic", true},
		{"no clients", scenario.Env{Spec: defaulted(func(*spec.Spec) {})},
			"controller status: the engine passed no clients (a bug in kb-bench: please report it)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(tt.env)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("check: %q, want %q", got, tt.want)
			}
			if err != nil && spec.IsInput(err) != tt.isInput {
				t.Errorf("IsInput = %t, want %t", spec.IsInput(err), tt.isInput)
			}
		})
	}
}

func TestNewRunnerLayout(t *testing.T) {
	s := spec.Spec{Scenario: spec.ScenarioControllerStatus, Controller: &spec.Controller{Controllers: 3, ObjectsPerController: 2, SharedObjects: 2}}
	s.Defaults()
	r := newRunner(scenario.Env{Spec: s})
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
			if !wantShared && !strings.HasPrefix(v.obj.name, "controller-"+string(rune('0'+c))+"-") {
				t.Errorf("controller %d owns %s", c, v.obj.name)
			}
		}
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

// fakeClock drives a pacer without real time.
type fakeClock struct{ now time.Time }

func (f *fakeClock) pacer(p *pacer) *pacer {
	p.now = func() time.Time { return f.now }
	p.wait = func(d time.Duration, stop <-chan struct{}) bool {
		select {
		case <-stop:
			return false
		default:
		}
		f.now = f.now.Add(d)
		return true
	}
	return p
}

func TestPacer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		work     time.Duration // time the previous reconcile took
		intended time.Duration // since t0
		late     bool
	}
	tests := []struct {
		name           string
		rate           float64
		think          time.Duration
		index, workers int
		steps          []step
	}{
		{"closed loop starts at once", 0, 0, 0, 1, []step{
			{0, 0, false}, {30 * time.Millisecond, 30 * time.Millisecond, false}, {5 * time.Millisecond, 35 * time.Millisecond, false},
		}},
		{"closed loop thinks between reconciles", 0, 10 * time.Millisecond, 0, 1, []step{
			{0, 0, false}, {30 * time.Millisecond, 40 * time.Millisecond, false},
		}},
		// 100/s over 4 workers: each has a 40ms slot, worker 2 offset by 20ms.
		{"open loop keeps its schedule", 100, 0, 2, 4, []step{
			{0, 20 * time.Millisecond, false}, {5 * time.Millisecond, 60 * time.Millisecond, false},
			{50 * time.Millisecond, 100 * time.Millisecond, true}, // finished at 110ms: late
			{10 * time.Millisecond, 140 * time.Millisecond, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: t0}
			p := clock.pacer(newPacer(t0, tt.rate, tt.think, tt.index, tt.workers))
			stop := make(chan struct{})
			for i, s := range tt.steps {
				clock.now = clock.now.Add(s.work)
				intended, late, ok := p.next(stop)
				if !ok {
					t.Fatalf("step %d: stopped", i)
				}
				if got := intended.Sub(t0); got != s.intended || late != s.late {
					t.Errorf("step %d: intended +%s late %t, want +%s late %t", i, got, late, s.intended, s.late)
				}
			}
			close(stop)
			if _, _, ok := p.next(stop); ok {
				t.Errorf("next after stop: ok")
			}
		})
	}
}
