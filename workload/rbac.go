package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/distributed"
)

// Rules are the namespaced permissions a run of s needs in its namespace:
// what its scenario reads and writes, deleting its own objects at the end,
// and what runner, which starts its shards, needs (a RulesNeeder's: the
// Job runner's; runner may be nil). They make the Role that `kb-bench
// rbac` prints and that the preflight of a run in an existing namespace
// checks.
func Rules(s spec.Spec, runner distributed.ShardRunner) ([]rbacv1.PolicyRule, error) {
	r, errs := Resolve(s)
	if len(errs) > 0 {
		return nil, spec.Input(errors.New(spec.Describe(errs)))
	}
	return withRunner(r.rulesFor(), r.Spec, runner), nil
}

// ClusterRules are the cluster-wide permissions a run of s needs beside
// Rules: what its scenario installs and removes (a CRD the run installs:
// --install-crd, or on the local control plane); nil for most runs. They
// make the ClusterRole that `kb-bench rbac` prints.
func ClusterRules(s spec.Spec) ([]rbacv1.PolicyRule, error) {
	r, errs := Resolve(s)
	if len(errs) > 0 {
		return nil, spec.Input(errors.New(spec.Describe(errs)))
	}
	return r.clusterRules(), nil
}

// clusterRules are what the run's scenario does cluster-wide.
func (r *Resolved) clusterRules() []rbacv1.PolicyRule {
	if r.Def.ClusterRules == nil {
		return nil
	}
	return r.Def.ClusterRules(r.Settings, r.Spec)
}

// withRunner adds to a run's rules what the runner that starts its shards
// needs.
func withRunner(rules []rbacv1.PolicyRule, s spec.Spec, runner distributed.ShardRunner) []rbacv1.PolicyRule {
	if rn, ok := runner.(distributed.RulesNeeder); ok && s.Shards > 0 {
		return append(slices.Clip(rules), rn.Rules()...)
	}
	return rules
}

// rules are what the run's scenario reads and writes; informers and
// watchers (--read informer, --watchers) also watch what it lists.
func (r *Resolved) rules() []rbacv1.PolicyRule {
	if r.Def.Rules == nil {
		return nil
	}
	rules := r.Def.Rules(r.Settings)
	if r.Spec.Read == spec.ReadInformer || r.Spec.Watchers > 0 {
		for i := range rules {
			if slices.Contains(rules[i].Verbs, "list") {
				rules[i].Verbs = append(slices.Clip(rules[i].Verbs), "watch")
			}
		}
	}
	return rules
}

// shardRules are the rights a shard needs: its scenario's (rules), its
// coordination Lease, and uploading its result.
func shardRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	return append(slices.Clone(rules),
		k8s.Rule("coordination.k8s.io", []string{"leases"}, "get", "create", "update"),
		k8s.Rule("", []string{"configmaps"}, "create"))
}

// rulesFor are what the run needs in its namespace (Rules), but for its
// runner's: with shards, the coordinator's too (the Leases, reading and
// removing the uploaded results).
func (r *Resolved) rulesFor() []rbacv1.PolicyRule {
	rules := r.rules()
	if r.Spec.Shards > 0 {
		rules = append(rules,
			k8s.Rule("coordination.k8s.io", []string{"leases"}, "get", "list", "create", "update"),
			k8s.Rule("", []string{"configmaps"}, "get", "delete"))
	}
	for _, g := range cleanupResources(rules) {
		rules = append(rules, k8s.Rule(g.group, []string{g.resource}, "deletecollection"))
	}
	if r.Spec.Client.ContentType == spec.ContentCBOR {
		// The CBOR probe is a dry-run create of a ConfigMap.
		rules = append(rules, k8s.Rule("", []string{"configmaps"}, "create"))
	}
	return rules
}

// groupResource is a resource and its API group ("" for core).
type groupResource struct{ group, resource string }

// cleanupResources are the resources the rules let a run create (not
// subresources, not service accounts, which kb-bench only makes sure
// exist): the kinds of object it deletes at the end.
func cleanupResources(rules []rbacv1.PolicyRule) []groupResource {
	var out []groupResource
	for _, r := range rules {
		if !slices.Contains(r.Verbs, "create") {
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				gr := groupResource{g, res}
				if strings.Contains(res, "/") || res == "serviceaccounts" || slices.Contains(out, gr) {
					continue
				}
				out = append(out, gr)
			}
		}
	}
	return out
}

// checkPermissions asks the apiserver (SelfSubjectAccessReview) whether the
// credentials may do everything rules name in ns, and cluster-wide what
// cluster names, and lists every missing permission at once.
func checkPermissions(ctx context.Context, kube kubernetes.Interface, ns string, rules, cluster []rbacv1.PolicyRule) error {
	missing, err := missingPermissions(ctx, kube, ns, rules)
	if err != nil {
		return err
	}
	more, err := missingPermissions(ctx, kube, "", cluster)
	if err != nil {
		return err
	}
	for _, m := range more {
		missing = append(missing, m+" (cluster-wide)")
	}
	if len(missing) > 0 {
		return spec.Input(fmt.Errorf("these credentials may not do what the run needs in namespace %s: %s; `kb-bench rbac --namespace %s` (with the same scenario flags) prints a Role and RoleBinding (and a ClusterRole when the run needs one) that grant exactly what it needs",
			ns, strings.Join(missing, ", "), ns))
	}
	return nil
}

// missingPermissions lists what of rules the credentials may not do in ns
// ("update configmaps", "delete jobs.batch NAME"), asking the
// apiserver (SelfSubjectAccessReview) about every verb, resource and
// resource name.
func missingPermissions(ctx context.Context, kube kubernetes.Interface, ns string, rules []rbacv1.PolicyRule) ([]string, error) {
	var missing []string
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range r.Verbs {
					for _, name := range names {
						review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
							ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: g, Resource: resource, Subresource: sub, Name: name},
						}}
						got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
						if err != nil {
							return nil, fmt.Errorf("checking permissions in namespace %s: %w", ns, err)
						}
						if !got.Status.Allowed {
							what := res
							if g != "" {
								what += "." + g
							}
							if name != "" {
								what += " " + name
							}
							missing = append(missing, verb+" "+what)
						}
					}
				}
			}
		}
	}
	return missing, nil
}
