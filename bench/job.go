package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/internal/ociimage"
	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/distributed"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
	"github.com/kb-bench/kb-bench/workload/leaderelection"
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

// runner is the Job runner on conn's cluster. On a kind target whose
// pods run there, with no --image, the pods run kb-bench's own image,
// made from the running binary, which runner puts into the nodes first
// (selfImage, cluster.KindLoadImage).
func (j JobOptions) runner(ctx context.Context, conn *cluster.Connection, kindCluster, version string, log io.Writer, getenv func(string) string) (distributed.ShardRunner, error) {
	target := conn.Config
	kube, err := kubernetes.NewForConfig(target)
	if err != nil {
		return nil, err
	}
	res, err := j.resources()
	if err != nil {
		return nil, err
	}
	image := cmp.Or(j.Image, defaultImage(version))
	if conn.Target.Kind == spec.TargetKindCluster && j.RunnerKubeconfig == "" {
		if j.Image == "" {
			if err := loadSelf(ctx, kindCluster, image, log, getenv); err != nil {
				return nil, err
			}
		}
		// The shard pods reach the apiserver through its service
		// address: on a kind cluster made moments ago kube-proxy may not
		// have programmed it yet (a cluster KindUp made waited already).
		if err := cluster.WaitServiceNetwork(ctx, target, log); err != nil {
			return nil, err
		}
	}
	r := job.Runner{Kube: kube, Image: image, ImagePullPolicy: corev1.PullPolicy(j.PullPolicy), Resources: res,
		AntiAffinity: j.AntiAffinity, NodeSelector: j.NodeSelector}
	if j.RunnerKubeconfig != "" {
		if r.Remote, err = j.remote(ctx, target); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// defaultImage is the shard image of kb-bench version: kb-bench/kb-bench
// tagged with the version, made a valid tag (a Go pseudo-version's "+dirty"
// becomes "-dirty").
func defaultImage(version string) string {
	tag := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '-'
	}, version)
	tag = strings.TrimLeft(tag, ".-")
	return "kb-bench/kb-bench:" + cmp.Or(tag[:min(len(tag), 128)], "dev")
}

// caBundle is the CA bundle kb-bench's image carries, as make image's.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// loadSelf puts kb-bench's own image, tagged ref, into the nodes of kind
// cluster name that lack it: the running executable, which must be a
// static Linux build, on an empty base (what make image builds).
func loadSelf(ctx context.Context, name, ref string, log io.Writer, getenv func(string) string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding kb-bench's own executable for the shard image: %w", err)
	}
	img, err := selfImageOf(exe, ref)
	if err != nil {
		return err
	}
	began := time.Now()
	loaded, err := cluster.KindLoadImage(ctx, name, img, getenv)
	if err != nil {
		return fmt.Errorf("putting the shard image into the kind cluster's nodes: %w", err)
	}
	if len(loaded) == 0 {
		fmt.Fprintf(log, "kind: the nodes already hold the shard image %s (%s)\n", ref, shortID(img.ID))
		return nil
	}
	fmt.Fprintf(log, "kind: loaded the shard image %s (%s, this kb-bench) into %s in %s\n", ref, shortID(img.ID), strings.Join(loaded, ", "), time.Since(began).Round(100*time.Millisecond))
	return nil
}

// selfImageOf is kb-bench's image made of exe, the running executable, as
// cluster.KindLoadImage takes it. The same binary always gives the same
// image id.
func selfImageOf(exe, ref string) (cluster.KindImage, error) {
	img, err := ociimage.Build(ociimage.Options{Binary: exe, CACerts: caBundle, Arch: runtime.GOARCH,
		Labels: map[string]string{"org.opencontainers.image.title": "kb-bench"}})
	if err != nil {
		return cluster.KindImage{}, spec.Input(fmt.Errorf("--runner job on kind runs the shard pods from an image of this kb-bench, and it cannot be made: %w; "+
			"or build the image yourself (make image), load it (kind load image-archive bin/kb-bench-image.tar --name CLUSTER) and pass --image", err))
	}
	id, err := img.ConfigName()
	if err != nil {
		return cluster.KindImage{}, fmt.Errorf("the shard image's id: %w", err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return cluster.KindImage{}, fmt.Errorf("the shard image's name %q: %w", ref, err)
	}
	return cluster.KindImage{Ref: ref, ID: id.String(), Archive: func(w io.Writer) error { return tarball.Write(tag, img, w) }}, nil
}

// shortID is an image id as docker shows it: 12 hex digits.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	return id[:min(len(id), 12)]
}

// remote is the runner cluster RunnerKubeconfig names, and how its pods
// reach the target.
func (j JobOptions) remote(ctx context.Context, target *rest.Config) (*job.Remote, error) {
	cfg, err := cluster.LoadKubeconfig(ctx, j.RunnerKubeconfig, j.RunnerContext)
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--runner-kubeconfig %s: %w", j.RunnerKubeconfig, err))
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--runner-kubeconfig %s: %w", j.RunnerKubeconfig, err))
	}
	// Found out now, before the run's namespace and objects are made.
	if _, err := cluster.ServerVersion(ctx, cfg); err != nil {
		return nil, spec.Input(fmt.Errorf("cannot reach the runner cluster %s (--runner-kubeconfig %s): %w: check it, or drop --runner-kubeconfig to run the shards on the target", cfg.Host, j.RunnerKubeconfig, err))
	}
	ca := target.CAData
	if len(ca) == 0 && target.CAFile != "" {
		if ca, err = readfile.Read(ctx, target.CAFile, readfile.Small, "the target's CA file"); err != nil {
			return nil, fmt.Errorf("reading the target's CA for the runner cluster's pods: %w", err)
		}
	}
	return &job.Remote{Kube: kube, TargetServer: target.Host, TargetCA: ca, TargetServerName: target.ServerName}, nil
}

// ShardRequest is one shard of a distributed run, as the run's runner
// starts it: a process of kb-bench ('kb-bench shard') or a pod of its Job.
type ShardRequest struct {
	// Namespace and RunID name the run the shard joins.
	Namespace, RunID string
	// Index is the shard's number, from 0; -1 takes it from
	// $JOB_COMPLETION_INDEX (an Indexed Job's pod).
	Index int
	// Kubeconfig is the target's kubeconfig file, "-" to read it from In,
	// "" for the pod's service account.
	Kubeconfig string
	In         io.Reader
	// LiveFD and ResultFD are the listener and the pipe the process
	// runner hands down (0: none): the shard serves its figures on the
	// first and writes its result to the second, however the run ends.
	LiveFD, ResultFD int
}

// Shard runs one shard of a distributed run: it finds the run's
// coordination Lease, runs its share of the writers when the coordinator
// says so, and uploads its result for the coordinator to merge. Of o it
// uses Version, Log, Getenv and ClientLog.
func Shard(ctx context.Context, r ShardRequest, o Options) error {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if r.Namespace == "" || r.RunID == "" {
		return spec.Input(fmt.Errorf("--namespace and --run-id name the run this shard joins: both are needed"))
	}
	if r.Index < 0 {
		v := getenv("JOB_COMPLETION_INDEX")
		i, err := strconv.Atoi(v)
		if err != nil {
			return spec.Input(fmt.Errorf("no --index, and $JOB_COMPLETION_INDEX is %q: give the shard's index", v))
		}
		r.Index = i
	}
	var cfg *rest.Config
	var err error
	switch r.Kubeconfig {
	case "-":
		var b []byte
		if b, err = readfile.FromReader(ctx, r.In, readfile.Kubeconfig, "the kubeconfig"); err == nil {
			cfg, err = clientcmd.RESTConfigFromKubeConfig(b)
		}
	case "":
		// The pod's service account, asked for directly: through
		// clientcmd it would also log a warning into every shard's result.
		cfg, err = rest.InClusterConfig()
	default:
		cfg, err = cluster.LoadKubeconfig(ctx, r.Kubeconfig, "")
	}
	if err != nil {
		return spec.Input(fmt.Errorf("reaching the target: %w (give --kubeconfig, or run in a pod)", err))
	}
	name := getenv("POD_NAME")
	if name == "" {
		host, _ := os.Hostname()
		name = fmt.Sprintf("%s pid %d", host, os.Getpid())
	}
	var liveLn net.Listener
	if r.LiveFD > 0 {
		f := os.NewFile(uintptr(r.LiveFD), "live figures")
		if liveLn, err = net.FileListener(f); err != nil {
			return fmt.Errorf("--live-fd %d is not a listener the coordinator handed down: %w", r.LiveFD, err)
		}
		f.Close()
	}
	var resultOut io.Writer
	if r.ResultFD > 0 {
		f := os.NewFile(uintptr(r.ResultFD), "result hand-off")
		defer f.Close() // the coordinator reads until it is closed
		resultOut = f
	}
	return workload.RunShard(ctx, workload.ShardOptions{
		Options:   workload.Options{Config: cfg, RunID: r.RunID, Version: o.Version, Log: o.Log, ClientLog: o.ClientLog},
		Namespace: r.Namespace, Index: r.Index, Name: name, LiveListener: liveLn, ResultOut: resultOut,
	})
}

// Child runs this process as a child process that a run started of
// kb-bench itself (a leader-election candidate, for the pause fault) when
// it is one, and returns its exit status; it reports false otherwise. A
// program that runs kb-bench's runs calls it first.
func Child() (status int, isChild bool) { return leaderelection.CandidateMain() }
