package upstream

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/spec"
)

// The versions kb-bench reports are the ones the embedded modules build:
// the required k8s.io/kubernetes and etcd server, and every staging module
// replaced with the matching v0 release.
func TestVersionsMatchThePins(t *testing.T) {
	kube, err := modules.ReadFile("kube/go.mod.txt")
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := modules.ReadFile("etcd/go.mod.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := "require k8s.io/kubernetes " + KubeVersion + "\n"; !strings.Contains(string(kube), want) {
		t.Errorf("kube/go.mod.txt does not say %q", want)
	}
	if want := "require go.etcd.io/etcd/server/v3 " + EtcdVersion + "\n"; !strings.Contains(string(etcd), want) {
		t.Errorf("etcd/go.mod.txt does not say %q", want)
	}
	staging := "v0." + strings.TrimPrefix(KubeVersion, "v1.")
	for _, line := range strings.Split(string(kube), "\n") {
		if strings.Contains(line, "=> k8s.io/") && !strings.HasSuffix(line, " "+staging) {
			t.Errorf("replace %q is not %s", strings.TrimSpace(line), staging)
		}
	}
	for _, prog := range []string{Etcd, APIServer, ControllerManager, Kubeadm} {
		module, pkg := program(prog)
		tools, err := modules.ReadFile(module + "/tools.go.txt")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(tools), `"`+pkg+`"`) {
			t.Errorf("%s/tools.go.txt does not import %s: go mod tidy would not pin its dependencies", module, pkg)
		}
	}
}

// Without the go command, what is built already is kept and what is
// missing is bad input that says what to do.
func TestBuildWithoutGo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, Etcd), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	if err := Build(context.Background(), Options{Dir: dir, Programs: []string{Etcd}}); err != nil {
		t.Errorf("etcd is built already, yet: %v", err)
	}
	err := Build(context.Background(), Options{Dir: dir, Programs: []string{Etcd, APIServer}})
	if !spec.IsInput(err) || !strings.Contains(err.Error(), "building kube-apiserver from the pinned source needs the Go toolchain") || !strings.Contains(err.Error(), "install Go (https://go.dev/dl/)") {
		t.Errorf("Build without go: %v, want bad input saying to install Go", err)
	}
}
