// Package k8s is the house's Kubernetes toolbox, below the engine and its
// scenarios: the labels and field managers on what kb-bench creates, the
// RBAC rules and Roles that grant what it asks for, client configuration,
// setup helpers and how a failed request is explained.
package k8s

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rule is a PolicyRule for resources of one API group ("" for core).
func Rule(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
}

// Named is a Rule for the objects called name only.
func Named(group string, resources []string, name string, verbs ...string) rbacv1.PolicyRule {
	r := Rule(group, resources, verbs...)
	r.ResourceNames = []string{name}
	return r
}

// Role grants rules in namespace ns.
func Role(ns, name string, labels map[string]string, rules []rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{TypeMeta: rbacMeta("Role"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Rules: rules}
}

// RoleBinding binds the Role called name in namespace ns (the binding's
// name too) to subject.
func RoleBinding(ns, name string, labels map[string]string, subject rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   rbacMeta("RoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
}

// ClusterRole grants rules in every namespace, or on paths that belong to
// none (/metrics).
func ClusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{TypeMeta: rbacMeta("ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

// ClusterRoleBinding, called name, binds the ClusterRole called role to
// subject.
func ClusterRoleBinding(name, role string, subject rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   rbacMeta("ClusterRoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
}

// rbacMeta is the type of an RBAC object of kind.
func rbacMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}
