package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kb-bench/kb-bench/bench"
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
scenario reads and writes, and deleting its own objects at the end; and a
ClusterRole (bound with the subject) for what the run does cluster-wide: a
manifest's CRD it installs (--install-crd) waited for and deleted. The
scenario and its settings decide the rules, so give the same flags (or
profile) as the run. A run with --namespace checks these permissions before
it starts and lists every missing one.`,
		Example: `  kb-bench rbac --namespace team-a --service-account bench | kubectl apply -f -
  kb-bench run --namespace team-a --kubeconfig team-a.kubeconfig
  kb-bench rbac --namespace team-a --scenario quota --user alice --with-metrics`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.plan(cmd.Context(), cmd.Flags(), f.request(cmd.Flags()))
			if err != nil {
				return err
			}
			objects, err := bench.RBAC(p, bench.RBACOptions{ServiceAccount: serviceAccount, User: user, WithMetrics: withMetrics, Job: f.opt.Job})
			if err != nil {
				return err
			}
			ns := p.Cells[0].Spec.Namespace
			fmt.Fprintln(s.Out, "# kb-bench: what a run needs in namespace "+ns+" (kb-bench run --namespace "+ns+")")
			for i, o := range objects {
				b, err := yaml.Marshal(o)
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
