package app

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

// newShardCommand is what a distributed run's runner starts: one shard.
func newShardCommand(s Streams, version string, getenv func(string) string) *cobra.Command {
	var o struct {
		namespace, runID, kubeconfig string
		index, liveFD, resultFD      int
	}
	cmd := &cobra.Command{
		Use:   "shard",
		Short: "Run one shard of a distributed run (started by 'kb-bench run --shards')",
		Long: `Run one shard of a distributed run. 'kb-bench run --shards N' starts N of
these (as local processes or as an Indexed Job); each finds the run's
coordination Lease in --namespace, runs its share of the writers when the
coordinator says so, and uploads its result for the coordinator to merge.
It is not meant to be started by hand.

The index comes from --index or, in an Indexed Job, $JOB_COMPLETION_INDEX;
without --kubeconfig the shard uses the pod's service account.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.namespace == "" || o.runID == "" {
				return spec.Input(fmt.Errorf("--namespace and --run-id name the run this shard joins: both are needed"))
			}
			if !cmd.Flags().Changed("index") {
				v := getenv("JOB_COMPLETION_INDEX")
				i, err := strconv.Atoi(v)
				if err != nil {
					return spec.Input(fmt.Errorf("no --index, and $JOB_COMPLETION_INDEX is %q: give the shard's index", v))
				}
				o.index = i
			}
			var cfg *rest.Config
			var err error
			switch o.kubeconfig {
			case "-":
				var b []byte
				if b, err = readfile.FromReader(cmd.Context(), s.In, readfile.Kubeconfig, "the kubeconfig"); err == nil {
					cfg, err = clientcmd.RESTConfigFromKubeConfig(b)
				}
			case "":
				// The pod's service account, asked for directly: through
				// clientcmd it would also log a warning into every
				// shard's result.
				cfg, err = rest.InClusterConfig()
			default:
				// client-go reads the file itself: readfile refuses a
				// device, a FIFO or a huge file first.
				if _, err = readfile.Read(cmd.Context(), o.kubeconfig, readfile.Kubeconfig, "the kubeconfig"); err == nil {
					cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig)
				}
			}
			if err != nil {
				return spec.Input(fmt.Errorf("reaching the target: %w (give --kubeconfig, or run in a pod)", err))
			}
			name := getenv("POD_NAME")
			if name == "" {
				host, _ := os.Hostname()
				name = fmt.Sprintf("%s pid %d", host, os.Getpid())
			}
			var clientLog func() []string
			if s.ClientLog != nil {
				clientLog = s.ClientLog.Drain
			}
			var liveLn net.Listener
			if o.liveFD > 0 {
				f := os.NewFile(uintptr(o.liveFD), "live figures")
				if liveLn, err = net.FileListener(f); err != nil {
					return fmt.Errorf("--live-fd %d is not a listener the coordinator handed down: %w", o.liveFD, err)
				}
				f.Close()
			}
			var resultOut io.Writer
			if o.resultFD > 0 {
				f := os.NewFile(uintptr(o.resultFD), "result hand-off")
				defer f.Close() // the coordinator reads until it is closed
				resultOut = f
			}
			return workload.RunShard(cmd.Context(), workload.ShardOptions{
				Options:   workload.Options{Config: cfg, RunID: o.runID, Version: version, Log: s.Err, ClientLog: clientLog},
				Namespace: o.namespace, Index: o.index, Name: name, LiveListener: liveLn, ResultOut: resultOut,
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.namespace, "namespace", "", "the run's namespace, where its coordination Lease is")
	fs.StringVar(&o.runID, "run-id", "", "the run's id")
	fs.IntVar(&o.index, "index", 0, "this shard's index, from 0 (default $JOB_COMPLETION_INDEX)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the target, - to read it from stdin (default: the pod's service account)")
	fs.IntVar(&o.liveFD, "live-fd", 0, "serve this shard's figures to the coordinator on the listener at this file descriptor (the process runner hands it down when the coordinator has --metrics-addr)")
	_ = fs.MarkHidden("live-fd")
	fs.IntVar(&o.resultFD, "result-fd", 0, "also write this shard's result (JSON) to this file descriptor, however the run ends (the process runner hands down a pipe, so a coordinator that lost the apiserver keeps the shards' figures)")
	_ = fs.MarkHidden("result-fd")
	return cmd
}
