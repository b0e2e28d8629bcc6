package app

import (
	"github.com/spf13/cobra"

	"github.com/kb-bench/kb-bench/bench"
)

// newShardCommand is what a distributed run's runner starts: one shard.
func newShardCommand(s Streams, version string, getenv func(string) string) *cobra.Command {
	r := bench.ShardRequest{In: s.In}
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("index") {
				r.Index = -1 // $JOB_COMPLETION_INDEX
			}
			var clientLog func() []string
			if s.ClientLog != nil {
				clientLog = s.ClientLog.Drain
			}
			return bench.Shard(cmd.Context(), r, bench.Options{Version: version, Log: s.Err, Getenv: getenv, ClientLog: clientLog})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&r.Namespace, "namespace", "", "the run's namespace, where its coordination Lease is")
	fs.StringVar(&r.RunID, "run-id", "", "the run's id")
	fs.IntVar(&r.Index, "index", 0, "this shard's index, from 0 (default $JOB_COMPLETION_INDEX)")
	fs.StringVar(&r.Kubeconfig, "kubeconfig", "", "kubeconfig of the target, - to read it from stdin (default: the pod's service account)")
	fs.IntVar(&r.LiveFD, "live-fd", 0, "serve this shard's figures to the coordinator on the listener at this file descriptor (the process runner hands it down when the coordinator has --metrics-addr)")
	_ = fs.MarkHidden("live-fd")
	fs.IntVar(&r.ResultFD, "result-fd", 0, "also write this shard's result (JSON) to this file descriptor, however the run ends (the process runner hands down a pipe, so a coordinator that lost the apiserver keeps the shards' figures)")
	_ = fs.MarkHidden("result-fd")
	return cmd
}
