package kubelettest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster/clustertest"
	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/results/resultstest"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
	"github.com/kb-bench/kb-bench/workload/distributed/job/kubelettest"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// local is a real kube-apiserver and etcd with kube-controller-manager,
// whose Job controller makes the shard pods.
var local = clustertest.Shared{ControllerManager: true}

func TestMain(m *testing.M) { os.Exit(local.Main(m)) }

// bench is what the cases share: the control plane, the image and the
// kubelet that runs the shard pods.
type bench struct {
	cfg   *rest.Config
	kube  kubernetes.Interface
	image kubelettest.Image
	k     *kubelettest.Kubelet
	d     kubelettest.Docker

	mu   sync.Mutex
	hook func(ctx context.Context, pod *corev1.Pod) error
}

// beforeStart runs the current case's hook, if any.
func (b *bench) beforeStart(ctx context.Context, pod *corev1.Pod) error {
	b.mu.Lock()
	hook := b.hook
	b.mu.Unlock()
	if hook == nil {
		return nil
	}
	return hook(ctx, pod)
}

// setHook sets the hook for the rest of the test. Its ctx also ends when
// a wait in t gives up, so a hook that waits for an event is bounded only
// by the test's deadline.
func (b *bench) setHook(t *testing.T, hook func(ctx context.Context, pod *corev1.Pod) error) {
	giveUp := await.Context(t)
	b.mu.Lock()
	b.hook = func(ctx context.Context, pod *corev1.Pod) error {
		ctx, cancel := context.WithCancel(ctx)
		defer context.AfterFunc(giveUp, cancel)()
		defer cancel()
		return hook(ctx, pod)
	}
	b.mu.Unlock()
	t.Cleanup(func() {
		b.mu.Lock()
		b.hook = nil
		b.mu.Unlock()
	})
}

// The Indexed Job kb-bench makes runs for real: the Job controller makes
// its pods, and a kubelet of Docker runs each pod's container from the
// pod's own spec (image from make image, command, env and downward API,
// security context, resources, volumes, the in-cluster service account
// token or the runner cluster's kubeconfig Secret) and reports its exit
// into the pod's status.
func TestJobPodsRunInContainers(t *testing.T) {
	began := time.Now()
	d := kubelettest.NeedDocker(t)
	cfg := local.Config(t)
	b := &bench{cfg: cfg, kube: kubernetes.NewForConfigOrDie(cfg), d: d}
	b.image = kubelettest.BuildImage(t, d)
	t.Logf("image %s (kb-bench %s) built and loaded after %s", b.image.Ref, b.image.Version, time.Since(began).Round(time.Second))
	b.k = kubelettest.StartKubelet(t, kubelettest.Options{
		Kube: b.kube, Docker: d, APIServer: cfg.Host,
		Selector:    job.LabelComponent + "=" + job.ComponentShard,
		BeforeStart: b.beforeStart,
	})

	t.Run("same cluster, in-cluster service account", func(t *testing.T) {
		res := job.Runner{Kube: b.kube, Image: b.image.Ref, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		}}
		runID := newRunID("same")
		b.mergesExactly(t, runID, res, "kb-bench-"+runID)
	})
	t.Run("runner cluster, kubeconfig Secret", func(t *testing.T) {
		// The same control plane stands for the runner cluster: the pods
		// get no token of it, only the Secret's kubeconfig of the target.
		remote := &job.Remote{Kube: b.kube, TargetServer: cfg.Host, TargetCA: cfg.CAData}
		runID := newRunID("remote")
		// Being the target too, this cluster's counters must not see the
		// ConfigMap kube-controller-manager puts in the runner's new
		// namespace during the measured window: the shards start after it.
		b.setHook(t, func(ctx context.Context, pod *corev1.Pod) error {
			return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				_, err := b.kube.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
				return err == nil, nil
			})
		})
		b.mergesExactly(t, runID, job.Runner{Kube: b.kube, Image: b.image.Ref, Remote: remote}, "kb-bench-shards-"+runID)
	})
	for _, tc := range []struct {
		name                  string
		group, resource, verb string
		want                  string
	}{
		{"the scenario's writes", "", "configmaps", "update", "update configmaps"},
		{"the shard's own Lease", "coordination.k8s.io", "leases", "update", "update leases.coordination.k8s.io"},
	} {
		t.Run("a Role without "+tc.verb+" "+tc.resource, func(t *testing.T) {
			runID := newRunID("rbac")
			ns := "kb-bench-" + runID
			var once sync.Once
			b.setHook(t, func(ctx context.Context, pod *corev1.Pod) error {
				var err error
				once.Do(func() { err = b.removeRight(ctx, ns, job.ObjectName, tc.group, tc.resource, tc.verb) })
				return err
			})
			_, err := b.run(t, runID, job.Runner{Kube: b.kube, Image: b.image.Ref}, 3*time.Second, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "shard ") {
				t.Fatalf("want the run to fail, a shard naming the missing permission %q; got %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "the runner says") {
				t.Errorf("a shard said why it failed, yet the runner's view of the pods is added as if they never came: %v", err)
			}
			t.Logf("the run failed: %v", err)
			b.nothingLeft(t, runID, ns)
		})
	}
	t.Run("a container killed mid-run", func(t *testing.T) {
		runID := newRunID("kill")
		ns := "kb-bench-" + runID
		inWindow := make(chan struct{})
		var once sync.Once
		progress := func(time.Duration, metrics.SeriesPoint) { once.Do(func() { close(inWindow) }) }
		done := make(chan error, 1)
		go func() {
			_, err := b.run(t, runID, job.Runner{Kube: b.kube, Image: b.image.Ref}, 5*time.Minute, progress)
			done <- err
		}()
		select {
		case <-inWindow:
		case err := <-done:
			t.Fatalf("the run ended before its measured window: %v", err)
		}
		victim := b.shardPod(t, ns, "1")
		if err := b.k.Kill(t.Context(), ns, victim); err != nil {
			t.Fatal(err)
		}
		err := <-done
		want := fmt.Sprintf("shard 1 (pod %s) failed (exit 137", victim)
		if err == nil || !strings.Contains(err.Error(), want) || strings.HasSuffix(err.Error(), ": ") {
			t.Fatalf("want the run to fail naming the killed shard (%q); got %v", want, err)
		}
		t.Logf("the run failed: %v", err)
		b.nothingLeft(t, runID, ns)
	})
	t.Logf("the test took %s", time.Since(began).Round(time.Second))
}

// newRunID is a run id of its own for a case.
func newRunID(what string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return what + "-" + hex.EncodeToString(b)
}

// run runs the counter scenario in 3 shards with runner; the measured
// window lasts d.
func (b *bench) run(t *testing.T, runID string, runner job.Runner, d time.Duration, progress func(time.Duration, metrics.SeriesPoint)) (*workload.Outcome, error) {
	s := spec.Spec{Writers: 6, Shards: 3, Runner: spec.RunnerJob, Duration: spec.D(d), Warmup: spec.D(time.Second)}
	s.Target.ControllerManager = true
	r, errs := workload.Resolve(s)
	if len(errs) > 0 {
		t.Fatal(spec.Describe(errs))
	}
	return workload.Run(t.Context(), r, workload.Options{
		Config: b.cfg, RunID: runID, Version: b.image.Version, Runner: runner,
		Log: logWriter{t}, Progress: progress,
	})
}

// mergesExactly runs 3 shards to one merged result, which the apiserver's
// counters match exactly, from containers that ran the Job's pod spec
// (podNS is where the pods are) and left nothing.
func (b *bench) mergesExactly(t *testing.T, runID string, runner job.Runner, podNS string) {
	began := time.Now()
	out, err := b.run(t, runID, runner, 3*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := out.Result
	cp := local.ControlPlane(t)
	res.Target = spec.TargetInfo{Kind: spec.TargetLocal, Server: cp.State().Server, ServerVersion: cp.State().KubeVersion,
		Storage: cp.State().Storage, EtcdVersion: cp.State().EtcdVersion, ControllerManager: true}
	var table bytes.Buffer
	if err := text.WriteTable(&table, res, out.Report.Rows()); err != nil {
		t.Fatal(err)
	}
	t.Logf("the merged result (the run took %s):\n%s", time.Since(began).Round(100*time.Millisecond), table.String())
	if err := resultstest.ServerAgrees(res.Server); err != nil {
		t.Errorf("the apiserver's counters do not match the shards' requests: %v", err)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "client-go") {
			t.Errorf("a shard's client-go warned: %q", w)
		}
	}
	if res.Summary.Ops == 0 || res.Summary.LostUpdates == nil || *res.Summary.LostUpdates != 0 {
		t.Errorf("want operations and no lost updates: %d ops, %s lost", res.Summary.Ops, results.FormatLost(res.Summary.LostUpdates))
	}
	if len(res.Shards) != 3 {
		t.Fatalf("want 3 shards in the result, got %+v", res.Shards)
	}
	var ops int64
	for i, sh := range res.Shards {
		ops += sh.Ops
		// The downward API's POD_NAME names the shard.
		if prefix := fmt.Sprintf("%s-%d-", job.ObjectName, i); sh.Index != i || !strings.HasPrefix(sh.Name, prefix) {
			t.Errorf("shard %d is named %q, want its pod's name %s...", sh.Index, sh.Name, prefix)
		}
	}
	if ops != res.Summary.Ops {
		t.Errorf("the shards ran %d ops, the merged result says %d", ops, res.Summary.Ops)
	}
	b.nothingLeft(t, runID, podNS) // the containers too: every exit is in
	var exits []kubelettest.Exit
	for _, e := range b.k.Exits() {
		if e.Namespace == podNS {
			exits = append(exits, e)
		}
	}
	if len(exits) != 3 {
		t.Fatalf("want 3 containers to have run in %s, got %+v", podNS, exits)
	}
	for _, e := range exits {
		if e.ExitCode != 0 {
			t.Errorf("pod %s exited %d: %s", e.Pod, e.ExitCode, e.Message)
		}
		// A read-only root, with nothing writable but what the pod
		// template mounts (and the termination-message file every
		// kubelet gives).
		if !slices.Contains(e.Args, "--read-only") {
			t.Errorf("pod %s's container ran with a writable root: %q", e.Pod, e.Args)
		}
		if w := writableMounts(e.Args); !slices.Equal(w, []string{"/tmp", corev1.TerminationMessagePathDefault}) {
			t.Errorf("pod %s's container could write to %q, want /tmp (the template's emptyDir) and the termination message only", e.Pod, w)
		}
	}
}

// writableMounts are the destinations of the writable --mounts of docker
// create arguments.
func writableMounts(args []string) []string {
	var out []string
	for i, a := range args {
		if a != "--mount" || i+1 == len(args) {
			continue
		}
		opts := strings.Split(args[i+1], ",")
		if slices.Contains(opts, "readonly") {
			continue
		}
		for _, o := range opts {
			if dst, ok := strings.CutPrefix(o, "dst="); ok {
				out = append(out, dst)
			}
		}
	}
	return out
}

// shardPod is the name of the pod that runs shard index in ns.
func (b *bench) shardPod(t *testing.T, ns, index string) string {
	t.Helper()
	pods, err := b.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: job.LabelComponent + "=" + job.ComponentShard})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Annotations["batch.kubernetes.io/job-completion-index"] == index {
			return p.Name
		}
	}
	t.Fatalf("no pod of shard %s in %s", index, ns)
	return ""
}

// removeRight takes verb on group/resource out of the shards' Role, and
// waits until the apiserver's authorizer refuses it to their
// ServiceAccount.
func (b *bench) removeRight(ctx context.Context, ns, name, group, resource, verb string) error {
	roles := b.kube.RbacV1().Roles(ns)
	role, err := roles.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	removed := false
	for i, r := range role.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			role.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == verb })
			removed = true
		}
	}
	if !removed {
		return fmt.Errorf("the shards' Role %s/%s does not grant %s %s to take away: %+v", ns, name, verb, resource, role.Rules)
	}
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		return err
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + name,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource},
	}}
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := b.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && !got.Status.Allowed, err
	})
}

// nothingLeft waits until nothing of run runID is left: no container of
// its pods' namespace, no Job, pod, Role, RoleBinding, ServiceAccount or
// Secret of the run, and none of its namespaces. A cleanup that never
// happens fails the test near its deadline.
func (b *bench) nothingLeft(t *testing.T, runID string, namespaces ...string) {
	t.Helper()
	namespaces = append([]string{"kb-bench-" + runID}, namespaces...)
	selector := metav1.ListOptions{LabelSelector: scenario.LabelRunID + "=" + runID}
	ctx := t.Context()
	await.Until(t, "nothing of run "+runID+" to be left", func() error {
		var left []string
		count := func(what string, n int, err error) {
			if err != nil {
				left = append(left, fmt.Sprintf("%s: %v", what, err))
			} else if n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, what))
			}
		}
		jobs, err := b.kube.BatchV1().Jobs("").List(ctx, selector)
		count("jobs", len(jobs.Items), err)
		pods, err := b.kube.CoreV1().Pods("").List(ctx, selector)
		count("pods", len(pods.Items), err)
		roles, err := b.kube.RbacV1().Roles("").List(ctx, selector)
		count("roles", len(roles.Items), err)
		bindings, err := b.kube.RbacV1().RoleBindings("").List(ctx, selector)
		count("role bindings", len(bindings.Items), err)
		accounts, err := b.kube.CoreV1().ServiceAccounts("").List(ctx, selector)
		count("service accounts", len(accounts.Items), err)
		secrets, err := b.kube.CoreV1().Secrets("").List(ctx, selector)
		count("secrets", len(secrets.Items), err)
		for _, ns := range namespaces {
			if _, err := b.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				count("namespace "+ns, 1, nil)
			}
			ids, err := b.d.Containers(ctx, kubelettest.LabelPodNamespace, ns)
			count("containers of pods of "+ns, len(ids), err)
		}
		if len(left) > 0 {
			return fmt.Errorf("left behind: %s", strings.Join(left, ", "))
		}
		return nil
	})
}

// logWriter writes a run's log lines to the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
