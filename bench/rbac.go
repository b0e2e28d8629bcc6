package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/distributed"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
)

// RBACOptions say whom RBAC's Role is for.
type RBACOptions struct {
	// ServiceAccount (of the run's namespace) or User, at most one, is
	// bound to the Role; none: the Role alone.
	ServiceAccount, User string
	// WithMetrics also grants the subject reading the apiserver's
	// /metrics (a ClusterRole), which the server cross-check needs.
	WithMetrics bool
	// Job is how the shards run, with --runner job.
	Job JobOptions
}

// RBAC is what a run of p needs in the existing namespace its spec names
// (run --namespace), and nothing more: a Role with the rules of every
// cell (what its scenario reads and writes, deleting its own objects, the
// Job runner's rights), a ClusterRole when a cell acts cluster-wide (a CRD
// it installs), and with a subject their bindings (and, with WithMetrics,
// a ClusterRole and ClusterRoleBinding for /metrics).
func RBAC(p *Plan, o RBACOptions) ([]runtime.Object, error) {
	ns := p.Cells[0].Spec.Namespace
	if ns == "" {
		return nil, spec.Input(errors.New("--namespace names the existing namespace the run will use: the Role is for that namespace"))
	}
	var subject *rbacv1.Subject
	switch {
	case o.ServiceAccount != "" && o.User != "":
		return nil, spec.Input(errors.New("--service-account and --user both given: bind the Role to one of them"))
	case o.ServiceAccount != "":
		// What the apiserver would refuse in the RoleBinding is refused
		// here, not when it is applied.
		if msgs := validation.IsDNS1123Subdomain(o.ServiceAccount); len(msgs) > 0 {
			return nil, spec.Input(fmt.Errorf("--service-account %q is not a ServiceAccount name: %s", o.ServiceAccount, strings.Join(msgs, "; ")))
		}
		subject = &rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: o.ServiceAccount, Namespace: ns}
	case o.User != "":
		subject = &rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: o.User}
	case o.WithMetrics:
		return nil, spec.Input(errors.New("--with-metrics binds a ClusterRole: name whom with --service-account or --user"))
	}
	var rules, cluster []rbacv1.PolicyRule
	for _, c := range p.Cells {
		var runner distributed.ShardRunner
		if c.Spec.Runner == spec.RunnerJob {
			// The Job runner's rights depend only on where its pods run.
			jr := job.Runner{}
			if o.Job.RunnerKubeconfig != "" {
				jr.Remote = &job.Remote{}
			}
			runner = jr
		}
		r, err := workload.Rules(c.Spec, runner)
		if err != nil {
			return nil, err
		}
		cr, err := workload.ClusterRules(c.Spec)
		if err != nil {
			return nil, err
		}
		rules, cluster = union(rules, r), union(cluster, cr)
	}
	const name = "kb-bench"
	objects := []runtime.Object{k8s.Role(ns, name, nil, rules)}
	if len(cluster) > 0 {
		// What the run does cluster-wide (a CRD it installs).
		objects = append(objects, k8s.ClusterRole(name+"-"+ns, cluster))
	}
	if subject == nil {
		return objects, nil
	}
	objects = append(objects, k8s.RoleBinding(ns, name, nil, *subject))
	if len(cluster) > 0 {
		objects = append(objects, k8s.ClusterRoleBinding(name+"-"+ns, name+"-"+ns, *subject))
	}
	if o.WithMetrics {
		objects = append(objects,
			k8s.ClusterRole(name+"-metrics", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}),
			k8s.ClusterRoleBinding(name+"-metrics-"+ns, name+"-metrics", *subject))
	}
	return objects, nil
}

// union is rules with those of more it lacks added.
func union(rules, more []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	for _, rule := range more {
		if !slices.ContainsFunc(rules, func(had rbacv1.PolicyRule) bool { return fmt.Sprint(had) == fmt.Sprint(rule) }) {
			rules = append(rules, rule)
		}
	}
	return rules
}
