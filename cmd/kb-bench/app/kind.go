package app

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/spec"
)

// newKindCommand manages the benchmark kind clusters kb-bench makes.
func newKindCommand(s Streams, getenv func(string) string) *cobra.Command {
	var o cluster.KindOptions
	var retain, printConfig bool
	var stateDir string
	var pull spec.PullPolicy
	cmd := &cobra.Command{
		Use:   "kind",
		Short: "Create, inspect and delete a benchmark-tuned kind cluster",
		Long: `kb-bench kind up creates a kind cluster (through kind's Go library, no kind
binary needed) tuned for benchmarks: one or three control-plane nodes (three
apiservers behind kind's load balancer), apiserver flags passed through, etcd
on tmpfs or on disk, audit logging off. Its kubeconfig goes to a file of
kb-bench's; ~/.kube/config is not touched. 'kb-bench run --target kind
--kind-cluster NAME' then runs against it and records its configuration.

The nodes run kind's own node image by default (kindest/node, pinned by digest
by the kind library kb-bench links: Kubernetes ` + cluster.DefaultKindKubeVersion + `; the local control plane
is ` + cluster.KubeVersion + `), pulled when it is missing, as 'kind create cluster' does
(--pull never forbids that, for air-gapped machines: load the image first).
A kind node is a privileged container running systemd: it needs Docker or
Podman that grants privileged containers.`,
	}
	cmd.PersistentFlags().StringVar(&o.Name, "name", cluster.DefaultKindCluster, "the cluster's name")
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", "", "where kb-bench keeps its kind clusters' kubeconfigs and settings (default $XDG_STATE_HOME/kb-bench/kind)")

	up := &cobra.Command{
		Use:     "up",
		Aliases: []string{"create"},
		Short:   "Create the cluster unless it exists, and wait until its control plane is ready",
		Example: `  kb-bench kind up
  kb-bench kind up --control-planes 3 --etcd-tmpfs --apiserver-arg max-mutating-requests-inflight=400
  kb-bench kind up --pull never --node-image kindest/node:v1.37.0   # air-gapped: docker load it first
  kb-bench kind up --print-config --control-planes 3   # the kind configuration, with this host's adaptations; nothing created`,
		RunE: func(c *cobra.Command, _ []string) error {
			if printConfig {
				b, err := cluster.KindConfigHere(c.Context(), o, getenv)
				if err != nil {
					return err
				}
				_, err = s.Out.Write(b)
				return err
			}
			st, created, err := cluster.KindUp(c.Context(), o, cluster.KindUpOptions{Log: s.Err, Getenv: getenv, StateDir: stateDir, Retain: retain, Pull: pull})
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
	up.Flags().StringVar(&o.NodeImage, "node-image", "", "node image (default: kind's own, kindest/node:"+cluster.DefaultKindKubeVersion+" pinned by digest)")
	up.Flags().StringVar((*string)(&pull), "pull", string(spec.PullMissing), "pull the images when missing (as kind does), never (air-gapped: load them first) or always")
	up.Flags().IntVar(&o.ControlPlanes, "control-planes", 1, "control-plane nodes: 1, or 3 (three apiservers behind a load balancer)")
	up.Flags().StringArrayVar(&o.APIServerArgs, "apiserver-arg", nil, "kube-apiserver flag NAME=VALUE (no dashes), repeatable")
	up.Flags().BoolVar(&o.EtcdOnTmpfs, "etcd-tmpfs", false, "keep etcd's data on the node's tmpfs (less disk noise, nothing durable)")
	up.Flags().BoolVar(&retain, "retain", false, "keep the nodes of a failed create, for debugging")
	up.Flags().BoolVar(&printConfig, "print-config", false, "print the kind configuration, adapted to this host, and create nothing")

	down := &cobra.Command{
		Use:     "down",
		Aliases: []string{"delete"},
		Short:   "Delete a cluster kb-bench made (never another)",
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cluster.KindDown(c.Context(), o.Name, stateDir, getenv); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "kind cluster %s deleted\n", o.Name)
			return nil
		},
	}

	status := &cobra.Command{
		Use:     "status",
		Aliases: []string{"get"},
		Short:   "Say whether kb-bench made the cluster and how it is configured",
		Long: `Say whether kb-bench made the cluster --name names and how it is
configured, with the path of its kubeconfig.

'kind get' is an alias, as kind's own CLI says it; its nouns are not taken:
this shows the one cluster --name names ('get clusters' would list them in
kind, 'get kubeconfig' print one: here, the kubeconfig's path is shown).`,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := cluster.ReadKindState(c.Context(), stateDir, o.Name, getenv)
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(s.Out, "kb-bench made no kind cluster %s\n", o.Name)
				return nil
			}
			if err != nil {
				return err
			}
			args, version := cmp.Or(strings.Join(st.Options.APIServerArgs, " "), "none"), cmp.Or(st.KubernetesVersion, "unknown")
			fmt.Fprintf(s.Out, "kind cluster %s: made %s, %d control-plane node(s), etcd on tmpfs %t, apiserver args %s\nnode image: %s\nkubernetes: %s (the local control plane is %s)\nkubeconfig: %s\n",
				st.Options.Name, st.Created.Format("2006-01-02 15:04:05Z"), st.Options.ControlPlanes, st.Options.EtcdOnTmpfs, args,
				st.Options.NodeImage, version, cluster.KubeVersion, filepath.Clean(st.Kubeconfig))
			return nil
		},
	}
	cmd.AddCommand(up, down, status)
	return cmd
}
