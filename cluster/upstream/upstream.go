// Package upstream pins the upstream programs of kb-bench's local control
// plane (kube-apiserver and kube-controller-manager from k8s.io/kubernetes,
// etcd; kubeadm, which the tests use) and of the offline kind node image
// (those with the kubelet, kube-proxy, kube-scheduler and kubectl), and
// builds them from source with the user's Go toolchain, through the Go
// module proxy.
//
// The pins are two small Go modules (kube/ and etcd/: go.mod, go.sum and a
// tools.go naming the commands) kept under .txt names and embedded in the
// binary: a directory holding a go.mod would be another module, which
// go:embed cannot reach and the module zip behind `go install` leaves out.
// `kb-bench local install` and scripts/control-plane.sh both build from
// these files through Build, so a checkout and an installed binary build
// the same thing; scripts/tools.sh runs go commands (get, mod tidy) on them.
package upstream

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

// Versions the pinned modules build. A test checks them against the
// embedded go.mod files.
const (
	KubeVersion = "v1.37.1"
	EtcdVersion = "v3.6.16"
)

// The programs Build knows.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Kubeadm           = "kubeadm"
	Kubelet           = "kubelet"
	KubeProxy         = "kube-proxy"
	Scheduler         = "kube-scheduler"
	Kubectl           = "kubectl"
)

// NodePrograms are the programs a kind node image holds, all built from
// the pins: the kubelet, kubeadm and kubectl on the node, and the control
// plane's and kube-proxy's component images.
func NodePrograms() []string {
	return []string{Etcd, APIServer, ControllerManager, Scheduler, KubeProxy, Kubeadm, Kubelet, Kubectl}
}

//go:embed kube/*.txt etcd/*.txt
var modules embed.FS

// program is where the program name is built from: its package in the
// pinned module (kube or etcd); "" for a program Build does not know.
func program(name string) (module, pkg string) {
	switch name {
	case Etcd:
		return "etcd", "go.etcd.io/etcd/server/v3"
	case APIServer, ControllerManager, Kubeadm, Kubelet, KubeProxy, Scheduler, Kubectl:
		return "kube", "k8s.io/kubernetes/cmd/" + name
	}
	return "", ""
}

// Options configures Build.
type Options struct {
	// Dir receives the executables (cluster.CacheDir).
	Dir string
	// Programs to build, in order (Etcd, APIServer, ...); those already
	// in Dir are kept.
	Programs []string
	// Log receives a line per program and the go command's own output
	// (downloads, errors); nil discards them.
	Log io.Writer
}

// Build builds the programs o names that Dir does not hold yet, each into
// a temporary file renamed into place when it is complete, so that an
// interrupted build never leaves a half-written executable. It needs the
// go command on PATH; without it the error is spec.Input.
func Build(ctx context.Context, o Options) error {
	o.Log = cmp.Or(o.Log, io.Discard)
	var missing []string
	for _, name := range o.Programs {
		if module, _ := program(name); module == "" {
			return fmt.Errorf("upstream: no program %q", name)
		}
		if Executable(filepath.Join(o.Dir, name)) == nil {
			fmt.Fprintf(o.Log, "control plane: %s already built in %s\n", name, o.Dir)
			continue
		}
		missing = append(missing, name)
	}
	if len(missing) == 0 {
		return nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return spec.Input(fmt.Errorf("building %s from the pinned source needs the Go toolchain, and go is not on PATH: install Go (https://go.dev/dl/), or pass --control-plane-bin DIR, or set KUBEBUILDER_ASSETS",
			strings.Join(missing, ", ")))
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", o.Dir, err)
	}
	for _, name := range missing {
		if err := build(ctx, goCmd, name, filepath.Join(o.Dir, name), o); err != nil {
			return err
		}
	}
	return nil
}

func build(ctx context.Context, goCmd, name, dest string, o Options) error {
	module, pkg := program(name)
	version, ldflags := EtcdVersion, "-s -w"
	if module == "kube" {
		// Stamped as upstream's release build does, so that /version and
		// `kubeadm version` report KubeVersion, not a placeholder.
		const v = "k8s.io/component-base/version"
		minor, _, _ := strings.Cut(strings.TrimPrefix(KubeVersion, "v1."), ".")
		version = KubeVersion
		ldflags += fmt.Sprintf(" -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=1 -X %[1]s.gitMinor=%[3]s -X %[1]s.gitTreeState=clean", v, KubeVersion, minor)
	}
	fmt.Fprintf(o.Log, "control plane: building %s %s from %s (minutes the first time, once)...\n", name, version, pkg)
	begin := time.Now()
	mod, err := os.MkdirTemp("", "kb-bench-upstream-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mod)
	if err := writeModule(module, mod); err != nil {
		return err
	}
	out, err := os.CreateTemp(filepath.Dir(dest), "."+name+".")
	if err != nil {
		return err
	}
	out.Close()
	tmp := out.Name()
	defer os.Remove(tmp) // gone once renamed
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", ldflags, "-o", tmp, pkg)
	cmd.Dir = mod
	// The pinned go.sum is complete: nothing may change it, and neither a
	// go.work nor a -mod in the user's GOFLAGS (the last one counts) may
	// pick other versions.
	env := os.Environ()
	goflags := "-mod=readonly"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			goflags = strings.TrimSpace(v + " -mod=readonly")
		}
	}
	cmd.Env = append(env, "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS="+goflags)
	// One writer for both: os/exec then writes from one goroutine.
	var output bytes.Buffer
	cmd.Stdout = io.MultiWriter(o.Log, &output)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("building %s: %w", name, ctx.Err())
		}
		return fmt.Errorf("building %s %s with %s failed (%v): %s: check the network access to the Go module proxy (GOPROXY) and the Go version (go 1.26 or later)",
			name, version, goCmd, err, lastLines(output.String(), 5))
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "control plane: %s built in %s\n", name, time.Since(begin).Round(time.Second))
	return nil
}

// writeModule writes the pinned module name (kube or etcd) into dir under
// its real names: go.mod, go.sum, tools.go.
func writeModule(name, dir string) error {
	entries, err := fs.ReadDir(modules, name)
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := modules.ReadFile(name + "/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, strings.TrimSuffix(e.Name(), ".txt")), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func lastLines(s string, n int) string {
	if s = strings.TrimSpace(s); s == "" {
		return "no output"
	}
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "; ")
}

// Executable says why path is not an executable regular file (nil when it
// is).
func Executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("no %s", filepath.Base(path))
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", filepath.Base(path))
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", filepath.Base(path))
	}
	return nil
}
