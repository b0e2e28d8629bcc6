package app

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/runner/job"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
)

// jobFlags are the flags of --runner job: the shards' image and pods.
type jobFlags struct {
	image        string
	pullPolicy   string
	cpu, memory  string
	antiAffinity bool
	nodeSelector map[string]string
	// runnerKubeconfig and runnerContext name a separate runner cluster.
	runnerKubeconfig, runnerContext string
}

func (j *jobFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&j.image, "image", "", "--runner job: the kb-bench image the shard pods run (default kb-bench/kb-bench:<version>, as 'make image' builds it)")
	fs.StringVar(&j.pullPolicy, "image-pull-policy", "", "--runner job: IfNotPresent (the default: runs an image loaded into the nodes), Always or Never")
	fs.StringVar(&j.cpu, "shard-cpu", "", "--runner job: CPU each shard pod requests (and is limited to), e.g. 2 or 500m")
	fs.StringVar(&j.memory, "shard-memory", "", "--runner job: memory each shard pod requests (and is limited to), e.g. 1Gi")
	fs.BoolVar(&j.antiAffinity, "anti-affinity", false, "--runner job: spread the shard pods over nodes where the scheduler can")
	fs.StringToStringVar(&j.nodeSelector, "node-selector", nil, "--runner job: run the shard pods only on nodes with these labels (key=value,...)")
	fs.StringVar(&j.runnerKubeconfig, "runner-kubeconfig", "", "--runner job: run the shard pods on this separate cluster, so they take no CPU from the one under test; they reach the target at the server URL kb-bench uses, as a ServiceAccount of the run's with only the shards' rights")
	fs.StringVar(&j.runnerContext, "runner-context", "", "--runner job: the context of --runner-kubeconfig to use")
}

// names are the flags, for messages.
var jobFlagNames = []string{"image", "image-pull-policy", "shard-cpu", "shard-memory", "anti-affinity", "node-selector", "runner-kubeconfig", "runner-context"}

// check refuses job flags for a run whose shards are not a Job, and bad
// quantities, before anything starts.
func (j *jobFlags) check(fs *pflag.FlagSet, sp spec.Spec) error {
	isJob := sp.Shards > 0 && (sp.Runner == spec.RunnerJob)
	for _, name := range jobFlagNames {
		if fs.Changed(name) && !isJob {
			return spec.Input(fmt.Errorf("--%s is for the shard pods of --shards N --runner job: add those, or drop --%s", name, name))
		}
	}
	if _, err := j.resources(); err != nil {
		return err
	}
	if j.runnerContext != "" && j.runnerKubeconfig == "" {
		return spec.Input(fmt.Errorf("--runner-context names a context of --runner-kubeconfig: give that too"))
	}
	switch corev1.PullPolicy(j.pullPolicy) {
	case "", corev1.PullIfNotPresent, corev1.PullAlways, corev1.PullNever:
	default:
		return spec.Input(fmt.Errorf("--image-pull-policy %q: use IfNotPresent, Always or Never", j.pullPolicy))
	}
	return nil
}

// resources are the shard container's requests, equal to its limits.
func (j *jobFlags) resources() (corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: j.cpu, corev1.ResourceMemory: j.memory} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() <= 0 {
			return corev1.ResourceRequirements{}, spec.Input(fmt.Errorf("--shard-%s %q is not a positive quantity: use e.g. %s", strings.ToLower(string(name)), v, map[corev1.ResourceName]string{corev1.ResourceCPU: "2 or 500m", corev1.ResourceMemory: "1Gi"}[name]))
		}
		list[name] = q
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}

// runner is the Job runner on the target's cluster.
func (j *jobFlags) runner(conn *cluster.Connection, version string) (workload.ShardRunner, error) {
	kube, err := kubernetes.NewForConfig(conn.Config)
	if err != nil {
		return nil, err
	}
	res, err := j.resources()
	if err != nil {
		return nil, err
	}
	image := j.image
	if image == "" {
		image = "kb-bench/kb-bench:" + version
	}
	r := job.Runner{Kube: kube, Image: image, ImagePullPolicy: corev1.PullPolicy(j.pullPolicy), Resources: res,
		AntiAffinity: j.antiAffinity, NodeSelector: j.nodeSelector}
	if j.runnerKubeconfig != "" {
		if r.Remote, err = j.remote(conn.Config); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// remote is the runner cluster --runner-kubeconfig names, and how its pods
// reach the target.
func (j *jobFlags) remote(target *rest.Config) (*job.Remote, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: j.runnerKubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: j.runnerContext}).ClientConfig()
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--runner-kubeconfig %s: %w", j.runnerKubeconfig, err))
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--runner-kubeconfig %s: %w", j.runnerKubeconfig, err))
	}
	// Found out now, before the run's namespace and objects are made.
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 10 * time.Second
	if pk, err := kubernetes.NewForConfig(probe); err == nil {
		if _, err := pk.Discovery().ServerVersion(); err != nil {
			return nil, spec.Input(fmt.Errorf("cannot reach the runner cluster %s (--runner-kubeconfig %s): %w: check it, or drop --runner-kubeconfig to run the shards on the target", cfg.Host, j.runnerKubeconfig, err))
		}
	}
	ca := target.CAData
	if len(ca) == 0 && target.CAFile != "" {
		if ca, err = os.ReadFile(target.CAFile); err != nil {
			return nil, fmt.Errorf("reading the target's CA for the runner cluster's pods: %w", err)
		}
	}
	return &job.Remote{Kube: kube, TargetServer: target.Host, TargetCA: ca, TargetServerName: target.ServerName}, nil
}
