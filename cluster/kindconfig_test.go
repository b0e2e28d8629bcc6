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
