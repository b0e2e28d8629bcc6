package bench

import (
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The Role of a distributed run holds the Job runner's rights only when
// the shards run as a Job, and on a runner cluster the token request
// instead of the Job's; a subject gets a binding, and /metrics a
// ClusterRole.
func TestRBAC(t *testing.T) {
	rules := func(t *testing.T, o RBACOptions, overrides ...Override) (string, int) {
		t.Helper()
		p := resolve(t, Request{Overrides: append([]Override{Set("namespace", "team-a")}, overrides...)})
		objects, err := RBAC(p, o)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(objects[0].(*rbacv1.Role).Rules), len(objects)
	}
	process, _ := rules(t, RBACOptions{}, Set("shards", 2))
	jobs, _ := rules(t, RBACOptions{}, Set("shards", 2), Set("runner", "job"))
	remote, _ := rules(t, RBACOptions{Job: JobOptions{RunnerKubeconfig: "runner.kubeconfig"}}, Set("shards", 2), Set("runner", "job"))
	if strings.Contains(process, "jobs") || strings.Contains(process, "rolebindings") {
		t.Errorf("shards as processes need no Job's rights: %s", process)
	}
	if !strings.Contains(jobs, "[jobs]") || strings.Contains(jobs, "serviceaccounts/token") {
		t.Errorf("shards as a Job on the target: %s", jobs)
	}
	if strings.Contains(remote, "[jobs]") || !strings.Contains(remote, "serviceaccounts/token") {
		t.Errorf("shards as a Job on a runner cluster: %s", remote)
	}
	if _, n := rules(t, RBACOptions{User: "alice", WithMetrics: true}); n != 4 {
		t.Errorf("a user with /metrics: %d objects, want the Role, its binding, the ClusterRole and its binding", n)
	}
	p := resolve(t, Request{})
	if _, err := RBAC(p, RBACOptions{}); err == nil || !strings.Contains(err.Error(), "--namespace") {
		t.Errorf("no namespace: %v", err)
	}
}
