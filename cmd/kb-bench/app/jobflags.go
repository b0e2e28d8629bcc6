package app

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kb-bench/kb-bench/bench"
	"github.com/kb-bench/kb-bench/spec"
)

// registerJob adds the flags of --runner job (the shards' image and pods)
// to fs.
func registerJob(fs *pflag.FlagSet, j *bench.JobOptions) {
	fs.StringVar(&j.Image, "image", "", "--runner job: the kb-bench image the shard pods run (default kb-bench/kb-bench:<version>, as 'make image' builds it; on --target kind kb-bench makes that image of its own binary, which must be a static build (CGO_ENABLED=0), and loads it into the nodes that lack it)")
	fs.StringVar(&j.PullPolicy, "image-pull-policy", "", "--runner job: IfNotPresent (the default: runs an image loaded into the nodes), Always or Never")
	fs.StringVar(&j.CPU, "shard-cpu", "", "--runner job: CPU each shard pod requests (and is limited to), e.g. 2 or 500m")
	fs.StringVar(&j.Memory, "shard-memory", "", "--runner job: memory each shard pod requests (and is limited to), e.g. 1Gi")
	fs.BoolVar(&j.AntiAffinity, "anti-affinity", false, "--runner job: spread the shard pods over nodes where the scheduler can")
	fs.StringToStringVar(&j.NodeSelector, "node-selector", nil, "--runner job: run the shard pods only on nodes with these labels (key=value,...)")
	fs.StringVar(&j.RunnerKubeconfig, "runner-kubeconfig", "", "--runner job: run the shard pods on this separate cluster, so they take no CPU from the one under test; they reach the target at the server URL kb-bench uses, as a ServiceAccount of the run's with only the shards' rights")
	fs.StringVar(&j.RunnerContext, "runner-context", "", "--runner job: the context of --runner-kubeconfig to use")
}

// jobFlagNames are the flags registerJob adds.
var jobFlagNames = []string{"image", "image-pull-policy", "shard-cpu", "shard-memory", "anti-affinity", "node-selector", "runner-kubeconfig", "runner-context"}

// checkJobFlags refuses job flags for a run whose shards are not a Job.
func checkJobFlags(fs *pflag.FlagSet, sp spec.Spec) error {
	isJob := sp.Shards > 0 && sp.Runner == spec.RunnerJob
	for _, name := range jobFlagNames {
		if fs.Changed(name) && !isJob {
			return spec.Input(fmt.Errorf("--%s is for the shard pods of --shards N --runner job: add those, or drop --%s", name, name))
		}
	}
	return nil
}
