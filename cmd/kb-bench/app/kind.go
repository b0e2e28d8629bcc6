package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/cluster"
)

// newKindCommand manages the benchmark kind clusters kb-bench makes.
func newKindCommand(s Streams, getenv func(string) string) *cobra.Command {
	var o cluster.KindOptions
	var retain, printConfig bool
	var stateDir string
	cmd := &cobra.Command{
		Use:   "kind",
		Short: "Create, inspect and delete a benchmark-tuned kind cluster",
		Long: `kb-bench kind up creates a kind cluster (through kind's Go library, no kind
binary needed) tuned for benchmarks: one or three control-plane nodes (three
apiservers behind kind's load balancer), apiserver flags passed through, etcd
on tmpfs or on disk, audit logging off. Its kubeconfig goes to a file of
kb-bench's; ~/.kube/config is not touched. 'kb-bench run --target kind
--kind-cluster NAME' then runs against it and records its configuration.

kb-bench never pulls images: the node image must already be in the container
runtime (--node-image).`,
	}
	cmd.PersistentFlags().StringVar(&o.Name, "name", cluster.DefaultKindCluster, "the cluster's name")
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", "", "where kb-bench keeps its kind clusters' kubeconfigs and settings (default $XDG_STATE_HOME/kb-bench/kind)")

	up := &cobra.Command{
		Use:   "up",
		Short: "Create the cluster unless it exists, and wait until its control plane is ready",
		Example: `  kb-bench kind up --node-image kb-bench/kind-node:v1.37.1
  kb-bench kind up --control-planes 3 --etcd-tmpfs --apiserver-arg max-mutating-requests-inflight=400
  kb-bench kind up --print-config --control-planes 3   # the kind configuration, nothing created`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if printConfig {
				b, err := cluster.KindConfigYAML(o)
				if err != nil {
					return err
				}
				_, err = s.Out.Write(b)
				return err
			}
			st, created, err := cluster.KindUp(c.Context(), o, cluster.KindUpOptions{Log: s.Err, Getenv: getenv, StateDir: stateDir, Retain: retain})
			if err != nil {
				return err
			}
			verb := "exists"
			if created {
				verb = "created"
			}
			fmt.Fprintf(s.Out, "kind cluster %s %s\nkubeconfig: %s\nrun against it: kb-bench run --target kind --kind-cluster %s\n", st.Options.Name, verb, st.Kubeconfig, st.Options.Name)
			return nil
		},
	}
	up.Flags().StringVar(&o.NodeImage, "node-image", cluster.DefaultKindNodeImage, "node image, already in the container runtime (never pulled)")
	up.Flags().IntVar(&o.ControlPlanes, "control-planes", 1, "control-plane nodes: 1, or 3 (three apiservers behind a load balancer)")
	up.Flags().StringArrayVar(&o.APIServerArgs, "apiserver-arg", nil, "kube-apiserver flag NAME=VALUE (no dashes), repeatable")
	up.Flags().BoolVar(&o.EtcdOnTmpfs, "etcd-tmpfs", false, "keep etcd's data on the node's tmpfs (less disk noise, nothing durable)")
	up.Flags().BoolVar(&retain, "retain", false, "keep the nodes of a failed create, for debugging")
	up.Flags().BoolVar(&printConfig, "print-config", false, "print the kind configuration and create nothing")

	down := &cobra.Command{
		Use:   "down",
		Short: "Delete a cluster kb-bench made (never another)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cluster.KindDown(c.Context(), o.Name, stateDir, getenv); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "kind cluster %s deleted\n", o.Name)
			return nil
		},
	}

	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether kb-bench made the cluster and how it is configured",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			st, err := cluster.ReadKindState(stateDir, o.Name, getenv)
			if os.IsNotExist(err) {
				fmt.Fprintf(s.Out, "kb-bench made no kind cluster %s\n", o.Name)
				return nil
			}
			if err != nil {
				return err
			}
			args := strings.Join(st.Options.APIServerArgs, " ")
			if args == "" {
				args = "none"
			}
			fmt.Fprintf(s.Out, "kind cluster %s: made %s, %d control-plane node(s), image %s, etcd on tmpfs %t, apiserver args %s\nkubeconfig: %s\n",
				st.Options.Name, st.Created.Format("2006-01-02 15:04:05Z"), st.Options.ControlPlanes, st.Options.NodeImage, st.Options.EtcdOnTmpfs, args, filepath.Clean(st.Kubeconfig))
			return nil
		},
	}
	cmd.AddCommand(up, down, status)
	return cmd
}
