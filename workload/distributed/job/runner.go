package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/workload/distributed"
)

// Runner starts a run's shards as an Indexed Job in the run's namespace
// (kb-bench run --shards N --runner job) and watches their pods, so that a
// shard that cannot start or fails ends the run with its pod's reason.
type Runner struct {
	// Kube is the target's cluster, where the shards' rights are made
	// and, unless Remote is set, the Job runs.
	Kube kubernetes.Interface
	// Remote, when set, is a separate runner cluster for the Job
	// (--runner-kubeconfig), so that the load generators do not take CPU
	// from the cluster under test.
	Remote *Remote
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

// Remote is a runner cluster, and how its pods reach the target.
type Remote struct {
	// Kube is the runner cluster's.
	Kube kubernetes.Interface
	// TargetServer, TargetCA and TargetServerName are the target
	// apiserver's URL, CA bundle and TLS server name (when the URL's host
	// is not the one its certificate names) as the runner cluster's pods
	// reach it.
	TargetServer     string
	TargetCA         []byte
	TargetServerName string
}

var _ distributed.ShardRunner = Runner{}

// ObjectName names a run's shard objects: the ServiceAccount, Role,
// RoleBinding and Job in the run's namespace (and, on a runner cluster,
// the Secret ObjectName+"-target"). It is the same in every run (a
// namespace holds one run's at a time), so that the Role a run in an
// existing namespace needs (kb-bench rbac) can name them: the
// coordinator may delete these and no others.
const ObjectName = "kb-bench-shards"

// Rules are the rights r needs in the run's namespace on the target, which
// a run in an existing namespace checks first: to make the shards'
// ServiceAccount, Role and RoleBinding and delete them, by name; with the
// Job on the target, to make the Job, delete it by name, and list and
// remove its pods; with the Job on a runner cluster (Remote), to request
// the shards' ServiceAccount a token instead. A create cannot be limited
// to a name, nor can deleting pods by label.
func (r Runner) Rules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		k8s.Rule("", []string{"serviceaccounts"}, "create"),
		k8s.Named("", []string{"serviceaccounts"}, ObjectName, "delete"),
		k8s.Rule(rbacv1.GroupName, []string{"roles", "rolebindings"}, "create"),
		k8s.Named(rbacv1.GroupName, []string{"roles", "rolebindings"}, ObjectName, "delete"),
	}
	if r.Remote != nil {
		return append(rules, k8s.Named("", []string{"serviceaccounts/token"}, ObjectName, "create"))
	}
	return append(rules,
		k8s.Rule("batch", []string{"jobs"}, "create"),
		k8s.Named("batch", []string{"jobs"}, ObjectName, "delete"),
		k8s.Rule("", []string{"pods"}, "list", "deletecollection"),
	)
}

var _ distributed.RulesNeeder = Runner{}

// Options returns the Options of run's Job.
func (r Runner) Options(run distributed.ShardRun) Options {
	o := Options{
		Name: ObjectName, Namespace: run.Namespace, RunID: run.RunID, Shards: run.Shards,
		Image: r.Image, ImagePullPolicy: r.ImagePullPolicy, Rules: run.Rules, Resources: r.Resources,
		AntiAffinity: r.AntiAffinity, NodeSelector: r.NodeSelector,
	}
	if !run.Deadline.IsZero() {
		o.ActiveDeadline = time.Until(run.Deadline)
	}
	if r.Remote != nil {
		o.Namespace, o.TargetNamespace = "kb-bench-shards-"+run.RunID, run.Namespace
		o.TargetSecret = o.Name + "-target"
	}
	return o
}

// Start creates the ServiceAccount, Role, RoleBinding and Job, and starts
// watching the shard pods.
func (r Runner) Start(ctx context.Context, run distributed.ShardRun) (distributed.ShardGroup, error) {
	objs, err := Build(r.Options(run))
	if err != nil {
		return nil, err
	}
	g := &group{target: r.Kube, kube: r.Kube, objs: objs, remote: r.Remote != nil,
		failed: make(chan error, 1), done: make(chan struct{}), finished: make(chan struct{})}
	if g.remote {
		g.kube = r.Remote.Kube
	}
	if err := g.create(ctx, r.Remote, run); err != nil {
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
	target   kubernetes.Interface // the target's cluster: the shards' rights
	kube     kubernetes.Interface // the Job's cluster
	remote   bool                 // the Job's cluster is a runner cluster
	objs     Objects
	failed   chan error
	done     chan struct{} // closed by Stop
	finished chan struct{} // closed when watch returns
	once     sync.Once

	mu     sync.Mutex
	status string
	// madeNamespace: the Job's namespace on the runner cluster was made
	// for it, and goes with it.
	madeNamespace bool
}

func (g *group) Failed() <-chan error { return g.failed }

// shardPods selects the shard pods.
func (g *group) shardPods() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: k8s.LabelRunID + "=" + g.objs.Job.Labels[k8s.LabelRunID] + "," + LabelComponent + "=" + ComponentShard}
}

// create makes the shards' rights on the target and the Job where it runs:
// on a runner cluster, in a namespace of its own there, with a Secret
// holding a kubeconfig for the shards' ServiceAccount on the target (a
// token that expires with the run).
func (g *group) create(ctx context.Context, remote *Remote, run distributed.ShardRun) error {
	objs := g.objs
	rights := objs.ServiceAccount.Namespace // the run's, on the target
	opts := metav1.CreateOptions{FieldManager: k8s.SetupManager}
	if _, err := g.target.CoreV1().ServiceAccounts(rights).Create(ctx, objs.ServiceAccount, opts); err != nil {
		return fmt.Errorf("creating the shards' ServiceAccount %s: %w", objs.ServiceAccount.Name, err)
	}
	if _, err := g.target.RbacV1().Roles(rights).Create(ctx, objs.Role, opts); err != nil {
		return fmt.Errorf("creating the shards' Role %s: %w", objs.Role.Name, err)
	}
	if _, err := g.target.RbacV1().RoleBindings(rights).Create(ctx, objs.RoleBinding, opts); err != nil {
		return fmt.Errorf("creating the shards' RoleBinding %s: %w", objs.RoleBinding.Name, err)
	}
	ns := objs.Job.Namespace
	if remote != nil {
		seconds := int64(max(time.Until(run.Deadline), 10*time.Minute) / time.Second)
		token, err := g.target.CoreV1().ServiceAccounts(rights).CreateToken(ctx, objs.ServiceAccount.Name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, opts)
		if err != nil {
			return fmt.Errorf("requesting a token for the shards' ServiceAccount %s on the target: %w", objs.ServiceAccount.Name, err)
		}
		kubeconfig, err := cluster.Kubeconfig(&rest.Config{Host: remote.TargetServer, BearerToken: token.Status.Token,
			TLSClientConfig: rest.TLSClientConfig{CAData: remote.TargetCA, ServerName: remote.TargetServerName}})
		if err != nil {
			return err
		}
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: objs.Job.Labels}}
		if _, err := g.kube.CoreV1().Namespaces().Create(ctx, nsObj, opts); err != nil {
			return fmt.Errorf("creating the shards' namespace %s on the runner cluster: %w", ns, err)
		}
		g.madeNamespace = true
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: g.objs.Job.Name + "-target", Namespace: ns, Labels: objs.Job.Labels},
			Data:       map[string][]byte{TargetKubeconfigKey: kubeconfig},
		}
		if _, err := g.kube.CoreV1().Secrets(ns).Create(ctx, secret, opts); err != nil {
			return fmt.Errorf("handing the target's address to the shards (Secret %s on the runner cluster): %w", secret.Name, err)
		}
	}
	if _, err := g.kube.BatchV1().Jobs(ns).Create(ctx, objs.Job, opts); err != nil {
		return fmt.Errorf("creating the shards' Job %s: %w", objs.Job.Name, err)
	}
	return nil
}

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
	tick := time.Tick(poll)
	seen := map[string]string{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), poll+10*time.Second)
		pods, err := g.kube.CoreV1().Pods(g.objs.Job.Namespace).List(ctx, g.shardPods())
		cancel()
		if err == nil {
			status, failure := judgePods(g.objs.Job.Spec.Completions, pods.Items, seen)
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
		case <-tick:
		}
	}
}

// startFailures are the container waiting reasons of a pod that will not
// start without someone's help.
var startFailures = []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError"}

// deletedHint ends the error of a shard whose pod was deleted.
const deletedHint = ": its shard stopped with it (the pods of a run must stay until it ends: not deleted by hand, evicted, nor preempted)"

// judgePods describes the shard pods and returns the first failure: a pod
// that failed, cannot be scheduled or cannot start its container, or that
// is being deleted or is gone (seen holds the pods of earlier looks, by
// name, with their index: judgePods adds pods to it). The pods of a run
// that ends well are neither: they complete, and are removed only once
// the watch stopped.
func judgePods(completions *int32, pods []corev1.Pod, seen map[string]string) (string, error) {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var parts []string
	// A pod deleted is named only when no pod failed: the Job controller
	// deletes the other pods of a Job that failed.
	var deleted error
	for _, name := range slices.Sorted(maps.Keys(seen)) {
		if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == name }) {
			deleted = fmt.Errorf("shard %s (pod %s) was deleted before the run ended%s", seen[name], name, deletedHint)
			break
		}
	}
	for _, p := range pods {
		index := p.Annotations["batch.kubernetes.io/job-completion-index"]
		seen[p.Name] = index
		who := fmt.Sprintf("shard %s (pod %s)", index, p.Name)
		if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded {
			// How its container ended (SIGTERM) follows from that.
			if deleted == nil {
				deleted = fmt.Errorf("%s was deleted before the run ended%s", who, deletedHint)
			}
			continue
		}
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
				err := fmt.Errorf("%s failed (exit %d, %s)", who, term.ExitCode, term.Reason)
				if msg := strings.TrimSpace(term.Message); msg != "" {
					err = fmt.Errorf("%w: %s", err, msg)
				}
				return "", distributed.ShardExited(int(term.ExitCode), err)
			}
		}
		if p.Status.Phase == corev1.PodFailed {
			return "", fmt.Errorf("%s failed: %s %s", who, p.Status.Reason, p.Status.Message)
		}
		parts = append(parts, fmt.Sprintf("pod %s %s", p.Name, state))
	}
	if deleted != nil {
		return "", deleted
	}
	if completions != nil && len(pods) < int(*completions) {
		parts = append(parts, fmt.Sprintf("%d of %d shard pods created (is the Job controller, kube-controller-manager, running?)", len(pods), *completions))
	}
	return strings.Join(parts, "; "), nil
}

// Stop stops watching, deletes the Job (and its pods, also on clusters
// without a garbage collector) and the shards' rights. A done ctx (a
// lost target) ends the requests to the target at once; a runner
// cluster's objects are still removed, within removeTimeout.
func (g *group) Stop(ctx context.Context) error {
	g.once.Do(func() { close(g.done) })
	<-g.finished
	return g.remove(ctx)
}

// removeTimeout bounds the removal of a runner cluster's objects.
const removeTimeout = 30 * time.Second

// remove deletes every object Start made, those not made included.
func (g *group) remove(ctx context.Context) error {
	ns, name := g.objs.Job.Namespace, g.objs.Job.Name
	rights := g.objs.ServiceAccount.Namespace // on the target
	target := ctx
	if g.remote {
		// The runner cluster is still there when the target is lost.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
	}
	gone := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	errs := []error{
		gone(g.target.RbacV1().RoleBindings(rights).Delete(target, name, metav1.DeleteOptions{})),
		gone(g.target.RbacV1().Roles(rights).Delete(target, name, metav1.DeleteOptions{})),
		gone(g.target.CoreV1().ServiceAccounts(rights).Delete(target, name, metav1.DeleteOptions{})),
	}
	// On a runner cluster everything else lives in the namespace made for
	// it: nothing there when it was not made.
	if !g.remote || g.madeNamespace {
		errs = append(errs,
			gone(g.kube.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})),
			gone(g.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, g.shardPods())))
	}
	if g.remote && g.madeNamespace {
		errs = append(errs,
			gone(g.kube.CoreV1().Secrets(ns).Delete(ctx, name+"-target", metav1.DeleteOptions{})),
			gone(g.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})))
	}
	if err := errors.Join(errs...); err != nil {
		hint := fmt.Sprintf("kubectl delete -n %s job,role,rolebinding,serviceaccount %s", ns, name)
		if g.remote {
			hint = fmt.Sprintf("on the runner cluster: kubectl delete namespace %s; on the target: kubectl delete -n %s role,rolebinding,serviceaccount %s", ns, rights, name)
		}
		return fmt.Errorf("removing the shards' Job %s/%s and its rights: %w (%s)", ns, name, err, hint)
	}
	return nil
}
