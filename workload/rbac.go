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

	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Rules are the namespaced permissions a run of s needs in its namespace:
// what its scenario reads and writes, and deleting its own objects at the
// end. They make the Role that `kb-bench rbac` prints and that the
// preflight of a run in an existing namespace checks.
func Rules(s spec.Spec) ([]rbacv1.PolicyRule, error) {
	def, settings, errs := Resolve(&s)
	if len(errs) > 0 {
		return nil, spec.Input(errors.New(spec.Describe(errs)))
	}
	return rulesFor(def, settings, s), nil
}

func rulesFor(def scenario.Definition, settings scenario.Settings, s spec.Spec) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	if def.Rules != nil {
		rules = def.Rules(settings)
	}
	if s.Shards > 0 {
		rules = append(rules, coordinatorRules()...)
	}
	if s.Shards > 0 && s.Runner == spec.RunnerJob {
		rules = append(rules, jobRules()...)
	}
	for _, g := range cleanupResources(rules) {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g.group}, Resources: []string{g.resource}, Verbs: []string{"deletecollection"}})
	}
	if s.Client.ContentType == spec.ContentCBOR {
		// The CBOR probe is a dry-run create of a ConfigMap.
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}})
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

// Role is the Role that grants rules in namespace ns.
func Role(ns, name string, rules []rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Rules:      rules,
	}
}

// checkPermissions asks the apiserver (SelfSubjectAccessReview) whether the
// credentials may do everything rules name in ns, and lists every missing
// permission at once.
func checkPermissions(ctx context.Context, kube kubernetes.Interface, ns string, rules []rbacv1.PolicyRule) error {
	var missing []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range r.Verbs {
					review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
						ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: g, Resource: resource, Subresource: sub},
					}}
					got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
					if err != nil {
						return fmt.Errorf("checking permissions in namespace %s: %w", ns, err)
					}
					if !got.Status.Allowed {
						what := res
						if g != "" {
							what += "." + g
						}
						missing = append(missing, verb+" "+what)
					}
				}
			}
		}
	}
	if len(missing) > 0 {
		return spec.Input(fmt.Errorf("these credentials may not do what the run needs in namespace %s: %s; `kb-bench rbac --namespace %s` (with the same scenario flags) prints a Role and RoleBinding that grant exactly what it needs",
			ns, strings.Join(missing, ", "), ns))
	}
	return nil
}
