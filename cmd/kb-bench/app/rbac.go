package app

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

// newRBACCommand prints the least-privilege Role for a run.
func newRBACCommand(s Streams) *cobra.Command {
	f := &runFlags{}
	var serviceAccount, user string
	var withMetrics bool
	cmd := &cobra.Command{
		Use:   "rbac --namespace NAME [run flags]",
		Short: "Print the Role (and RoleBinding) a run in an existing namespace needs, and nothing more",
		Long: `Print, as YAML for kubectl apply, the Role that grants exactly what a run
with these settings needs in an existing namespace (run --namespace): what its
scenario reads and writes, and deleting its own objects at the end. The
scenario and its settings decide the rules, so give the same flags (or
profile) as the run. A run with --namespace checks these permissions before
it starts and lists every missing one.`,
		Example: `  kb-bench rbac --namespace team-a --service-account bench | kubectl apply -f -
  kb-bench run --namespace team-a --kubeconfig team-a.kubeconfig
  kb-bench rbac --namespace team-a --scenario quota --user alice --with-metrics`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cells, err := f.resolve(cmd.Flags())
			if err != nil {
				return err
			}
			sp := cells[0].spec
			if sp.Namespace == "" {
				return spec.Input(errors.New("--namespace names the existing namespace the run will use: the Role is for that namespace"))
			}
			if serviceAccount != "" && user != "" {
				return spec.Input(errors.New("--service-account and --user both given: bind the Role to one of them"))
			}
			rules := map[string]bool{}
			var all []rbacv1.PolicyRule
			for _, c := range cells {
				r, err := workload.Rules(c.spec)
				if err != nil {
					return err
				}
				for _, rule := range r {
					if key := fmt.Sprint(rule); !rules[key] {
						rules[key] = true
						all = append(all, rule)
					}
				}
			}
			docs := []any{workload.Role(sp.Namespace, "kb-bench", all)}
			var subject *rbacv1.Subject
			switch {
			case serviceAccount != "":
				subject = &rbacv1.Subject{Kind: "ServiceAccount", Name: serviceAccount, Namespace: sp.Namespace}
			case user != "":
				subject = &rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}
			}
			if subject != nil {
				docs = append(docs, &rbacv1.RoleBinding{
					TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
					ObjectMeta: metav1.ObjectMeta{Name: "kb-bench", Namespace: sp.Namespace},
					RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "kb-bench"},
					Subjects:   []rbacv1.Subject{*subject},
				})
				if withMetrics {
					docs = append(docs, &rbacv1.ClusterRole{
						TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
						ObjectMeta: metav1.ObjectMeta{Name: "kb-bench-metrics"},
						Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
					}, &rbacv1.ClusterRoleBinding{
						TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
						ObjectMeta: metav1.ObjectMeta{Name: "kb-bench-metrics-" + sp.Namespace},
						RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "kb-bench-metrics"},
						Subjects:   []rbacv1.Subject{*subject},
					})
				}
			} else if withMetrics {
				return spec.Input(errors.New("--with-metrics binds a ClusterRole: name whom with --service-account or --user"))
			}
			fmt.Fprintln(s.Out, "# kb-bench: what a run needs in namespace "+sp.Namespace+" (kb-bench run --namespace "+sp.Namespace+")")
			for i, d := range docs {
				b, err := yaml.Marshal(d)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(s.Out, "---")
				}
				if _, err := s.Out.Write(b); err != nil {
					return err
				}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&serviceAccount, "service-account", "", "bind the Role to this ServiceAccount of the namespace")
	fs.StringVar(&user, "user", "", "bind the Role to this user")
	fs.BoolVar(&withMetrics, "with-metrics", false, "also grant reading the apiserver's /metrics (a ClusterRole), so runs keep their server cross-check")
	f.register(cmd, "ignored: the Role does not depend on it")
	_ = fs.MarkHidden("count")
	return cmd
}
