// Package kubelettest plays the kubelet, and the scheduler, for the pods
// of a Job on a control plane that has no node (the local one with
// kube-controller-manager, whose Job controller makes the pods): it
// registers a Node, binds the pods it is given to it, runs each pod's
// container with Docker as the pod's own spec says (DockerRun), and
// reports the container's state into the pod's status as a kubelet does,
// so that the Job controller and whoever watches the pods see them start,
// succeed and fail. Deleted pods have their containers stopped and are
// then removed, as a kubelet confirms a graceful deletion.
package kubelettest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Options configure a Kubelet.
type Options struct {
	// Kube is the cluster's admin client.
	Kube kubernetes.Interface
	// Docker runs the containers.
	Docker Docker
	// APIServer is the apiserver's URL as the containers reach it (the
	// kubernetes Service's address: there is no kube-proxy here).
	APIServer string
	// Selector is the label selector of the pods this kubelet places on
	// its node and runs; other pods it leaves alone.
	Selector string
	// Dir is where the kubelet's directory is made (volumes, termination
	// messages); it is removed by Stop.
	Dir string
	// BeforeStart, when set, is called before a pod's container is
	// created; an error keeps the container from being created, as a
	// CreateContainerConfigError.
	BeforeStart func(ctx context.Context, pod *corev1.Pod) error
	// Log receives what the kubelet does (nil: nothing).
	Log func(format string, args ...any)
}

// Kubelet runs the selected pods on a Node of its own. Stop it with Stop.
type Kubelet struct {
	o        Options
	node     Node
	ctx      context.Context
	cancel   context.CancelFunc
	factory  informers.SharedInformerFactory
	stopInf  chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once

	mu      sync.Mutex
	stopped bool
	pods    map[types.UID]*podWorker
	exits   []Exit
	errs    []error
}

// Exit is a container that ran to its end.
type Exit struct {
	Namespace, Pod string
	// Index is the pod's completion index (an Indexed Job's), if any.
	Index string
	// Args are the docker create arguments it ran with.
	Args     []string
	ExitCode int
	Reason   string
	Message  string
	Started  time.Time
	Finished time.Time
}

// podWorker is one pod this kubelet took.
type podWorker struct {
	namespace, name string
	terminate       chan struct{} // closed when the pod is being deleted
	once            sync.Once
	container       string // its container's id, once created (under Kubelet.mu)
}

func (w *podWorker) deleted() { w.once.Do(func() { close(w.terminate) }) }

// Labels of the node, as a kubelet sets them.
const (
	labelHostname = "kubernetes.io/hostname"
	labelOS       = "kubernetes.io/os"
	labelArch     = "kubernetes.io/arch"
)

// containerLabel marks the containers of a kubelettest node.
const containerLabel = "io.kb-bench.kubelettest.node"

// Start registers a Node (Ready, with a Lease it renews) and starts
// placing and running the selected pods.
func Start(ctx context.Context, o Options) (*Kubelet, error) {
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	u, err := url.Parse(o.APIServer)
	if err != nil {
		return nil, fmt.Errorf("the apiserver's URL %q: %w", o.APIServer, err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("the apiserver's URL %q: %w", o.APIServer, err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "kubelettest-" + hex.EncodeToString(suffix)
	dir, err := os.MkdirTemp(o.Dir, name+"-")
	if err != nil {
		return nil, err
	}
	k := &Kubelet{o: o, stopInf: make(chan struct{}), pods: map[types.UID]*podWorker{}, node: Node{
		Name:   name,
		Labels: map[string]string{labelHostname: name, labelOS: "linux", labelArch: goruntime.GOARCH},
		IP:     "127.0.0.1", APIHost: host, APIPort: port, Dir: dir, ContainerLabel: containerLabel,
	}}
	k.ctx, k.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := k.register(ctx); err != nil {
		return nil, errors.Join(err, k.Stop(context.WithoutCancel(ctx)))
	}
	k.factory = informers.NewSharedInformerFactoryWithOptions(o.Kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = o.Selector }))
	inf := k.factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.observe(obj, false) },
		UpdateFunc: func(_, obj any) { k.observe(obj, false) },
		DeleteFunc: func(obj any) { k.observe(obj, true) },
	}); err != nil {
		return nil, errors.Join(err, k.Stop(context.WithoutCancel(ctx)))
	}
	k.factory.Start(k.stopInf)
	k.wg.Add(1)
	go k.heartbeat()
	return k, nil
}

// NodeName is the name of the kubelet's Node.
func (k *Kubelet) NodeName() string { return k.node.Name }

// register creates the Node, says it is Ready, and creates its Lease.
func (k *Kubelet) register(ctx context.Context) error {
	nodes := k.o.Kube.CoreV1().Nodes()
	_, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.node.Name, Labels: k.node.Labels}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("registering node %s: %w", k.node.Name, err)
	}
	version, err := k.o.Docker.ServerVersion(ctx)
	if err != nil {
		return err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourcePods:   resource.MustParse("110"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
	}
	status := corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity.DeepCopy(),
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelettest runs this node's pods with Docker", LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.node.IP}, {Type: corev1.NodeHostName, Address: k.node.Name}},
		NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: goruntime.GOARCH,
			ContainerRuntimeVersion: "docker://" + version, KubeletVersion: "kubelettest"},
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if _, err := nodes.Patch(ctx, k.node.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("reporting node %s ready: %w", k.node.Name, err)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: k.node.Name, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &k.node.Name, LeaseDurationSeconds: new(int32(40)), RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	if _, err := k.o.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s's Lease: %w", k.node.Name, err)
	}
	return nil
}

// heartbeat renews the node's Lease, so that the node lifecycle
// controller keeps it Ready (and evicts nothing).
func (k *Kubelet) heartbeat() {
	defer k.wg.Done()
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	leases := k.o.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
		}
		l, err := leases.Get(k.ctx, k.node.Name, metav1.GetOptions{})
		if err == nil {
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, err = leases.Update(k.ctx, l, metav1.UpdateOptions{})
		}
		if err != nil && k.ctx.Err() == nil {
			k.o.Log("kubelet: renewing node %s's Lease: %v", k.node.Name, err)
		}
	}
}

// observe takes a pod event: a new pod of the selector gets a worker, a
// deleted one has its worker told.
func (k *Kubelet) observe(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	w := k.pods[pod.UID]
	if w == nil {
		theirs := (pod.Spec.NodeName != "" && pod.Spec.NodeName != k.node.Name) ||
			(pod.Spec.NodeName == "" && pod.Spec.SchedulerName != corev1.DefaultSchedulerName)
		over := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		if deleted || pod.DeletionTimestamp != nil || theirs || over {
			return
		}
		w = &podWorker{namespace: pod.Namespace, name: pod.Name, terminate: make(chan struct{})}
		k.pods[pod.UID] = w
		k.wg.Add(1)
		go k.run(w, pod.DeepCopy())
		return
	}
	if deleted || pod.DeletionTimestamp != nil {
		w.deleted()
	}
}

// problem records something the test should fail on.
func (k *Kubelet) problem(err error) {
	k.o.Log("kubelet: PROBLEM: %v", err)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.errs = append(k.errs, err)
}

// Err returns what went wrong that no kubelet should meet: a pod spec it
// could not translate, a container it could not run.
func (k *Kubelet) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return errors.Join(k.errs...)
}

// Exits returns the containers that ran to their end, in that order.
func (k *Kubelet) Exits() []Exit {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]Exit(nil), k.exits...)
}

// Kill kills pod namespace/name's container with SIGKILL, as the
// kernel's OOM killer or a crash would end it.
func (k *Kubelet) Kill(ctx context.Context, namespace, name string) error {
	k.mu.Lock()
	id := ""
	for _, w := range k.pods {
		if w.namespace == namespace && w.name == name {
			id = w.container
		}
	}
	k.mu.Unlock()
	if id == "" {
		return fmt.Errorf("pod %s/%s has no container on node %s", namespace, name, k.node.Name)
	}
	return k.o.Docker.Kill(ctx, id)
}

// run takes one pod from binding to its container's end, and confirms
// its deletion.
func (k *Kubelet) run(w *podWorker, pod *corev1.Pod) {
	defer k.wg.Done()
	ctx := k.ctx
	who := pod.Namespace + "/" + pod.Name
	if pod.Spec.NodeName == "" {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: k.node.Name},
		}
		if err := k.o.Kube.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			if ctx.Err() == nil && !apierrors.IsNotFound(err) {
				k.problem(fmt.Errorf("binding pod %s to node %s: %w", who, k.node.Name, err))
			}
			return
		}
		pod.Spec.NodeName = k.node.Name
		k.o.Log("kubelet: pod %s bound to node %s", who, k.node.Name)
	}
	defer func() {
		k.awaitDeletion(w, pod)
		_ = os.RemoveAll(filepath.Join(k.node.Dir, string(pod.UID)))
	}()
	c, err := DockerRun(pod, k.node)
	if err != nil {
		k.problem(err)
		k.report(pod, waiting("CreateContainerConfigError", err.Error(), pod))
		return
	}
	if k.o.BeforeStart != nil {
		if err := k.o.BeforeStart(ctx, pod); err != nil {
			k.problem(fmt.Errorf("before starting pod %s: %w", who, err))
			k.report(pod, waiting("CreateContainerConfigError", err.Error(), pod))
			return
		}
	}
	if !k.prepare(ctx, w, pod, c) {
		return
	}
	present, err := k.o.Docker.ImagePresent(ctx, c.Image)
	if err != nil {
		k.problem(err)
		return
	}
	if !present && c.ImagePullPolicy == corev1.PullNever {
		k.report(pod, waiting("ErrImageNeverPull", fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image), pod))
		return
	}
	id, err := k.o.Docker.Create(ctx, c.Args)
	if err != nil {
		reason := "CreateContainerError"
		if !present {
			reason = "ErrImagePull"
		} else if ctx.Err() == nil {
			k.problem(fmt.Errorf("pod %s: %w", who, err))
		}
		k.report(pod, waiting(reason, err.Error(), pod))
		return
	}
	k.mu.Lock()
	w.container = id
	k.mu.Unlock()
	defer func() { _ = k.o.Docker.Remove(context.WithoutCancel(ctx), id) }()
	select {
	case <-w.terminate: // deleted before it started
		return
	default:
	}
	if err := k.o.Docker.Start(ctx, id); err != nil {
		if ctx.Err() == nil {
			k.problem(fmt.Errorf("pod %s: %w", who, err))
		}
		now := metav1.Now()
		k.report(pod, terminated(pod, id, "", corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: now, FinishedAt: now}))
		return
	}
	info, err := k.o.Docker.Inspect(ctx, id)
	if err != nil {
		k.problem(err)
		return
	}
	k.o.Log("kubelet: pod %s runs container %.12s: docker create %q", who, id, c.Args)
	k.report(pod, running(pod, id, info))
	exited := make(chan error, 1)
	go func() {
		_, err := k.o.Docker.Wait(ctx, id)
		exited <- err
	}()
	select {
	case err = <-exited:
	case <-w.terminate:
		// A graceful deletion: SIGTERM, and SIGKILL after the grace
		// period (the container's --stop-timeout).
		k.o.Log("kubelet: pod %s is being deleted: stopping its container", who)
		if err := k.o.Docker.Stop(ctx, id); err != nil && ctx.Err() == nil {
			k.problem(err)
		}
		err = <-exited
	case <-ctx.Done():
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			k.problem(fmt.Errorf("waiting for pod %s's container: %w", who, err))
		}
		return
	}
	if info, err = k.o.Docker.Inspect(ctx, id); err != nil {
		k.problem(err)
		return
	}
	state := corev1.ContainerStateTerminated{
		ExitCode: int32(info.State.ExitCode), Reason: "Completed", Message: k.message(ctx, c, id, info.State.ExitCode),
		StartedAt: metav1.NewTime(info.State.StartedAt), FinishedAt: metav1.NewTime(info.State.FinishedAt), ContainerID: "docker://" + id,
	}
	switch {
	case info.State.OOMKilled:
		state.Reason = "OOMKilled"
	case state.ExitCode != 0:
		state.Reason = "Error"
	}
	k.report(pod, terminated(pod, id, info.Image, state))
	k.o.Log("kubelet: pod %s's container exited %d (%s)", who, state.ExitCode, state.Reason)
	if state.ExitCode != 0 {
		if out, err := k.o.Docker.Logs(ctx, id, 20); err == nil {
			k.o.Log("kubelet: pod %s's log ends with:\n%s", who, out)
		}
	}
	k.mu.Lock()
	k.exits = append(k.exits, Exit{Namespace: pod.Namespace, Pod: pod.Name, Index: pod.Annotations[completionIndex], Args: c.Args,
		ExitCode: int(state.ExitCode), Reason: state.Reason, Message: state.Message, Started: info.State.StartedAt, Finished: info.State.FinishedAt})
	k.mu.Unlock()
}

// completionIndex is the annotation of an Indexed Job's pod's index.
const completionIndex = "batch.kubernetes.io/job-completion-index"

// Termination messages are cut as the kubelet cuts them.
const (
	messageMaxBytes = 4096 // from the file
	logTailLines    = 80   // from the log, FallbackToLogsOnError
	logTailBytes    = 2048
)

// message is the container's termination message: its file's, or the end
// of its log when that is empty and the container failed with
// FallbackToLogsOnError.
func (k *Kubelet) message(ctx context.Context, c *Container, id string, exitCode int) string {
	b, err := os.ReadFile(c.TerminationLog)
	if err != nil {
		k.problem(fmt.Errorf("reading the termination message: %w", err))
	}
	if len(b) > messageMaxBytes {
		b = b[:messageMaxBytes]
	}
	if len(b) == 0 && c.FallbackToLogs && exitCode != 0 {
		if b, err = k.o.Docker.Logs(ctx, id, logTailLines); err != nil {
			k.problem(err)
		}
		if len(b) > logTailBytes {
			b = b[len(b)-logTailBytes:]
		}
	}
	return string(b)
}

// prepare fills the pod's volumes and its termination-message file on the
// host. A Secret or ConfigMap not there yet (kube-root-ca.crt is made
// just after its namespace) is waited for, as the kubelet retries; any
// other failure is reported and ends the pod's start.
func (k *Kubelet) prepare(ctx context.Context, w *podWorker, pod *corev1.Pod, c *Container) bool {
	for {
		err := k.fill(ctx, pod, c)
		if err == nil {
			return true
		}
		if !apierrors.IsNotFound(err) {
			if ctx.Err() == nil {
				k.problem(fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
			k.report(pod, waiting("CreateContainerConfigError", err.Error(), pod))
			return false
		}
		k.report(pod, waiting("ContainerCreating", err.Error(), pod))
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-t.C:
		case <-w.terminate:
			t.Stop()
			return false
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// fill writes the pod's volumes and an empty termination-message file
// (writable by the container's user, whoever it is).
func (k *Kubelet) fill(ctx context.Context, pod *corev1.Pod, c *Container) error {
	if err := os.MkdirAll(filepath.Dir(c.TerminationLog), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(c.TerminationLog, nil, 0o666); err != nil {
		return err
	}
	if err := os.Chmod(c.TerminationLog, 0o666); err != nil {
		return err
	}
	for _, v := range c.Volumes {
		if err := os.MkdirAll(v.Dir, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(v.Dir, v.Mode); err != nil {
			return err
		}
		for _, s := range v.Sources {
			files, err := k.resolve(ctx, pod, s)
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			for name, data := range files {
				p := filepath.Join(v.Dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, data, s.Mode); err != nil {
					return err
				}
				if err := os.Chmod(p, s.Mode); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// resolve reads what a volume source holds: a Secret's or ConfigMap's
// keys, a service account token bound to the pod (TokenRequest, as the
// kubelet asks for it), or fixed files.
func (k *Kubelet) resolve(ctx context.Context, pod *corev1.Pod, s Source) (map[string][]byte, error) {
	var data map[string][]byte
	var err error
	switch {
	case s.Token != nil:
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: new(int64(s.Token.Expiration / time.Second)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}
		if s.Token.Audience != "" {
			req.Spec.Audiences = []string{s.Token.Audience}
		}
		tok, err := k.o.Kube.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, s.Token.ServiceAccount, req, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("a token for service account %s: %w", s.Token.ServiceAccount, err)
		}
		return map[string][]byte{s.Token.Path: []byte(tok.Status.Token)}, nil
	case s.Files != nil:
		return s.Files, nil
	case s.Secret != "":
		var sec *corev1.Secret
		if sec, err = k.o.Kube.CoreV1().Secrets(pod.Namespace).Get(ctx, s.Secret, metav1.GetOptions{}); err == nil {
			data = sec.Data
		}
	case s.ConfigMap != "":
		var cm *corev1.ConfigMap
		if cm, err = k.o.Kube.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, s.ConfigMap, metav1.GetOptions{}); err == nil {
			data = map[string][]byte{}
			for key, v := range cm.Data {
				data[key] = []byte(v)
			}
			for key, v := range cm.BinaryData {
				data[key] = v
			}
		}
	}
	if apierrors.IsNotFound(err) && s.Optional {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.Items == nil {
		return data, nil
	}
	files := map[string][]byte{}
	for _, it := range s.Items {
		v, ok := data[it.Key]
		if !ok && !s.Optional {
			return nil, fmt.Errorf("key %s is not in %s%s", it.Key, s.Secret, s.ConfigMap)
		}
		files[it.Path] = v
	}
	return files, nil
}

// report writes status into the pod's status (a merge patch of
// pods/status, as the kubelet's status manager patches it).
func (k *Kubelet) report(pod *corev1.Pod, status corev1.PodStatus) {
	if len(status.HostIPs) == 0 {
		status.HostIP, status.HostIPs = k.node.IP, []corev1.HostIP{{IP: k.node.IP}}
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		k.problem(err)
		return
	}
	_, err = k.o.Kube.CoreV1().Pods(pod.Namespace).Patch(k.ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) && k.ctx.Err() == nil {
		k.problem(fmt.Errorf("reporting pod %s/%s's status: %w", pod.Namespace, pod.Name, err))
	}
}

// conditions are a bound pod's conditions, its containers ready or not.
func conditions(ready bool, reason string) []corev1.PodCondition {
	now := metav1.Now()
	status := corev1.ConditionFalse
	if ready {
		status, reason = corev1.ConditionTrue, ""
	}
	return []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: status, Reason: reason, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: status, Reason: reason, LastTransitionTime: now},
	}
}

// waiting is the status of a pod whose container cannot (yet) start.
func waiting(reason, message string, pod *corev1.Pod) corev1.PodStatus {
	c := pod.Spec.Containers[0]
	return corev1.PodStatus{
		Phase:      corev1.PodPending,
		Conditions: conditions(false, "ContainersNotReady"),
		ContainerStatuses: []corev1.ContainerStatus{{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}},
	}
}

// running is the status of a pod whose container runs.
func running(pod *corev1.Pod, id string, info Info) corev1.PodStatus {
	c := pod.Spec.Containers[0]
	started := metav1.NewTime(info.State.StartedAt)
	return corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: conditions(true, ""),
		PodIP:      "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		StartTime: &started,
		ContainerStatuses: []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, ImageID: "docker://" + info.Image,
			ContainerID: "docker://" + id, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
	}
}

// terminated is the status of a pod whose container ended: Succeeded
// when it exited 0, else Failed (it is never restarted).
func terminated(pod *corev1.Pod, id, image string, state corev1.ContainerStateTerminated) corev1.PodStatus {
	c := pod.Spec.Containers[0]
	phase := corev1.PodSucceeded
	if state.ExitCode != 0 {
		phase = corev1.PodFailed
	}
	state.ContainerID = "docker://" + id
	return corev1.PodStatus{
		Phase:      phase,
		Conditions: conditions(false, "PodCompleted"),
		PodIP:      "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		StartTime: &state.StartedAt,
		ContainerStatuses: []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, ImageID: "docker://" + image,
			ContainerID: "docker://" + id, Started: new(false),
			State: corev1.ContainerState{Terminated: &state}}},
	}
}

// awaitDeletion waits until the pod is being deleted and confirms it (a
// deletion with no grace period, as the kubelet's last step), or until
// the kubelet stops.
func (k *Kubelet) awaitDeletion(w *podWorker, pod *corev1.Pod) {
	select {
	case <-w.terminate:
	case <-k.ctx.Done():
		return
	}
	err := k.o.Kube.CoreV1().Pods(pod.Namespace).Delete(k.ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && k.ctx.Err() == nil {
		k.problem(fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err))
	}
}

// Stop stops every pod's container and removes it, the Node and its
// Lease, and the kubelet's directory; it returns what it could not
// remove.
func (k *Kubelet) Stop(ctx context.Context) error {
	var errs []error
	k.stopOnce.Do(func() {
		k.mu.Lock()
		k.stopped = true
		k.mu.Unlock()
		if k.cancel != nil {
			k.cancel()
		}
		close(k.stopInf)
		if k.factory != nil {
			k.factory.Shutdown()
		}
		k.wg.Wait()
		ids, err := k.o.Docker.Containers(ctx, containerLabel, k.node.Name)
		errs = append(errs, err, k.o.Docker.Remove(ctx, ids...))
		gone := func(err error) error {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		errs = append(errs,
			gone(k.o.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, k.node.Name, metav1.DeleteOptions{})),
			gone(k.o.Kube.CoreV1().Nodes().Delete(ctx, k.node.Name, metav1.DeleteOptions{})),
			os.RemoveAll(k.node.Dir))
	})
	return errors.Join(errs...)
}
