package job

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A shard pod that cannot start or failed is named with its reason; pods
// still on their way are only described.
func TestJudgePods(t *testing.T) {
	pod := func(name string, edit func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": name[len(name)-1:]}},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
		edit(&p)
		return p
	}
	three := int32(3)
	pending := pod("p-0", func(*corev1.Pod) {})
	running := pod("p-1", func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = "node-a", corev1.PodRunning })
	status, err := judgePods(&three, []corev1.Pod{running, pending}, map[string]string{})
	if err != nil || status != "pod p-0 Pending, no node assigned; pod p-1 Running on node-a; 2 of 3 shard pods created (is the Job controller, kube-controller-manager, running?)" {
		t.Errorf("status %q, err %v", status, err)
	}
	for _, c := range []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"image not there", pod("p-2", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "image not present"}}}}
		}), "shard 2 (pod p-2) cannot start: ErrImageNeverPull: image not present (build the image with make image and load it into the nodes"},
		{"unschedulable", pod("p-2", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: Insufficient cpu"}}
		}), "shard 2 (pod p-2) cannot be scheduled: 0/3 nodes are available: Insufficient cpu"},
		{"shard exited 1", pod("p-2", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "kb-bench: forbidden\n"}}}}
		}), "shard 2 (pod p-2) failed (exit 1, Error): kb-bench: forbidden"},
		{"shard killed, saying nothing", pod("p-2", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}}
		}), "shard 2 (pod p-2) failed (exit 137, Error)"},
		{"evicted", pod("p-2", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "low on memory"
		}),
			"shard 2 (pod p-2) failed: Evicted low on memory"},
	} {
		_, err := judgePods(&three, []corev1.Pod{pending, c.pod}, map[string]string{})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.HasSuffix(err.Error(), ": ") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A shard pod deleted during the run fails it, named as deleted, whether
// it is still terminating (its container stopped by SIGTERM) or already
// gone; a pod that failed is named before one the Job controller then
// deletes.
func TestJudgePodsDeleted(t *testing.T) {
	two := int32(2)
	now := metav1.Now()
	pod := func(index string, edit func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + index, Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": index}},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		edit(&p)
		return p
	}
	running := func(index string) corev1.Pod { return pod(index, func(*corev1.Pod) {}) }
	terminating := pod("1", func(p *corev1.Pod) {
		p.DeletionTimestamp = &now
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 130, Reason: "Error"}}}}
	})
	failed := pod("0", func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "forbidden"}}}}
	})
	completed := pod("1", func(p *corev1.Pod) { p.DeletionTimestamp, p.Status.Phase = &now, corev1.PodSucceeded })

	seen := map[string]string{}
	if _, err := judgePods(&two, []corev1.Pod{running("0"), running("1")}, seen); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"terminating", []corev1.Pod{running("0"), terminating}, "shard 1 (pod p-1) was deleted before the run ended: its shard stopped with it"},
		{"gone", []corev1.Pod{running("0")}, "shard 1 (pod p-1) was deleted before the run ended: its shard stopped with it"},
		{"a failed shard first", []corev1.Pod{failed, terminating}, "shard 0 (pod p-0) failed (exit 1, Error): forbidden"},
		{"a failed shard, another gone", []corev1.Pod{failed}, "shard 0 (pod p-0) failed (exit 1, Error): forbidden"},
	} {
		_, err := judgePods(&two, c.pods, maps.Clone(seen))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A pod that completed is not a failure, being deleted or not.
	if status, err := judgePods(&two, []corev1.Pod{running("0"), completed}, maps.Clone(seen)); err != nil {
		t.Errorf("a completed pod: %v (%s)", err, status)
	}
}
