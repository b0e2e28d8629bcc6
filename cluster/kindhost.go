package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/kb-bench/kb-bench/spec"
)

// SnapshotterEnv is the variable kind passes to its nodes' entrypoint to
// choose containerd's snapshotter.
const SnapshotterEnv = "KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER"

// EtcdImageTagLabel is the label of a node image that holds another etcd
// than kubeadm's default (the offline node image built from kb-bench's
// pins): its value is the etcd image's tag inside the node.
const EtcdImageTagLabel = "dev.kb-bench.etcd-image-tag"

// capSysResource is CAP_SYS_RESOURCE's number (linux/capability.h).
const capSysResource = 24

// capNames are the capabilities' names by number (linux/capability.h).
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
	"LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
	"CHECKPOINT_RESTORE",
}

// KindHost is what kb-bench knows of the machine a kind cluster is made
// on: DetectKindHost reads it once, and tests pass their own.
type KindHost struct {
	// CgroupVersion is "1" or "2", as the container runtime reports it.
	CgroupVersion string
	// StorageDriver is the runtime's storage driver (overlay2,
	// fuse-overlayfs, ...).
	StorageDriver string
	// Bounding is the capability bounding set (a bit per capability) and
	// LastCap the highest capability the kernel knows.
	Bounding uint64
	LastCap  int
	// SnapshotterSet is set when the user chose the nodes' snapshotter
	// (SnapshotterEnv).
	SnapshotterSet bool
}

// FullKindHost is a host that needs no adaptation: cgroup v2, overlay2
// and every capability.
func FullKindHost() KindHost {
	return KindHost{CgroupVersion: "2", StorageDriver: "overlay2", Bounding: 1<<41 - 1, LastCap: 40}
}

// MissingCaps names the capabilities the kernel knows that the bounding
// set lacks (CAP_SYS_RESOURCE, ...).
func (h KindHost) MissingCaps() []string {
	var missing []string
	for c := 0; c <= h.LastCap && c < 64; c++ {
		if h.Bounding&(1<<c) != 0 {
			continue
		}
		name := "CAP_" + strconv.Itoa(c)
		if c < len(capNames) {
			name = "CAP_" + capNames[c]
		}
		missing = append(missing, name)
	}
	return missing
}

// DetectKindHost reads the host's facts: the cgroup version and storage
// driver from the runtime rt, and the capability bounding set from this
// process's /proc/self/status. The bounding set stands for the runtime's:
// it is inherited from PID 1 by every process of the machine (or of the
// sandbox or VM), and a process can drop capabilities from it but never
// add one, so a capability missing here is missing for the container
// runtime too, whose privileged containers then cannot get it. (Were
// kb-bench alone run with a smaller set, the adaptations it makes would
// only be unneeded, never wrong.)
func DetectKindHost(ctx context.Context, rt string, getenv func(string) string) (KindHost, error) {
	h := KindHost{SnapshotterSet: getenv(SnapshotterEnv) != ""}
	format := "{{.CgroupVersion}} {{.Driver}}"
	if rt == "podman" {
		format = "{{.Host.CgroupsVersion}} {{.Store.GraphDriverName}}"
	}
	out, err := exec.CommandContext(ctx, rt, "info", "--format", format).Output()
	if err != nil {
		return h, fmt.Errorf("`%s info`: %w: is the container runtime running?", rt, err)
	}
	if f := strings.Fields(string(out)); len(f) == 2 {
		h.CgroupVersion, h.StorageDriver = strings.TrimPrefix(f[0], "v"), f[1]
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		// Not Linux: the runtime runs in a VM kb-bench cannot see into.
		return FullKindHost(), nil
	}
	if h.Bounding, h.LastCap, err = parseBounding(string(status), readLastCap()); err != nil {
		return h, err
	}
	return h, nil
}

// parseBounding reads CapBnd from the text of /proc/self/status; lastCap
// is the kernel's highest capability (-1 when unknown: the set's highest
// bit then stands for it).
func parseBounding(status string, lastCap int) (uint64, int, error) {
	for line := range strings.SplitSeq(status, "\n") {
		v, ok := strings.CutPrefix(line, "CapBnd:")
		if !ok {
			continue
		}
		set, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("reading the capability bounding set (/proc/self/status %q): %w", line, err)
		}
		if lastCap < 0 {
			lastCap = 63 - bits.LeadingZeros64(set)
		}
		return set, lastCap, nil
	}
	return 0, 0, errors.New("/proc/self/status has no CapBnd line")
}

func readLastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// KindAdaptations are the changes kb-bench makes to a kind cluster so that
// it works on this host with this node image. Each is recorded with the
// cluster's options, and said on one line when the cluster is made.
type KindAdaptations struct {
	// FailCgroupV1Off sets the kubelet's failCgroupV1: false: the host
	// runs cgroup v1, which the kubelet refuses by default since v1.35.
	FailCgroupV1Off bool `json:"failCgroupV1Off,omitempty"`
	// RestrictOOMScoreAdj sets containerd's restrict_oom_score_adj: the
	// host cannot grant CAP_SYS_RESOURCE, without which a pod sandbox
	// cannot lower its oom_score_adj and does not start.
	RestrictOOMScoreAdj bool `json:"restrictOOMScoreAdj,omitempty"`
	// Snapshotter is the containerd snapshotter kb-bench chose for the
	// nodes (SnapshotterEnv): overlayfs when the runtime stores images
	// with fuse-overlayfs, for which kind's entrypoint would pick a
	// fuse-overlayfs snapshotter the node image may lack.
	Snapshotter string `json:"snapshotter,omitempty"`
	// EtcdImageTag is the etcd image tag kubeadm uses, from the node
	// image's EtcdImageTagLabel.
	EtcdImageTag string `json:"etcdImageTag,omitempty"`
}

var imageTagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// AdaptKind decides the adaptations for host h and a node image with
// labels. A label with a value that is not an image tag is an error.
func AdaptKind(h KindHost, labels map[string]string) (KindAdaptations, error) {
	a := KindAdaptations{
		FailCgroupV1Off:     h.CgroupVersion == "1",
		RestrictOOMScoreAdj: h.Bounding&(1<<capSysResource) == 0,
	}
	if h.StorageDriver == "fuse-overlayfs" && !h.SnapshotterSet {
		a.Snapshotter = "overlayfs"
	}
	if tag, ok := labels[EtcdImageTagLabel]; ok {
		if !imageTagRE.MatchString(tag) {
			return a, spec.Input(fmt.Errorf("the node image's label %s=%q is not an image tag: rebuild the image (make kind-node-image), or use another --node-image", EtcdImageTagLabel, tag))
		}
		a.EtcdImageTag = tag
	}
	return a, nil
}

// Lines says each adaptation and why, one line each.
func (a KindAdaptations) Lines() []string {
	var lines []string
	if a.FailCgroupV1Off {
		lines = append(lines, "the host runs cgroup v1, which the kubelet refuses by default: kubelet failCgroupV1: false")
	}
	if a.RestrictOOMScoreAdj {
		lines = append(lines, "the host's capability bounding set lacks CAP_SYS_RESOURCE, without which pod sandboxes cannot lower oom_score_adj: containerd restrict_oom_score_adj = true")
	}
	if a.Snapshotter != "" {
		lines = append(lines, fmt.Sprintf("Docker stores images with fuse-overlayfs, for which kind's nodes would use a fuse-overlayfs snapshotter the node image may lack: %s=%s (set it yourself to choose)", SnapshotterEnv, a.Snapshotter))
	}
	if a.EtcdImageTag != "" {
		lines = append(lines, fmt.Sprintf("the node image holds etcd %s (its label %s), not kubeadm's default: kubeadm etcd.local.imageTag %s", a.EtcdImageTag, EtcdImageTagLabel, a.EtcdImageTag))
	}
	return lines
}

// imageLabels reads the labels of image from the runtime rt.
func imageLabels(ctx context.Context, rt, image string) (map[string]string, error) {
	out, err := exec.CommandContext(ctx, rt, "image", "inspect", "--format", "{{json .Config.Labels}}", image).Output()
	if err != nil {
		return nil, fmt.Errorf("reading the labels of %s (`%s image inspect`): %w", image, rt, err)
	}
	var labels map[string]string // null: none
	if err := json.Unmarshal(out, &labels); err != nil {
		return nil, fmt.Errorf("reading the labels of %s: %w (`%s image inspect` printed %q)", image, err, rt, strings.TrimSpace(string(out)))
	}
	return labels, nil
}

// privilegedWorks checks, before kind's create, that the runtime rt can
// start a privileged container of image and exec into it, as kind starts
// its nodes and then does everything by exec: on a host whose capability
// bounding set lacks what runc grants a privileged container, both fail
// (`unable to apply caps: operation not permitted`), and kind's own error
// would not say why. The container is removed whatever happens; j removes
// it should kb-bench die first. extra are more `run` flags (a test picks a
// runtime with them).
func privilegedWorks(ctx context.Context, rt, image, cluster string, h KindHost, j janitor, extra ...string) error {
	name := fmt.Sprintf("kb-bench-preflight-%s-%d", cluster, os.Getpid())
	j.RunOnDeath(fmt.Sprintf("%s rm -f -v %s >/dev/null 2>&1", rt, name))
	defer func() { _ = exec.Command(rt, "rm", "-f", "-v", name).Run() }()
	run := append([]string{"run", "-d", "--privileged", "--name", name, "--label", "dev.kb-bench.preflight=" + cluster}, extra...)
	run = append(run, "--entrypoint", "sleep", image, "infinity")
	step, stderr := "run --privileged", new(bytes.Buffer)
	cmd := exec.CommandContext(ctx, rt, run...)
	cmd.Stderr = stderr
	err := cmd.Run()
	if err == nil {
		step = "exec"
		cmd = exec.CommandContext(ctx, rt, "exec", name, "true")
		cmd.Stderr = stderr
		err = cmd.Run()
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("checking that privileged containers start: %w", ctx.Err())
	}
	missing := strings.Join(h.MissingCaps(), ", ")
	return spec.Input(fmt.Errorf("privileged containers cannot start here, and a kind node is one: `%s %s` failed (%v): %s. "+
		"This machine's capability bounding set lacks %s (/proc/self/status CapBnd), which runc asks for in every privileged container and every exec into one. "+
		"Make the runtime leave out what the host lacks: run scripts/kind-host.sh as root (it installs a runc wrapper as Docker's default runtime; see the README on restricted hosts), "+
		"or use the local target (the default)",
		rt, step, err, strings.TrimRight(firstLine(stderr.Bytes()), "."), missing))
}

// janitor is what privilegedWorks needs of proc.Janitor.
type janitor interface{ RunOnDeath(cmd string) }

// KindConfigHere renders the configuration KindUp would create here: o's,
// with the adaptations this host and the node image (when the runtime
// holds it) call for; o's alone when no runtime answers.
func KindConfigHere(ctx context.Context, o KindOptions, getenv func(string) string) ([]byte, error) {
	getenv = getenvOr(getenv)
	if err := o.Defaults(); err != nil {
		return nil, err
	}
	if rt, err := kindRuntime(getenv); err == nil {
		if h, err := DetectKindHost(ctx, rt, getenv); err == nil {
			labels, _ := imageLabels(ctx, rt, o.NodeImage) // none when absent
			if o.Adapt, err = AdaptKind(h, labels); err != nil {
				return nil, err
			}
		}
	}
	return KindConfigYAML(o)
}
