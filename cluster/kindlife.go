package cluster

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"github.com/kb-bench/kb-bench/internal/proc"
	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/spec"
)

// KindReadyTimeout bounds the wait for a new kind cluster's control plane.
const KindReadyTimeout = 5 * time.Minute

// KindUpOptions configures KindUp.
type KindUpOptions struct {
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// StateDir is where kb-bench keeps the kubeconfig and the options of
	// the clusters it made (DefaultKindStateDir when empty): the user's
	// ~/.kube/config is left alone.
	StateDir string
	// Retain keeps the nodes of a create that failed, for debugging.
	Retain bool
	// Pull says when the images are pulled (spec.PullMissing when empty).
	Pull spec.PullPolicy
	// Host is the machine's facts the cluster is adapted to (nil:
	// DetectKindHost reads them).
	Host *KindHost
}

// KindState is what KindUp records about a cluster it made.
type KindState struct {
	Options KindOptions `json:"options"`
	// KubernetesVersion is what the node image holds (its /kind/version).
	KubernetesVersion string    `json:"kubernetesVersion,omitempty"`
	Kubeconfig        string    `json:"kubeconfig"`
	Created           time.Time `json:"created"`
}

// DefaultKindStateDir is $XDG_STATE_HOME/kb-bench/kind (~/.local/state/...).
func DefaultKindStateDir(getenv func(string) string) string {
	return filepath.Join(filepath.Dir(DefaultStateDir(getenv)), "kind")
}

// kindRuntimes are the container runtimes kind knows, in the order it
// looks for them (kind's DetectNodeProvider).
var kindRuntimes = []string{"docker", "nerdctl", "podman"}

func unknownRuntime(p string) error {
	return fmt.Errorf("KIND_EXPERIMENTAL_PROVIDER=%s is not a runtime kind knows (docker, nerdctl, podman)", p)
}

// kindRuntime is the container runtime command kind uses:
// $KIND_EXPERIMENTAL_PROVIDER, else the first of docker, nerdctl and
// podman on PATH, as kind looks for them: kind's provider and kb-bench's
// own commands then use the same one.
func kindRuntime(getenv func(string) string) (string, error) {
	if p := getenv("KIND_EXPERIMENTAL_PROVIDER"); p != "" {
		if !slices.Contains(kindRuntimes, p) {
			return "", unknownRuntime(p)
		}
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("KIND_EXPERIMENTAL_PROVIDER=%s, but %s is not on PATH", p, p)
		}
		return p, nil
	}
	for _, p := range kindRuntimes {
		if _, err := exec.LookPath(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no container runtime (docker, nerdctl or podman) on PATH")
}

// kindRuntimeReady returns the container runtime kind will use, once it
// answers.
func kindRuntimeReady(ctx context.Context, getenv func(string) string) (string, error) {
	rt, err := kindRuntime(getenv)
	if err != nil {
		return "", spec.Input(fmt.Errorf("a kind cluster needs a container runtime: %w: install and start Docker (or Podman), or use the local target (the default)", err))
	}
	if out, err := exec.CommandContext(ctx, rt, "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		return "", spec.Input(fmt.Errorf("the container runtime does not answer (`%s info`: %v: %s): start it, or use the local target (the default)", rt, err, firstLine(out)))
	}
	return rt, nil
}

// ensureKindImages makes sure the runtime holds every image the cluster
// needs before anything is created, so that a pull that fails leaves
// nothing behind: a missing image is pulled (pull missing, kind's own
// behaviour), every image is (always), or a missing one is an error that
// says how to load it (never).
func ensureKindImages(ctx context.Context, rt string, o KindOptions, pull spec.PullPolicy, log io.Writer) error {
	for _, image := range o.Images() {
		what := "the kind node image"
		if image != o.NodeImage {
			what = "kind's load balancer image (for --control-planes 3)"
		}
		present := exec.CommandContext(ctx, rt, "image", "inspect", image).Run() == nil
		switch {
		case pull == spec.PullAlways:
			fmt.Fprintf(log, "kind: pulling %s %s (--pull always)...\n", what, image)
		case present:
			continue
		case pull != spec.PullNever:
			fmt.Fprintf(log, "kind: %s %s is not in %s: pulling it, as `kind create cluster` does (--pull never forbids it)...\n", what, image, rt)
		default:
			return spec.Input(fmt.Errorf("%s %s is not in %s, and --pull never forbids pulling it: %s (`kind load` puts images into a running cluster's nodes, not this one); or drop --pull never",
				what, image, rt, loadAdvice(rt, image)))
		}
		if err := pullImage(ctx, rt, image, what, log); err != nil {
			return err
		}
	}
	return nil
}

// loadAdvice says how to bring image to an air-gapped machine. A loaded
// image has no registry digest, so an image pinned by digest is tagged
// before it is saved and named by that tag here.
func loadAdvice(rt, image string) string {
	name, _, pinned := strings.Cut(image, "@")
	if !pinned {
		return fmt.Sprintf("on a machine that reaches the registry run `%[1]s pull %[2]s && %[1]s save %[2]s -o image.tar`, then here `%[1]s load -i image.tar`", rt, image)
	}
	return fmt.Sprintf("on a machine that reaches the registry run `%[1]s pull %[2]s && %[1]s tag %[2]s %[3]s && %[1]s save %[3]s -o image.tar`, then here `%[1]s load -i image.tar` and pass --node-image %[3]s (a loaded image has no registry digest)",
		rt, image, name)
}

// pullImage pulls image as kind does, showing the runtime's progress: its
// own progress bars on a terminal, plain lines otherwise.
func pullImage(ctx context.Context, rt, image, what string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, rt, "pull", image)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var lines io.ReadCloser
	if f, ok := log.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		cmd.Stdout = f
	} else {
		var err error
		if lines, err = cmd.StdoutPipe(); err != nil {
			return err
		}
	}
	err := cmd.Start()
	if err == nil && lines != nil {
		sc := bufio.NewScanner(lines)
		for sc.Scan() {
			fmt.Fprintf(log, "kind: %s\n", sc.Text())
		}
	}
	if err == nil {
		err = cmd.Wait()
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("pulling %s: %w", image, ctx.Err())
	}
	return spec.Input(fmt.Errorf("pulling %s %s failed: %s: check that %s reaches the registry (network, proxy, `%[4]s login`), or load the image (`%[4]s load -i`) and pass --pull never, or pass another --node-image",
		what, image, firstLine(stderr.Bytes()), rt))
}

// firstLine is the first line the runtime printed that says something
// (`docker image inspect` prints "[]" before its error).
func firstLine(b []byte) string {
	for l := range strings.SplitSeq(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && l != "[]" {
			return l
		}
	}
	return "no output"
}

// KindUp creates the kind cluster o describes, unless one of that name
// exists, and waits until its control plane is ready. Its kubeconfig goes
// to a file of kb-bench's (the user's ~/.kube/config is not touched). A
// create that fails or is interrupted deletes what it made, unless
// Retain. created says whether KindUp made the cluster.
func KindUp(ctx context.Context, o KindOptions, uo KindUpOptions) (st *KindState, created bool, err error) {
	uo.Log = cmp.Or(uo.Log, io.Discard)
	uo.Getenv = getenvOr(uo.Getenv)
	uo.StateDir = cmp.Or(uo.StateDir, DefaultKindStateDir(uo.Getenv))
	t := spec.Target{Kind: spec.TargetKindCluster, KindPull: uo.Pull}
	if errs := t.Validate(field.NewPath("target")); len(errs) > 0 {
		return nil, false, spec.Input(errors.New(spec.Describe(errs)))
	}
	if err := o.Defaults(); err != nil {
		return nil, false, err
	}
	rt, err := kindRuntimeReady(ctx, uo.Getenv)
	if err != nil {
		return nil, false, err
	}
	if uo.Host == nil {
		h, err := DetectKindHost(ctx, rt, uo.Getenv)
		if err != nil {
			return nil, false, spec.Input(fmt.Errorf("kind: %w", err))
		}
		uo.Host = &h
	}
	p, err := kindProviderFor(uo.Getenv)
	if err != nil {
		return nil, false, spec.Input(fmt.Errorf("kind: %w", err))
	}
	clusters, err := p.List()
	if err != nil {
		return nil, false, spec.Input(fmt.Errorf("kind: cannot list clusters: %s", runtimeError(err)))
	}
	if slices.Contains(clusters, o.Name) {
		st, err := ReadKindState(ctx, uo.StateDir, o.Name, uo.Getenv)
		if err != nil {
			return nil, false, spec.Input(fmt.Errorf("a kind cluster %q exists, but kb-bench did not make it (%v): use it with --target kind --kind-cluster %s, or choose another --name", o.Name, err, o.Name))
		}
		fmt.Fprintf(uo.Log, "kind: cluster %s already exists (made by kb-bench at %s)\n", o.Name, st.Created.Format(time.RFC3339))
		return st, false, nil
	}
	if _, err := KindConfig(o); err != nil {
		return nil, false, err
	}
	if err := ensureKindImages(ctx, rt, o, uo.Pull, uo.Log); err != nil {
		return nil, false, err
	}
	labels, err := imageLabels(ctx, rt, o.NodeImage)
	if err != nil {
		return nil, false, fmt.Errorf("kind: %w", err)
	}
	if o.Adapt, err = AdaptKind(*uo.Host, labels); err != nil {
		return nil, false, err
	}
	cfg, err := KindConfig(o)
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(uo.StateDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("kind: creating %s: %w", uo.StateDir, err)
	}
	// Should kb-bench be killed from here on, the janitor removes what
	// the check and kind's create made.
	j, err := proc.StartJanitor()
	if err != nil {
		return nil, false, err
	}
	defer j.Release()
	if missing := uo.Host.MissingCaps(); len(missing) > 0 {
		fmt.Fprintf(uo.Log, "kind: checking that privileged containers start (this host's capability bounding set lacks %s)...\n", strings.Join(missing, ", "))
		if err := privilegedWorks(ctx, rt, o.NodeImage, o.Name, *uo.Host, j); err != nil {
			return nil, false, err
		}
	}
	for _, l := range o.Adapt.Lines() {
		fmt.Fprintf(uo.Log, "kind: adapting to this host: %s\n", l)
	}
	if s := o.Adapt.Snapshotter; s != "" {
		// kind's docker run passes the variable from its own environment.
		restore := setenv(SnapshotterEnv, s)
		defer restore()
	}
	st = &KindState{Options: o, Kubeconfig: filepath.Join(uo.StateDir, o.Name+".kubeconfig"), Created: time.Now().UTC()}
	fmt.Fprintf(uo.Log, "kind: creating cluster %s (%d control-plane node(s), image %s)...\n", o.Name, o.ControlPlanes, o.NodeImage)
	// From before it looks for kind's network until kind's create returns,
	// no other kb-bench removes the network (lockKindNetwork).
	unlock := lockKindNetwork(syscall.LOCK_SH)
	hadNetwork := exec.CommandContext(ctx, rt, "network", "inspect", "kind").Run() == nil
	if !uo.Retain {
		j.RunOnDeath(kindCleanup(rt, o.Name, !hadNetwork))
	}
	begin := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- p.Create(o.Name,
			kindcluster.CreateWithV1Alpha4Config(cfg),
			kindcluster.CreateWithNodeImage(o.NodeImage),
			kindcluster.CreateWithKubeconfigPath(st.Kubeconfig),
			kindcluster.CreateWithWaitForReady(KindReadyTimeout),
			kindcluster.CreateWithRetain(uo.Retain),
			kindcluster.CreateWithDisplayUsage(false),
			kindcluster.CreateWithDisplaySalutation(false))
	}()
	// kind's create cannot be cancelled: on an interrupt wait for it to
	// end, then delete what it made.
	select {
	case err = <-done:
	case <-ctx.Done():
		fmt.Fprintf(uo.Log, "kind: interrupted; deleting cluster %s once its create returns\n", o.Name)
		<-done
		err = ctx.Err()
	}
	if !hadNetwork {
		recordKindNetwork(rt)
	}
	unlock()
	if err == nil {
		err = waitServiceNetworkOf(ctx, st.Kubeconfig, uo.Log)
	}
	if err != nil {
		if !uo.Retain {
			_ = p.Delete(o.Name, st.Kubeconfig)
			removeKindNetwork(rt)
		}
		return nil, false, fmt.Errorf("kind: creating cluster %s: %s", o.Name, runtimeError(err))
	}
	if node, err := firstControlPlane(p, o.Name); err == nil {
		st.KubernetesVersion, _ = nodeutils.KubeVersion(node) // "" when unreadable
	}
	fmt.Fprintf(uo.Log, "kind: cluster %s ready after %s (Kubernetes %s)\n", o.Name, time.Since(begin).Round(time.Second), st.KubernetesVersion)
	return st, true, writeJSON(filepath.Join(uo.StateDir, o.Name+".json"), st)
}

// setenv sets the process's variable k to v and returns what restores it.
func setenv(k, v string) (restore func()) {
	old, had := os.LookupEnv(k)
	_ = os.Setenv(k, v)
	return func() {
		if had {
			_ = os.Setenv(k, old)
		} else {
			_ = os.Unsetenv(k)
		}
	}
}

// KindDown deletes a kind cluster that KindUp made, and its records; a
// cluster kb-bench did not make is refused.
func KindDown(ctx context.Context, name, stateDir string, getenv func(string) string) error {
	getenv = getenvOr(getenv)
	stateDir = cmp.Or(stateDir, DefaultKindStateDir(getenv))
	st, err := ReadKindState(ctx, stateDir, name, getenv)
	if err != nil {
		return spec.Input(fmt.Errorf("kb-bench made no kind cluster %q (%v): it deletes only its own; use `kind delete cluster --name %s` for another", name, err, name))
	}
	p, err := kindProviderFor(getenv)
	if err != nil {
		return spec.Input(fmt.Errorf("kind: %w", err))
	}
	if err := p.Delete(name, st.Kubeconfig); err != nil {
		return fmt.Errorf("kind: deleting cluster %s: %s", name, runtimeError(err))
	}
	if rt, err := kindRuntime(getenv); err == nil {
		removeKindNetwork(rt)
	}
	_ = os.Remove(st.Kubeconfig)
	return os.Remove(filepath.Join(stateDir, name+".json"))
}

// removeKindNetwork removes kind's network ("kind") when a create of
// kb-bench's made it (kindNetworksMade records it) and no container uses
// it: whichever kb-bench deletes the last cluster on it removes it, not
// only the one whose create made it, and a network the user's own kind
// made is left. It waits for the creates of other kb-bench processes
// (lockKindNetwork).
func removeKindNetwork(rt string) {
	defer lockKindNetwork(syscall.LOCK_EX)()
	id := kindNetworkID(rt)
	if id == "" {
		return
	}
	made := filepath.Join(kindNetworksMade(), id)
	if _, err := os.Lstat(made); err != nil {
		return // not one kb-bench made
	}
	// The runtime refuses while a container (another cluster) uses it.
	if exec.Command(rt, "network", "rm", id).Run() == nil {
		_ = os.Remove(made)
	}
}

// recordKindNetwork records kind's network as made by kb-bench; a create
// calls it when it found no network, with the lock still held, so the
// network it records is the one kind made (or found made by a create
// beside it that also found none).
func recordKindNetwork(rt string) {
	id := kindNetworkID(rt)
	if id == "" {
		return
	}
	if err := os.MkdirAll(kindNetworksMade(), 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(kindNetworksMade(), id), nil, 0o644)
	}
}

// kindNetworkID is the ID of kind's network, "" when there is none (or
// the runtime answers something that is not an ID).
func kindNetworkID(rt string) string {
	out, err := exec.Command(rt, "network", "inspect", "kind", "--format", "{{.Id}}").Output()
	id := strings.TrimSpace(string(out))
	if err != nil || !networkIDPattern.MatchString(id) {
		return ""
	}
	return id
}

// networkIDPattern is what a container runtime's network ID looks like:
// safe as a file name and as a word of a shell command.
var networkIDPattern = regexp.MustCompile(`^[0-9a-f]{12,64}$`)

// kindNetworkLock is the file whose lock keeps kb-bench processes from
// removing kind's shared network ("kind") under one another's create. kind
// makes the network when a create finds none and never removes it;
// kb-bench removes it once no cluster uses it if one of its creates made
// it, and the runtime refuses only while a container is attached. A
// create between kind finding the network and its node's `docker run`
// would then fail with "network kind not found". So a create holds the
// lock shared from before it looks for the network until kind's create
// returns (and it has recorded a network it made), and a removal
// (kb-bench's, or its janitor's through flock(1)) holds it exclusive. It
// is under /tmp, not $TMPDIR: it guards the host's container runtime,
// whatever temporary directory each process has. A plain `kind create` of
// the user's is not guarded.
var kindNetworkLock = "/tmp/kb-bench-kind-network.lock"

// kindNetworksMade is the directory, beside kindNetworkLock, that holds an
// empty file named for the ID of each kind network a create of kb-bench's
// made; the ID, not the name, so that a network made since by someone
// else, or on another runtime, is not taken for it.
func kindNetworksMade() string {
	return strings.TrimSuffix(kindNetworkLock, ".lock") + ".made"
}

// lockKindNetwork waits for kindNetworkLock (how: syscall.LOCK_SH or
// LOCK_EX) and returns what releases it; without a lock file it can open
// (a read-only /tmp) it goes on unguarded, as kb-bench did before.
func lockKindNetwork(how int) (unlock func()) {
	f, err := os.OpenFile(kindNetworkLock, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return func() {}
	}
	for syscall.Flock(int(f.Fd()), how) == syscall.EINTR {
	}
	return func() { f.Close() }
}

// ReadKindState reads what KindUp recorded about the cluster name.
func ReadKindState(ctx context.Context, stateDir, name string, getenv func(string) string) (*KindState, error) {
	stateDir = cmp.Or(stateDir, DefaultKindStateDir(getenvOr(getenv)))
	path := filepath.Join(stateDir, name+".json")
	b, err := readfile.Read(ctx, path, readfile.Small, "the kind cluster's state")
	if err != nil {
		return nil, err
	}
	var st KindState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &st, nil
}

// ServiceNetworkTimeout bounds the wait for a new cluster's service
// network (WaitServiceNetwork).
const ServiceNetworkTimeout = 3 * time.Minute

// WaitServiceNetwork waits until the cluster's service network works: a
// pod's request to a service address (the apiserver's, 10.96.0.1) reaches
// the service once kube-proxy has programmed the node, some seconds after
// the node is Ready; before that it is refused (kb-bench's node image
// rejects what kube-proxy did not translate) or, on other images, leaves
// the node for the host's network. CoreDNS reaches the apiserver through
// that address, so its Deployment being available is the event. A cluster
// without CoreDNS is not waited for; one whose CoreDNS does not become
// available within ServiceNetworkTimeout, or whose Deployment cannot be
// read, gets a warning on log, not an error: runs that start no pod do
// not need it.
func WaitServiceNetwork(ctx context.Context, cfg *rest.Config, log io.Writer) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	wait, cancel := context.WithTimeout(ctx, ServiceNetworkTimeout)
	defer cancel()
	announced := false
	for {
		d, err := kube.AppsV1().Deployments("kube-system").Get(wait, "coredns", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			fmt.Fprintf(log, "kind: WARNING: cannot read CoreDNS's Deployment (%v): not waiting for the service network; pods may not reach services yet\n", err)
			return nil
		case d.Status.AvailableReplicas > 0:
			return nil
		case !announced:
			fmt.Fprintln(log, "kind: waiting for the service network (kube-proxy programming the node; CoreDNS available)...")
			announced = true
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-wait.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(log, "kind: WARNING: CoreDNS was not available within %s: pods may not reach services yet\n", ServiceNetworkTimeout)
			return nil
		}
	}
}

// waitServiceNetworkOf is WaitServiceNetwork on the cluster of a
// kubeconfig file kb-bench wrote.
func waitServiceNetworkOf(ctx context.Context, kubeconfig string, log io.Writer) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the new cluster's kubeconfig %s: %w", kubeconfig, err)
	}
	return WaitServiceNetwork(ctx, cfg, log)
}
