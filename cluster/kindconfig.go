package cluster

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kind/pkg/apis/config/defaults"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/kb-bench/kb-bench/spec"
)

// DefaultKindCluster is the name of the kind cluster kb-bench creates.
const DefaultKindCluster = "kb-bench"

// DefaultKindNodeImage is the node image kb-bench creates kind clusters
// with: kind's own default (kindest/node, Kubernetes v1.37.0 for kind
// v0.33.0, pinned by digest), the image kind users already trust. The
// local control plane is KubeVersion (v1.37.1): results of the two name
// their versions.
const DefaultKindNodeImage = defaults.Image

// DefaultKindKubeVersion is the Kubernetes version of DefaultKindNodeImage
// (its tag).
const DefaultKindKubeVersion = "v1.37.0"

// KindLoadBalancerImage is the image of the load balancer kind puts in
// front of three control planes (sigs.k8s.io/kind's internal
// loadbalancer.Image, which kind's docker run pulls when missing; a test
// reads kind's source to keep the two in step).
const KindLoadBalancerImage = "docker.io/envoyproxy/envoy:v1.36.2"

// KindOptions is a benchmark kind cluster's configuration. Every field is
// recorded in the results of runs against it.
type KindOptions struct {
	// Name of the cluster (DefaultKindCluster when empty).
	Name string `json:"name"`
	// NodeImage every node runs (DefaultKindNodeImage when empty).
	NodeImage string `json:"nodeImage"`
	// ControlPlanes is 1 or 3: three apiservers behind kind's load
	// balancer, the multi-apiserver contention real clusters have.
	ControlPlanes int `json:"controlPlanes"`
	// APIServerArgs are passed to every kube-apiserver, NAME=VALUE
	// without the leading dashes (max-mutating-requests-inflight=400).
	APIServerArgs []string `json:"apiserverArgs,omitempty"`
	// EtcdOnTmpfs keeps etcd's data in the node's /tmp, a tmpfs: less disk
	// noise, nothing durable. Default: on the node's disk.
	EtcdOnTmpfs bool `json:"etcdOnTmpfs,omitempty"`
	// Adapt are the changes KindUp made for the host and the node image
	// (AdaptKind); the user does not set them.
	Adapt KindAdaptations `json:"adaptations,omitzero"`
}

// Images are the images the cluster's containers run: the node image,
// and kind's load balancer in front of three control planes.
func (o KindOptions) Images() []string {
	if o.ControlPlanes == 3 {
		return []string{o.NodeImage, KindLoadBalancerImage}
	}
	return []string{o.NodeImage}
}

var apiserverArgRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*=`)

// Defaults fills the empty fields and checks the rest: an error says what
// is wrong and is spec.Input.
func (o *KindOptions) Defaults() error {
	o.Name = cmp.Or(o.Name, DefaultKindCluster)
	o.NodeImage = cmp.Or(o.NodeImage, DefaultKindNodeImage)
	o.ControlPlanes = cmp.Or(o.ControlPlanes, 1)
	if o.ControlPlanes != 1 && o.ControlPlanes != 3 {
		return spec.Input(fmt.Errorf("--control-planes %d: use 1, or 3 for three apiservers behind a load balancer", o.ControlPlanes))
	}
	if !regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`).MatchString(o.Name) {
		return spec.Input(fmt.Errorf("kind cluster name %q: use lower-case letters, digits and dashes", o.Name))
	}
	for _, a := range o.APIServerArgs {
		if !apiserverArgRE.MatchString(a) {
			return spec.Input(fmt.Errorf("--apiserver-arg %q: write NAME=VALUE without dashes, e.g. max-mutating-requests-inflight=400", a))
		}
	}
	return nil
}

// KindConfig is the kind cluster configuration o asks for: its nodes,
// and kubeadm patches that add the apiserver arguments (appended to the
// ones kind sets, never replacing them), move etcd's data to tmpfs and
// make o.Adapt's changes. Audit logging stays off, as kind leaves it.
func KindConfig(o KindOptions) (*v1alpha4.Cluster, error) {
	if err := o.Defaults(); err != nil {
		return nil, err
	}
	c := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:     o.Name,
	}
	for range o.ControlPlanes {
		c.Nodes = append(c.Nodes, v1alpha4.Node{Role: v1alpha4.ControlPlaneRole, Image: o.NodeImage})
	}
	var ops []map[string]any
	for _, a := range slices.Sorted(slices.Values(o.APIServerArgs)) {
		name, value, _ := strings.Cut(a, "=")
		ops = append(ops, map[string]any{"op": "add", "path": "/apiServer/extraArgs/-", "value": map[string]string{"name": name, "value": value}})
	}
	// kind's ClusterConfiguration has no etcd section: one patch adds it.
	etcd := map[string]string{}
	if o.EtcdOnTmpfs {
		etcd["dataDir"] = "/tmp/etcd"
	}
	if o.Adapt.EtcdImageTag != "" {
		etcd["imageTag"] = o.Adapt.EtcdImageTag
	}
	if len(etcd) > 0 {
		ops = append(ops, map[string]any{"op": "add", "path": "/etcd", "value": map[string]any{"local": etcd}})
	}
	if err := addPatch(c, "kubeadm.k8s.io", "v1beta4", "ClusterConfiguration", ops); err != nil {
		return nil, err
	}
	if o.Adapt.FailCgroupV1Off {
		ops := []map[string]any{{"op": "add", "path": "/failCgroupV1", "value": false}}
		if err := addPatch(c, "kubelet.config.k8s.io", "v1beta1", "KubeletConfiguration", ops); err != nil {
			return nil, err
		}
	}
	if o.Adapt.RestrictOOMScoreAdj {
		c.ContainerdConfigPatches = append(c.ContainerdConfigPatches, "[plugins.\"io.containerd.grpc.v1.cri\"]\n  restrict_oom_score_adj = true\n")
	}
	return c, nil
}

// addPatch adds the JSON 6902 operations ops (none: nothing) for kind's
// kubeadm configuration documents of the given kind.
func addPatch(c *v1alpha4.Cluster, group, version, kind string, ops []map[string]any) error {
	if len(ops) == 0 {
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	c.KubeadmConfigPatchesJSON6902 = append(c.KubeadmConfigPatchesJSON6902, v1alpha4.PatchJSON6902{Group: group, Version: version, Kind: kind, Patch: string(patch)})
	return nil
}

// KindConfigYAML renders KindConfig(o) as the YAML `kind create cluster
// --config` reads, after a comment line for each of o.Adapt's changes
// (the snapshotter is set in kind's environment, not in the file).
func KindConfigYAML(o KindOptions) ([]byte, error) {
	c, err := KindConfig(o)
	if err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	var head strings.Builder
	for _, l := range o.Adapt.Lines() {
		head.WriteString("# adapted: " + l + "\n")
	}
	return append([]byte(head.String()), b...), nil
}
