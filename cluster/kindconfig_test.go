package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/kb-bench/kb-bench/internal/golden"
	"github.com/kb-bench/kb-bench/spec"
)

// The kind configurations kb-bench generates, default and tuned, against
// golden files (go test ./cluster -run KindConfig -update rewrites them).
func TestKindConfigGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		o    KindOptions
	}{
		{"default", KindOptions{}},
		{"tuned", KindOptions{Name: "bench", NodeImage: "example/node:v1.37.1", ControlPlanes: 3, EtcdOnTmpfs: true,
			APIServerArgs: []string{"max-requests-inflight=800", "max-mutating-requests-inflight=400"}}},
		// A restricted host (cgroup v1, no CAP_SYS_RESOURCE, fuse-overlayfs)
		// and a node image with its own etcd, beside etcd on tmpfs.
		{"adapted", KindOptions{Name: "adapted", NodeImage: "kb-bench/kind-node:v1.37.1", EtcdOnTmpfs: true,
			Adapt: KindAdaptations{FailCgroupV1Off: true, RestrictOOMScoreAdj: true, Snapshotter: "overlayfs", EtcdImageTag: "3.6.16-0"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := KindConfigYAML(c.o)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "kind-"+c.name+".yaml.golden", got)
			// What kind reads back: the nodes, and patches that append to
			// kind's own apiserver flags instead of replacing them.
			var back v1alpha4.Cluster
			if err := yaml.UnmarshalStrict(got, &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Nodes) != max(c.o.ControlPlanes, 1) {
				t.Errorf("%d nodes", len(back.Nodes))
			}
			for _, p := range back.KubeadmConfigPatchesJSON6902 {
				if strings.Contains(p.Patch, `"op":"replace"`) || strings.Contains(p.Patch, `"path":"/apiServer/extraArgs"`) {
					t.Errorf("a patch replaces kind's own settings: %s", p.Patch)
				}
			}
		})
	}
}

// What kb-bench adapts for a host and a node image: nothing on a full
// host, each change for its own cause, and the user's own snapshotter kept.
func TestAdaptKind(t *testing.T) {
	full := FullKindHost()
	restricted := full
	restricted.CgroupVersion, restricted.StorageDriver, restricted.Bounding = "1", "fuse-overlayfs", 0x1fffeffffff // this machine's
	userSnapshotter := restricted
	userSnapshotter.SnapshotterSet = true
	for _, tc := range []struct {
		name   string
		h      KindHost
		labels map[string]string
		want   KindAdaptations
	}{
		{"full host, kindest/node", full, nil, KindAdaptations{}},
		{"restricted host", restricted, map[string]string{"other": "x"}, KindAdaptations{FailCgroupV1Off: true, RestrictOOMScoreAdj: true, Snapshotter: "overlayfs"}},
		{"the user's snapshotter", userSnapshotter, nil, KindAdaptations{FailCgroupV1Off: true, RestrictOOMScoreAdj: true}},
		{"offline node image", full, map[string]string{EtcdImageTagLabel: "3.6.16-0"}, KindAdaptations{EtcdImageTag: "3.6.16-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AdaptKind(tc.h, tc.labels)
			if err != nil || got != tc.want {
				t.Errorf("AdaptKind: %+v (%v), want %+v", got, err, tc.want)
			}
			var n int
			for _, set := range []bool{got.FailCgroupV1Off, got.RestrictOOMScoreAdj, got.Snapshotter != "", got.EtcdImageTag != ""} {
				if set {
					n++
				}
			}
			if lines := got.Lines(); len(lines) != n {
				t.Errorf("%d adaptations said in %d lines: %q", n, len(lines), lines)
			}
		})
	}
	if _, err := AdaptKind(full, map[string]string{EtcdImageTagLabel: "3.6; rm -rf /"}); !spec.IsInput(err) {
		t.Errorf("a label that is no image tag: %v, want bad input", err)
	}
}

// The bounding set is read from /proc/self/status and the capabilities it
// lacks are named.
func TestBoundingSet(t *testing.T) {
	status := "Name:\tkb-bench\nCapPrm:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\nCapAmb:\t0000000000000000\n"
	set, last, err := parseBounding(status, 40)
	if err != nil || set != 0x1fffeffffff || last != 40 {
		t.Fatalf("parseBounding: %x %d %v", set, last, err)
	}
	h := KindHost{Bounding: set, LastCap: last}
	if got := h.MissingCaps(); len(got) != 1 || got[0] != "CAP_SYS_RESOURCE" {
		t.Errorf("missing %v, want [CAP_SYS_RESOURCE]", got)
	}
	if _, last, _ := parseBounding(status, -1); last != 40 {
		t.Errorf("without cap_last_cap the highest bit stands for it: %d", last)
	}
	if got := FullKindHost().MissingCaps(); len(got) != 0 {
		t.Errorf("a full host misses %v", got)
	}
	if _, _, err := parseBounding("Name:\tx\n", 40); err == nil {
		t.Error("no CapBnd line: no error")
	}
}

func TestKindOptionsBadInput(t *testing.T) {
	for _, o := range []KindOptions{
		{ControlPlanes: 2},
		{Name: "Bench_1"},
		{APIServerArgs: []string{"--max-requests-inflight=10"}},
		{APIServerArgs: []string{"max-requests-inflight"}},
	} {
		if _, err := KindConfig(o); !spec.IsInput(err) {
			t.Errorf("%+v: %v, want bad input", o, err)
		}
	}
}

// The constants kb-bench keeps about kind's images agree with the kind
// library it links: the node image's tag is DefaultKindKubeVersion, and
// KindLoadBalancerImage is kind's (internal) loadbalancer.Image, read from
// kind's source in the module cache.
func TestKindImagesMatchKind(t *testing.T) {
	if !strings.Contains(DefaultKindNodeImage, "kindest/node:"+DefaultKindKubeVersion+"@sha256:") {
		t.Errorf("DefaultKindNodeImage %s is not kindest/node:%s pinned by digest", DefaultKindNodeImage, DefaultKindKubeVersion)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kind").Output()
	if err != nil {
		t.Skipf("go list -m sigs.k8s.io/kind: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg", "cluster", "internal", "loadbalancer", "const.go"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "const Image = \"" + KindLoadBalancerImage + "\""; !strings.Contains(string(src), want) {
		t.Errorf("kind's loadbalancer/const.go does not say %s:\n%s", want, src)
	}
}

// kb-bench's own runtime commands (image pulls, the janitor, the network)
// use the runtime kind's provider does: with nerdctl and podman on PATH and
// no docker, kind picks nerdctl, and so must kb-bench.
func TestKindRuntimeIsTheOneKindPicks(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"podman", "nerdctl"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct{ provider, want string }{{"", "nerdctl"}, {"podman", "podman"}} {
		env["KIND_EXPERIMENTAL_PROVIDER"] = tt.provider
		if got, err := kindRuntime(getenv); err != nil || got != tt.want {
			t.Errorf("KIND_EXPERIMENTAL_PROVIDER=%q: runtime %q (%v), want %q, as kind's DetectNodeProvider", tt.provider, got, err, tt.want)
		}
	}
}
