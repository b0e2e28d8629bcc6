package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	"github.com/kb-bench/kb-bench/spec"
)

// kindProvider is the part of kind's cluster.Provider that Open uses.
type kindProvider interface {
	List() ([]string, error)
	KubeConfig(name string, internal bool) (string, error)
}

// kindNeeds says what the kind target needs and the alternatives.
const kindNeeds = "the kind target needs a running container runtime (docker, podman or nerdctl) and an existing cluster (`kind create cluster`); " +
	"or use --kubeconfig PATH, or the local target (the default)"

// kindProviderFor returns kind's provider on the container runtime
// kindRuntime picks, the one kb-bench's own runtime commands (image pulls,
// the janitor, the network) use too.
func kindProviderFor(getenv func(string) string) (*kindcluster.Provider, error) {
	rt, err := kindRuntime(getenv)
	if err != nil {
		return nil, err
	}
	return kindcluster.NewProvider(map[string]kindcluster.ProviderOption{
		"docker": kindcluster.ProviderWithDocker(), "nerdctl": kindcluster.ProviderWithNerdctl(""), "podman": kindcluster.ProviderWithPodman(),
	}[rt]), nil
}

// openKind connects to the kind cluster t.KindCluster. When it does not
// exist, deps.up creates it for the run, and Close deletes it unless
// t.KeepCluster.
func openKind(ctx context.Context, t spec.Target, deps kindDeps) (conn *Connection, err error) {
	name := cmp.Or(t.KindCluster, kindcluster.DefaultName)
	p, err := deps.newProvider()
	if err != nil {
		return nil, spec.Input(fmt.Errorf("kind cluster %q: %w: %s", name, err, kindNeeds))
	}
	clusters, err := p.List()
	if err != nil {
		return nil, spec.Input(fmt.Errorf("kind cluster %q: cannot list kind clusters: %s: %s", name, runtimeError(err), kindNeeds))
	}
	closeConn := noClose
	if !slices.Contains(clusters, name) {
		found := cmp.Or(strings.Join(clusters, ", "), "none")
		if err := deps.up(ctx, KindOptions{Name: name, NodeImage: t.KindNodeImage}, t.KindPull); err != nil {
			return nil, fmt.Errorf("kind cluster %q does not exist (kind clusters: %s), and creating it for the run failed: %w", name, found, err)
		}
		if !t.KeepCluster {
			closeConn = func(ctx context.Context) error { return deps.down(ctx, name) }
		}
		defer func() {
			if err != nil {
				_ = closeConn(context.WithoutCancel(ctx))
			}
		}()
	}
	kubeconfig, err := p.KubeConfig(name, false)
	if err != nil {
		return nil, spec.Input(fmt.Errorf("kind cluster %q: reading its kubeconfig: %s: is the cluster running? (`kind get clusters`, `docker ps`)", name, runtimeError(err)))
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		return nil, fmt.Errorf("kind cluster %q: its kubeconfig does not load: %w", name, err)
	}
	version, err := ServerVersion(ctx, cfg)
	if err != nil {
		return nil, spec.Input(fmt.Errorf("kind cluster %q: cannot reach its apiserver %s (%w): is the cluster running? (`docker ps`; recreate it with `kind delete cluster --name %s && kind create cluster --name %s`)",
			name, cfg.Host, err, name, name))
	}
	kindConfig, nodeImage := deps.describe(name)
	return &Connection{
		Config: cfg,
		Target: spec.TargetInfo{Kind: spec.TargetKindCluster, Server: cfg.Host, ServerVersion: version, Context: "kind-" + name, KindConfig: kindConfig, NodeImage: nodeImage},
		Close:  closeConn,
	}, nil
}

// kindDeps are what openKind uses of kind, swappable in tests.
type kindDeps struct {
	newProvider func() (kindProvider, error)
	// describe returns the configuration of a cluster kb-bench made (""
	// for another) and the node image its control plane runs; up creates
	// a cluster, down deletes one kb-bench made.
	describe func(name string) (config, nodeImage string)
	up       func(ctx context.Context, o KindOptions, pull spec.PullPolicy) error
	down     func(ctx context.Context, name string) error
}

// kindNodeImage is the image the first control-plane node of cluster name
// runs, as the runtime reports it; "" when it cannot tell.
func kindNodeImage(getenv func(string) string, name string) string {
	rt, rtErr := kindRuntime(getenv)
	p, err := kindProviderFor(getenv)
	if rtErr != nil || err != nil {
		return ""
	}
	node, err := firstControlPlane(p, name)
	if err != nil {
		return ""
	}
	out, err := exec.Command(rt, "inspect", "--format", "{{.Config.Image}}", node.String()).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// runtimeError says what the container runtime printed, which kind's
// errors keep aside (e.g. "Cannot connect to the Docker daemon").
func runtimeError(err error) string {
	var re *kindexec.RunError
	if !errors.As(err, &re) {
		return err.Error()
	}
	// kind wraps the command's error with what it was doing ("failed to
	// init node with kubeadm: command ... failed with error: ...").
	doing := ""
	if i := strings.Index(err.Error(), ": command \""); i > 0 {
		doing = err.Error()[:i] + ": "
	}
	cmd := strings.Join(re.Command, " ")
	if len(re.Command) > 2 {
		cmd = strings.Join(re.Command[:2], " ") + " ..."
	}
	// The end, where a command (kubeadm's log above all) says what failed.
	out := strings.Join(strings.Fields(string(re.Output)), " ")
	if len(out) > 400 {
		out = "..." + strings.ToValidUTF8(out[len(out)-400:], "")
	}
	if out == "" {
		return fmt.Sprintf("%s`%s` failed: %v", doing, cmd, re.Inner)
	}
	return fmt.Sprintf("%s`%s` failed (%v): %s", doing, cmd, re.Inner, out)
}

// firstControlPlane is the control-plane node of cluster name that kind
// bootstraps (and reads the kubeconfig from).
func firstControlPlane(p *kindcluster.Provider, name string) (nodes.Node, error) {
	all, err := p.ListNodes(name)
	if err != nil {
		return nil, err
	}
	cps, err := nodeutils.ControlPlaneNodes(all)
	if err != nil {
		return nil, err
	}
	if len(cps) == 0 {
		return nil, fmt.Errorf("kind cluster %q has no control-plane node", name)
	}
	return cps[0], nil
}
