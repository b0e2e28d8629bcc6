package job_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/runner/job"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// A distributed run whose shard pods never start (this control plane runs
// no Job controller, so the Job makes no pod) fails when the shards' time
// to join runs out, says what the runner saw, and leaves nothing: not the
// Job, its rights, the Leases nor the namespace. The Job and its rights
// were created for real, so the apiserver accepted them.
func TestJobRunnerFailsCleanlyWhenShardsNeverJoin(t *testing.T) {
	cfg := local.Config(t)
	kube := kubernetes.NewForConfigOrDie(cfg)
	runID := "jobrunner-" + time.Now().Format("150405")
	s := spec.Spec{Writers: 4, Shards: 2, Runner: spec.RunnerJob, Duration: spec.D(time.Second)}
	_, err := workload.Run(t.Context(), s, workload.Options{
		Config: cfg, RunID: runID, Version: "test", FinalizeNamespace: true,
		Runner:       job.Runner{Kube: kube, Image: "kb-bench/kb-bench:test", Poll: 100 * time.Millisecond},
		ShardTimeout: 2 * time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "shards 0, 1 did not report joined in time") ||
		!strings.Contains(err.Error(), "0 of 2 shard pods created") {
		t.Fatalf("want the shards' join to time out, naming them and what the runner saw; got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := "kb-bench-" + runID
	if _, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s left behind", ns)
	}
	selector := metav1.ListOptions{LabelSelector: scenario.LabelRunID + "=" + runID}
	jobs, _ := kube.BatchV1().Jobs("").List(ctx, selector)
	roles, _ := kube.RbacV1().Roles("").List(ctx, selector)
	bindings, _ := kube.RbacV1().RoleBindings("").List(ctx, selector)
	accounts, _ := kube.CoreV1().ServiceAccounts("").List(ctx, selector)
	leases, _ := kube.CoordinationV1().Leases("").List(ctx, selector)
	if n := len(jobs.Items) + len(roles.Items) + len(bindings.Items) + len(accounts.Items) + len(leases.Items); n > 0 {
		t.Errorf("left behind: %d jobs, %d roles, %d role bindings, %d service accounts, %d leases",
			len(jobs.Items), len(roles.Items), len(bindings.Items), len(accounts.Items), len(leases.Items))
	}
}
