package controllerstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Condition fields every controller writes; the message carries the
// sequence number.
const (
	conditionReason = "Reconciled"
	fieldManager    = "kb-bench-controller"
)

// write makes one status write of controller c's condition with sequence
// number v.seq on v's Pod, the way the strategy says.
func (r *controllers) write(ctx context.Context, pods corev1client.PodInterface, c int, v *view) (*corev1.Pod, error) {
	s := &r.env.Spec
	cond := corev1.PodCondition{
		Type:    conditionType(c),
		Status:  corev1.ConditionTrue,
		Reason:  conditionReason,
		Message: message(v.seq),
	}
	switch r.strategy.Kind {
	case scenario.MergePatch:
		rv := ""
		if r.strategy.Precondition {
			rv = v.cached.ResourceVersion
		}
		body, err := conditionPatch(cond, rv)
		if err != nil {
			return nil, err
		}
		return pods.Patch(ctx, v.obj.name, r.strategy.PatchType, body, metav1.PatchOptions{FieldManager: fieldManager}, "status")
	case scenario.Apply:
		manager := fieldManager
		if s.FieldManager == spec.ManagerPerWriter {
			manager += "-" + strconv.Itoa(c)
		}
		ac := corev1ac.Pod(v.obj.name, r.env.Namespace).WithStatus(corev1ac.PodStatus().WithConditions(
			corev1ac.PodCondition().WithType(cond.Type).WithStatus(cond.Status).WithReason(cond.Reason).WithMessage(cond.Message)))
		return pods.ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: manager, Force: r.strategy.Force})
	default: // update (and retry): PUT the whole status from the cached Pod
		pod := v.cached.DeepCopy()
		setCondition(&pod.Status, cond)
		if !r.strategy.Precondition {
			pod.ResourceVersion = ""
		}
		return pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: fieldManager})
	}
}

// setCondition replaces the condition of cond's type, or appends it.
func setCondition(status *corev1.PodStatus, cond corev1.PodCondition) {
	if i := conditionIndex(status, cond.Type); i >= 0 {
		status.Conditions[i] = cond
		return
	}
	status.Conditions = append(status.Conditions, cond)
}

// conditionIndex is the index of status's condition of type t, -1 for none.
func conditionIndex(status *corev1.PodStatus, t corev1.PodConditionType) int {
	return slices.IndexFunc(status.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
}

// conditionPatch is a merge or strategic patch of status.conditions holding
// cond, with metadata.resourceVersion as an optimistic lock when rv is set.
// A merge patch replaces the whole list (other controllers' conditions
// included); a strategic patch merges it by condition type.
func conditionPatch(cond corev1.PodCondition, rv string) ([]byte, error) {
	type condition struct {
		Type    corev1.PodConditionType `json:"type"`
		Status  corev1.ConditionStatus  `json:"status"`
		Reason  string                  `json:"reason"`
		Message string                  `json:"message"`
	}
	patch := map[string]any{
		"status": map[string]any{"conditions": []condition{{cond.Type, cond.Status, cond.Reason, cond.Message}}},
	}
	if rv != "" {
		patch["metadata"] = map[string]any{"resourceVersion": rv}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("controller status: encoding a status patch: %w", err)
	}
	return body, nil
}
