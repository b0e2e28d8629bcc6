package bench

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/distributed"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
)

// JobOptions are how --runner job runs a distributed run's shards: as the
// pods of an Indexed Job on the target's cluster, or on a separate runner
// cluster.
type JobOptions struct {
	// Image is the kb-bench image the pods run ("":
	// kb-bench/kb-bench:VERSION); PullPolicy IfNotPresent (""), Always or
	// Never.
	Image, PullPolicy string
	// CPU and Memory are what each pod requests and is limited to, as
	// quantities ("2", "500m", "1Gi"); "" sets none.
	CPU, Memory string
	// AntiAffinity spreads the pods over nodes where the scheduler can;
	// NodeSelector runs them only on nodes with these labels.
	AntiAffinity bool
	NodeSelector map[string]string
	// RunnerKubeconfig and RunnerContext name a separate runner cluster
	// for the pods, so they take no CPU from the one under test.
	RunnerKubeconfig, RunnerContext string
}

// check refuses bad quantities and names before anything starts.
func (j JobOptions) check() error {
	if _, err := j.resources(); err != nil {
		return err
	}
	if j.RunnerContext != "" && j.RunnerKubeconfig == "" {
		return spec.Input(fmt.Errorf("--runner-context names a context of --runner-kubeconfig: give that too"))
	}
	switch corev1.PullPolicy(j.PullPolicy) {
	case "", corev1.PullIfNotPresent, corev1.PullAlways, corev1.PullNever:
	default:
		return spec.Input(fmt.Errorf("--image-pull-policy %q: use IfNotPresent, Always or Never", j.PullPolicy))
	}
	return nil
}

// resources are the shard container's requests, equal to its limits.
func (j JobOptions) resources() (corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	// In flag order, so that with both wrong the error names --shard-cpu.
	for _, r := range []struct {
		name           corev1.ResourceName
		value, example string
	}{{corev1.ResourceCPU, j.CPU, "2 or 500m"}, {corev1.ResourceMemory, j.Memory, "1Gi"}} {
		if r.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.value)
		if err != nil || q.Sign() <= 0 {
			return corev1.ResourceRequirements{}, spec.Input(fmt.Errorf("--shard-%s %q is not a positive quantity: use e.g. %s", strings.ToLower(string(r.name)), r.value, r.example))
		}
		list[r.name] = q
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}

// runner is the Job runner on the cluster of target.
func (j JobOptions) runner(ctx context.Context, target *rest.Config, version string) (distributed.ShardRunner, error) {
	kube, err := kubernetes.NewForConfig(target)
	if err != nil {
		return nil, err
	}
	res, err := j.resources()
	if err != nil {
		return nil, err
	}
	r := job.Runner{Kube: kube, Image: cmp.Or(j.Image, "kb-bench/kb-bench:"+version), ImagePullPolicy: corev1.PullPolicy(j.PullPolicy), Resources: res,
		AntiAffinity: j.AntiAffinity, NodeSelector: j.NodeSelector}
	if j.RunnerKubeconfig != "" {
		if r.Remote, err = j.remote(ctx, target); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// remote is the runner cluster RunnerKubeconfig names, and how its pods
// reach the target.
func (j JobOptions) remote(ctx context.Context, target *rest.Config) (*job.Remote, error) {
	// client-go reads the file itself, whole: readfile refuses a device,
	// a FIFO or a huge file first.
	if _, err := readfile.Read(ctx, j.RunnerKubeconfig, readfile.Kubeconfig, "the runner cluster's kubeconfig"); err != nil {
		return nil, spec.Input(fmt.Errorf("%w (check --runner-kubeconfig)", err))
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: j.RunnerKubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: j.RunnerContext}).ClientConfig()
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--runner-kubeconfig %s: %w", j.RunnerKubeconfig, err))
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--runner-kubeconfig %s: %w", j.RunnerKubeconfig, err))
	}
	// Found out now, before the run's namespace and objects are made.
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 10 * time.Second
	if pk, err := kubernetes.NewForConfig(probe); err == nil {
		if _, err := pk.Discovery().ServerVersion(); err != nil {
			return nil, spec.Input(fmt.Errorf("cannot reach the runner cluster %s (--runner-kubeconfig %s): %w: check it, or drop --runner-kubeconfig to run the shards on the target", cfg.Host, j.RunnerKubeconfig, err))
		}
	}
	ca := target.CAData
	if len(ca) == 0 && target.CAFile != "" {
		if ca, err = readfile.Read(ctx, target.CAFile, readfile.Small, "the target's CA file"); err != nil {
			return nil, fmt.Errorf("reading the target's CA for the runner cluster's pods: %w", err)
		}
	}
	return &job.Remote{Kube: kube, TargetServer: target.Host, TargetCA: ca, TargetServerName: target.ServerName}, nil
}
