package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/kb-bench/kb-bench/internal/atomicfile"
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
}

// KindState is what KindUp records about a cluster it made.
type KindState struct {
	Options    KindOptions `json:"options"`
	Kubeconfig string      `json:"kubeconfig"`
	Created    time.Time   `json:"created"`
}

// DefaultKindStateDir is $XDG_STATE_HOME/kb-bench/kind (~/.local/state/...).
func DefaultKindStateDir(getenv func(string) string) string {
	return filepath.Join(filepath.Dir(DefaultStateDir(getenv)), "kind")
}

// kindRuntime is the container runtime command kind uses:
// $KIND_EXPERIMENTAL_PROVIDER, else the first of docker, podman and
// nerdctl on PATH.
func kindRuntime(getenv func(string) string) (string, error) {
	if p := getenv("KIND_EXPERIMENTAL_PROVIDER"); p != "" {
		if !slices.Contains([]string{"docker", "podman", "nerdctl"}, p) {
			return "", fmt.Errorf("KIND_EXPERIMENTAL_PROVIDER=%s is not a runtime kind knows (docker, podman, nerdctl)", p)
		}
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("KIND_EXPERIMENTAL_PROVIDER=%s, but %s is not on PATH", p, p)
		}
		return p, nil
	}
	for _, p := range []string{"docker", "podman", "nerdctl"} {
		if _, err := exec.LookPath(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no container runtime (docker, podman or nerdctl) on PATH")
}

// KindPreflight checks, before anything is created, that the container
// runtime answers and holds the node image (kb-bench never pulls one).
func KindPreflight(ctx context.Context, o KindOptions, getenv func(string) string) error {
	if err := o.Defaults(); err != nil {
		return err
	}
	rt, err := kindRuntime(getenv)
	if err != nil {
		return spec.Input(fmt.Errorf("a kind cluster needs a container runtime: %w: install and start Docker, or use the local target (the default)", err))
	}
	if out, err := exec.CommandContext(ctx, rt, "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		return spec.Input(fmt.Errorf("the container runtime does not answer (`%s info`: %v: %s): start it, or use the local target (the default)", rt, err, firstLine(out)))
	}
	if out, err := exec.CommandContext(ctx, rt, "image", "inspect", o.NodeImage).CombinedOutput(); err != nil {
		return spec.Input(fmt.Errorf("the kind node image %s is not in %s (`%s image inspect`: %s), and kb-bench never pulls one: build or load a node image for Kubernetes %s and pass it with --node-image",
			o.NodeImage, rt, rt, firstLine(out), KubeVersion))
	}
	return nil
}

// firstLine is the first line the runtime printed that says something
// (`docker image inspect` prints "[]" before its error).
func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
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
	if uo.Log == nil {
		uo.Log = io.Discard
	}
	if uo.Getenv == nil {
		uo.Getenv = os.Getenv
	}
	if uo.StateDir == "" {
		uo.StateDir = DefaultKindStateDir(uo.Getenv)
	}
	if err := KindPreflight(ctx, o, uo.Getenv); err != nil {
		return nil, false, err
	}
	_ = o.Defaults() // checked by KindPreflight
	p, err := kindProviderFor(uo.Getenv)
	if err != nil {
		return nil, false, spec.Input(fmt.Errorf("kind: %w", err))
	}
	clusters, err := p.List()
	if err != nil {
		return nil, false, spec.Input(fmt.Errorf("kind: cannot list clusters: %s", runtimeError(err)))
	}
	statePath := filepath.Join(uo.StateDir, o.Name+".json")
	if slices.Contains(clusters, o.Name) {
		st, err := readKindState(statePath)
		if err != nil {
			return nil, false, spec.Input(fmt.Errorf("a kind cluster %q exists, but kb-bench did not make it (%v): use it with --target kind --kind-cluster %s, or choose another --name", o.Name, err, o.Name))
		}
		fmt.Fprintf(uo.Log, "kind: cluster %s already exists (made by kb-bench at %s)\n", o.Name, st.Created.Format(time.RFC3339))
		return st, false, nil
	}
	cfg, err := KindConfig(o)
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(uo.StateDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("kind: creating %s: %w", uo.StateDir, err)
	}
	st = &KindState{Options: o, Kubeconfig: filepath.Join(uo.StateDir, o.Name+".kubeconfig"), Created: time.Now().UTC()}
	fmt.Fprintf(uo.Log, "kind: creating cluster %s (%d control-plane node(s), image %s)...\n", o.Name, o.ControlPlanes, o.NodeImage)
	rt, _ := kindRuntime(uo.Getenv) // checked by KindPreflight
	hadNetwork := exec.CommandContext(ctx, rt, "network", "inspect", "kind").Run() == nil
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
	if err != nil {
		if !uo.Retain {
			_ = p.Delete(o.Name, st.Kubeconfig)
			if !hadNetwork {
				// kind made its docker network for this cluster alone.
				_ = exec.Command(rt, "network", "rm", "kind").Run()
			}
		}
		return nil, false, fmt.Errorf("kind: creating cluster %s: %s", o.Name, runtimeError(err))
	}
	fmt.Fprintf(uo.Log, "kind: cluster %s ready after %s\n", o.Name, time.Since(begin).Round(time.Second))
	b, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(statePath, append(b, '\n'), 0o600)
	}
	return st, true, err
}

// KindDown deletes a kind cluster that KindUp made, and its records; a
// cluster kb-bench did not make is refused.
func KindDown(ctx context.Context, name, stateDir string, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	if stateDir == "" {
		stateDir = DefaultKindStateDir(getenv)
	}
	statePath := filepath.Join(stateDir, name+".json")
	st, err := readKindState(statePath)
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
	_ = os.Remove(st.Kubeconfig)
	return os.Remove(statePath)
}

// ReadKindState reads what KindUp recorded about the cluster name.
func ReadKindState(stateDir, name string, getenv func(string) string) (*KindState, error) {
	if stateDir == "" {
		stateDir = DefaultKindStateDir(getenv)
	}
	return readKindState(filepath.Join(stateDir, name+".json"))
}

func readKindState(path string) (*KindState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st KindState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &st, nil
}
