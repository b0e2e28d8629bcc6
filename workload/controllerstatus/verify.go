package controllerstatus

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Report is the controller-status scenario's report: the measured write
// attempts and 409s on owned and on shared Pods, and the lost-update
// checks: one per controller over the Pods it owns, and one per shared
// Pod over every controller.
type Report struct {
	// OwnedWrites and OwnedConflicts count the measured write attempts on
	// the Pods one controller owns, and the 409s among them.
	OwnedWrites, OwnedConflicts int64
	// SharedWrites and SharedConflicts count them on the shared Pods.
	SharedWrites, SharedConflicts int64
	checks                        []results.Check
	causes                        []results.Figure // the 409s by cause (reads.Causes)
}

// Checks are the lost-update checks.
func (r *Report) Checks() []results.Check { return r.checks }

// Figures are the writes and conflicts on owned and on shared Pods, and
// the 409s by cause.
func (r *Report) Figures() []results.Figure {
	fig := func(name, pods string, v int64, better results.Better, help string) results.Figure {
		return results.Figure{Name: name, Labels: map[string]string{"pods": pods}, Value: float64(v), Unit: results.UnitCount, Sum: true, Better: better, Help: help}
	}
	const writes = "Measured status write attempts on the Pods one controller owns (owned) or all share (shared)."
	const conflicts = "409s among the measured status writes on owned Pods (none expected) or shared ones."
	return append([]results.Figure{fig("statusWrites", "owned", r.OwnedWrites, "", writes), fig("statusConflicts", "owned", r.OwnedConflicts, results.BetterLower, conflicts),
		fig("statusWrites", "shared", r.SharedWrites, "", writes), fig("statusConflicts", "shared", r.SharedConflicts, results.BetterLower, conflicts)}, r.causes...)
}

// Finish reads every Pod back and checks it against what each controller
// last wrote. When the Pods cannot be read the run's figures still stand:
// it warns and returns no checks.
func (r *controllers) Finish(ctx context.Context) (scenario.Report, error) {
	env := r.env
	t := &r.tally
	report := &Report{
		OwnedWrites: t.ownedWrites.Load(), OwnedConflicts: t.ownedConflicts.Load(),
		SharedWrites: t.sharedWrites.Load(), SharedConflicts: t.sharedConflicts.Load(), causes: r.causes.Figures(),
	}
	if r.informers != nil {
		r.informers.Stop()
	}
	list, err := env.Admin.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + env.RunID})
	if err != nil {
		env.Warn("controller status: reading the Pods back failed, so lost status updates were not checked: %v", err)
		return report, nil
	}
	pods := make(map[string]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[list.Items[i].Name] = &list.Items[i]
	}
	report.checks = judge(r.views, pods)
	return report, nil
}

// judge compares each controller's views with the Pods as read back. Each
// controller gets one check over the Pods it owns; each shared Pod gets one
// check over all controllers. A status write the Pod no longer shows (a
// controller's condition missing or older than its last accepted write) is
// a lost update.
func judge(views [][]*view, pods map[string]*corev1.Pod) []results.Check {
	var checks []results.Check
	// mismatch explains the first failure of a check.
	mismatch := func(c int, v *view, observed int64) string {
		found := fmt.Sprintf("says %q", message(observed))
		switch observed {
		case 0:
			found = "is missing"
		case -1:
			return fmt.Sprintf("Pod %s is gone, with controller-%d's last accepted write %q", v.obj.name, c, message(v.lastOK))
		}
		return fmt.Sprintf("controller-%d's condition on Pod %s %s, but its last accepted write was %q",
			c, v.obj.name, found, message(v.lastOK))
	}
	// tally counts one (controller, Pod) pair into check: the Pod holds
	// what the controller last wrote when it shows the last accepted
	// write, or one whose fate is unknown and came after it.
	tally := func(check *results.Check, c int, v *view) {
		check.Expected++
		observed := int64(-1) // the Pod is gone
		if pod := pods[v.obj.name]; pod != nil {
			observed = seqOf(pod, c)
		}
		if observed == v.lastOK || slices.Contains(v.unsure, observed) {
			check.Observed++
		} else if check.Detail == "" {
			check.Detail = mismatch(c, v, observed)
		}
	}

	for c, cv := range views {
		check := results.Check{Name: fmt.Sprintf("controller status: controller-%d's own Pods hold its last status", c)}
		for _, v := range cv {
			if !v.obj.shared {
				tally(&check, c, v)
			}
		}
		finish(&check, "Pods")
		checks = append(checks, check)
	}

	for i, v0 := range views[0] {
		if !v0.obj.shared {
			continue
		}
		check := results.Check{Name: fmt.Sprintf("controller status: shared Pod %s holds every controller's last status", v0.obj.name)}
		for c, cv := range views {
			tally(&check, c, cv[i])
		}
		finish(&check, "controllers")
		checks = append(checks, check)
	}
	return checks
}

// finish sets the verdict of a check whose Expected and Observed count
// (controller, Pod) pairs, and prefixes its detail with how many failed.
func finish(check *results.Check, of string) {
	check.Lost = check.Expected - check.Observed
	check.Passed = check.Lost == 0
	if !check.Passed {
		check.Detail = fmt.Sprintf("%d of %d %s lost their last status update; e.g. %s", check.Lost, check.Expected, of, check.Detail)
	}
}
