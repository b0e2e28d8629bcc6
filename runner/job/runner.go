package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// Runner starts a run's shards as an Indexed Job in the run's namespace
// (kb-bench run --shards N --runner job) and watches their pods, so that a
// shard that cannot start or fails ends the run with its pod's reason.
type Runner struct {
	// Kube is the cluster the Job runs in: the target's.
	Kube kubernetes.Interface
	// Image, ImagePullPolicy, Resources, AntiAffinity and NodeSelector
	// are as in Options.
	Image           string
	ImagePullPolicy corev1.PullPolicy
	Resources       corev1.ResourceRequirements
	AntiAffinity    bool
	NodeSelector    map[string]string
	// Poll is how often the pods are looked at (default a second).
	Poll time.Duration
}

var _ workload.ShardRunner = Runner{}

// Options returns the Options of run's Job.
func (r Runner) Options(run workload.ShardRun) Options {
	o := Options{
		Name: "kb-bench-" + run.RunID, Namespace: run.Namespace, RunID: run.RunID, Shards: run.Shards,
		Image: r.Image, ImagePullPolicy: r.ImagePullPolicy, Rules: run.Rules, Resources: r.Resources,
		AntiAffinity: r.AntiAffinity, NodeSelector: r.NodeSelector,
	}
	if !run.Deadline.IsZero() {
		o.ActiveDeadline = time.Until(run.Deadline)
	}
	return o
}

// Start creates the ServiceAccount, Role, RoleBinding and Job, and starts
// watching the shard pods.
func (r Runner) Start(ctx context.Context, run workload.ShardRun) (workload.ShardGroup, error) {
	objs, err := Build(r.Options(run))
	if err != nil {
		return nil, err
	}
	g := &group{kube: r.Kube, objs: objs, failed: make(chan error, 1), done: make(chan struct{}), finished: make(chan struct{})}
	ns := run.Namespace
	create := func() error {
		opts := metav1.CreateOptions{FieldManager: scenario.SetupManager}
		if _, err := r.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, objs.ServiceAccount, opts); err != nil {
			return fmt.Errorf("creating the shards' ServiceAccount %s: %w", objs.ServiceAccount.Name, err)
		}
		if _, err := r.Kube.RbacV1().Roles(ns).Create(ctx, objs.Role, opts); err != nil {
			return fmt.Errorf("creating the shards' Role %s: %w", objs.Role.Name, err)
		}
		if _, err := r.Kube.RbacV1().RoleBindings(ns).Create(ctx, objs.RoleBinding, opts); err != nil {
			return fmt.Errorf("creating the shards' RoleBinding %s: %w", objs.RoleBinding.Name, err)
		}
		if _, err := r.Kube.BatchV1().Jobs(ns).Create(ctx, objs.Job, opts); err != nil {
			return fmt.Errorf("creating the shards' Job %s: %w", objs.Job.Name, err)
		}
		return nil
	}
	if err := create(); err != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		close(g.done)
		close(g.finished)
		return nil, errors.Join(err, g.remove(sctx))
	}
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	go g.watch(poll)
	return g, nil
}

// group is a started Job.
type group struct {
	kube     kubernetes.Interface
	objs     Objects
	failed   chan error
	done     chan struct{} // closed by Stop
	finished chan struct{} // closed when watch returns
	once     sync.Once

	mu     sync.Mutex
	status string
}

func (g *group) Failed() <-chan error { return g.failed }

// Status says where each shard pod is, for a coordinator that waited for
// them in vain.
func (g *group) Status() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.status
}

// watch looks at the shard pods every poll until Stop, and reports the
// first that cannot start or failed.
func (g *group) watch(poll time.Duration) {
	defer close(g.finished)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), poll+10*time.Second)
		pods, err := g.kube.CoreV1().Pods(g.objs.Job.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: scenario.LabelRunID + "=" + g.objs.Job.Labels[scenario.LabelRunID] + "," + LabelComponent + "=" + ComponentShard,
		})
		cancel()
		if err == nil {
			status, failure := judgePods(g.objs.Job.Spec.Completions, pods.Items)
			g.mu.Lock()
			g.status = status
			g.mu.Unlock()
			if failure != nil {
				g.failed <- failure
				return
			}
		}
		select {
		case <-g.done:
			return
		case <-t.C:
		}
	}
}

// startFailures are the container waiting reasons of a pod that will not
// start without someone's help.
var startFailures = []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff"}

// judgePods describes the shard pods and returns the first failure: a pod
// that failed, cannot be scheduled or cannot start its container.
func judgePods(completions *int32, pods []corev1.Pod) (string, error) {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var parts []string
	for _, p := range pods {
		index := p.Annotations["batch.kubernetes.io/job-completion-index"]
		who := fmt.Sprintf("shard %s (pod %s)", index, p.Name)
		state := string(p.Status.Phase)
		if p.Spec.NodeName == "" {
			state += ", no node assigned"
		} else {
			state += " on " + p.Spec.NodeName
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return "", fmt.Errorf("%s cannot be scheduled: %s", who, c.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && slices.Contains(startFailures, w.Reason) {
				hint := ""
				if strings.Contains(w.Reason, "Pull") {
					hint = " (build the image with make image and load it into the nodes: kind load image-archive bin/kb-bench-image.tar, or push it and give --image)"
				}
				return "", fmt.Errorf("%s cannot start: %s: %s%s", who, w.Reason, w.Message, hint)
			}
			if term := cs.State.Terminated; term != nil && term.ExitCode != 0 {
				return "", fmt.Errorf("%s failed (exit %d, %s): %s", who, term.ExitCode, term.Reason, strings.TrimSpace(term.Message))
			}
		}
		if p.Status.Phase == corev1.PodFailed {
			return "", fmt.Errorf("%s failed: %s %s", who, p.Status.Reason, p.Status.Message)
		}
		parts = append(parts, fmt.Sprintf("pod %s %s", p.Name, state))
	}
	if completions != nil && len(pods) < int(*completions) {
		parts = append(parts, fmt.Sprintf("%d of %d shard pods created (is the Job controller, kube-controller-manager, running?)", len(pods), *completions))
	}
	return strings.Join(parts, "; "), nil
}

// Stop stops watching, deletes the Job (and its pods, also on clusters
// without a garbage collector) and the shards' rights.
func (g *group) Stop(ctx context.Context) error {
	g.once.Do(func() { close(g.done) })
	<-g.finished
	return g.remove(ctx)
}

// remove deletes every object Start made, those not made included.
func (g *group) remove(ctx context.Context) error {
	ns, name := g.objs.Job.Namespace, g.objs.Job.Name
	gone := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	background := metav1.DeletePropagationBackground
	errs := []error{
		gone(g.kube.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background})),
		gone(g.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
			LabelSelector: scenario.LabelRunID + "=" + g.objs.Job.Labels[scenario.LabelRunID] + "," + LabelComponent + "=" + ComponentShard,
		})),
		gone(g.kube.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{})),
		gone(g.kube.RbacV1().Roles(ns).Delete(ctx, name, metav1.DeleteOptions{})),
		gone(g.kube.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{})),
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing the shards' Job %s/%s and its rights: %w (kubectl delete -n %s job,role,rolebinding,serviceaccount %s)", ns, name, err, ns, name)
	}
	return nil
}
