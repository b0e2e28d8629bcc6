package app

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/spec"
)

// localFlags are the flags of the local command group.
type localFlags struct {
	bin        string
	storage    spec.Storage
	stateDir   string
	apiservers int
}

func newLocalCommand(s Streams, getenv func(string) string) *cobra.Command {
	f := &localFlags{}
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Manage a long-running local control plane (kube-apiserver + etcd on loopback)",
		Long: `kb-bench local up starts a real local control plane in the background and writes
a kubeconfig for it; later 'kb-bench run' invocations (and any client-go tool)
use it instead of starting their own. 'local down' stops it. 'local install'
builds the control plane's programs from the pinned upstream source.`,
	}
	cmd.PersistentFlags().StringVar(&f.stateDir, "state-dir", "", "where the state and kubeconfig are kept (default $XDG_STATE_HOME/kb-bench/local)")
	stateDir := func() string { return cmp.Or(f.stateDir, cluster.DefaultStateDir(getenv)) }

	up := &cobra.Command{
		Use:     "up",
		Aliases: []string{"start"},
		Short:   "Start a local control plane in the background",
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := cluster.Up(c.Context(), cluster.UpOptions{Bin: f.bin, Getenv: getenv, Storage: f.storage, StateDir: stateDir(), Log: s.Err, APIServers: f.apiservers})
			if err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "local control plane up at %s (etcd on %s)\nkubeconfig: %s\n", strings.Join(st.Servers, ", "), st.Storage, st.Kubeconfig)
			if len(st.Servers) > 1 {
				fmt.Fprintf(s.Out, "the kubeconfig names the first apiserver; 'kb-bench run --apiservers %d' spreads its clients over all of them\n", len(st.Servers))
			}
			return nil
		},
	}
	up.Flags().StringVar(&f.bin, "control-plane-bin", "", "directory holding kube-apiserver and etcd")
	up.Flags().StringVar((*string)(&f.storage), "storage", string(spec.StorageDisk), "etcd storage: disk or memory (/dev/shm)")
	up.Flags().IntVar(&f.apiservers, "apiservers", 1, "kube-apiservers to run on the one etcd (each on a port of its own)")

	status := &cobra.Command{
		Use:   "status",
		Short: "Show the local control plane started by 'local up'",
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := cluster.Status(c.Context(), stateDir())
			if err != nil {
				return err
			}
			health := "healthy"
			if !st.Healthy {
				health = "NOT healthy: " + st.Detail
			}
			fmt.Fprintf(s.Out, "server:     %s (%s)\nstorage:    etcd on %s\nkubeconfig: %s\nstarted:    %s\n",
				strings.Join(st.Servers, ", "), health, st.Storage, st.Kubeconfig, st.Started.Format("2006-01-02 15:04:05"))
			if !st.Healthy {
				// Scripts check the status: `local status || ...`.
				return errors.New("the local control plane is not healthy (see above)")
			}
			return nil
		},
	}

	down := &cobra.Command{
		Use:     "down",
		Aliases: []string{"stop"},
		Short:   "Stop the local control plane and remove its files",
		RunE: func(c *cobra.Command, _ []string) error {
			err := cluster.Down(c.Context(), stateDir())
			if errors.Is(err, cluster.ErrNotRunning) {
				// Already down: what the user asked for holds.
				fmt.Fprintln(s.Out, "no local control plane was running")
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(s.Out, "local control plane stopped")
			return nil
		},
	}
	var withKCM, withNode bool
	install := &cobra.Command{
		Use:   "install",
		Short: "Build the pinned local control plane from source with your Go toolchain (once)",
		Long: `kb-bench local install builds kube-apiserver ` + cluster.KubeVersion + ` and etcd ` + cluster.EtcdVersion + ` (and with
--controller-manager kube-controller-manager) from the upstream source pinned in
this kb-bench binary, through the Go module proxy, with the go command on PATH,
into ` + "`${KB_BENCH_CACHE:-${XDG_CACHE_HOME:-~/.cache}/kb-bench}/control-plane/" + cluster.KubeVersion + "`" + `,
where 'kb-bench run' finds them. What is there already is kept. It takes about
5 minutes on 2 cores the first time; 'make control-plane' in a checkout does
the same. It prints the directory.`,
		RunE: func(c *cobra.Command, _ []string) error {
			dir, err := cluster.Install(c.Context(), cluster.InstallOptions{ControllerManager: withKCM, KindNode: withNode, Log: s.Err, Getenv: getenv})
			if err != nil {
				return err
			}
			fmt.Fprintln(s.Out, dir)
			return nil
		},
	}
	install.Flags().BoolVar(&withKCM, "controller-manager", false, "also build kube-controller-manager (for --controller-manager; built on demand otherwise)")
	install.Flags().BoolVar(&withNode, "kind-node", false, "build every program of the offline kind node image too: kubelet, kubeadm, kubectl, kube-proxy, kube-scheduler, kube-controller-manager (scripts/kind-node-image.sh)")
	cmd.AddCommand(up, status, down, install)
	return cmd
}
