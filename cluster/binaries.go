package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kb-bench/kb-bench/cluster/upstream"
	"github.com/kb-bench/kb-bench/spec"
)

// Versions of the local control plane that Install builds.
const (
	KubeVersion = upstream.KubeVersion
	EtcdVersion = upstream.EtcdVersion
)

// Where FindBinaries found the binaries (Binaries.Source).
const (
	SourceFlag    = "--control-plane-bin"
	SourceEnvtest = "KUBEBUILDER_ASSETS"
	SourceCache   = "cache"
)

// Binaries locates the kube-apiserver and etcd executables of a local
// control plane.
type Binaries struct {
	// Dir holds both executables.
	Dir string
	// APIServer and Etcd are the executables' paths.
	APIServer string
	Etcd      string
	// ControllerManager is kube-controller-manager's path when Dir holds
	// it (it is needed only with LocalOptions.ControllerManager).
	ControllerManager string
	// Source says where they were found: SourceFlag, SourceEnvtest or SourceCache.
	Source string
	// PassedOver says why a place looked at first was not used (an
	// incomplete $KUBEBUILDER_ASSETS), for the user to see; "" otherwise.
	PassedOver string
}

// CacheDir is where Install (`kb-bench local install`, `make
// control-plane`) puts the binaries:
// ${KB_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kb-bench}/control-plane/<KubeVersion>.
func CacheDir(getenv func(string) string) string {
	return filepath.Join(userDir(getenv, "KB_BENCH_CACHE", "XDG_CACHE_HOME", "/.cache"), "control-plane", KubeVersion)
}

// FindBinaries looks for kube-apiserver and etcd in explicitDir (the
// --control-plane-bin flag) when it is set, else in $KUBEBUILDER_ASSETS (the
// setup-envtest layout), else in CacheDir. A missing explicit directory is an
// error of its own rather than a silent fallback. When nothing is found the
// spec.Input error lists every place looked and how to get the binaries.
func FindBinaries(explicitDir string, getenv func(string) string) (Binaries, error) {
	getenv = getenvOr(getenv)
	if explicitDir != "" {
		b, err := binariesIn(explicitDir, SourceFlag)
		if err != nil {
			return Binaries{}, spec.Input(fmt.Errorf("--control-plane-bin %s: %w: %s", explicitDir, err, howToGet))
		}
		return b, nil
	}
	envtest := "KUBEBUILDER_ASSETS: not set"
	if dir := getenv("KUBEBUILDER_ASSETS"); dir != "" {
		b, err := binariesIn(dir, SourceEnvtest)
		if err == nil {
			return b, nil
		}
		envtest = fmt.Sprintf("KUBEBUILDER_ASSETS=%s: %v", dir, err)
	}
	dir := CacheDir(getenv)
	b, err := binariesIn(dir, SourceCache)
	if err == nil {
		if getenv("KUBEBUILDER_ASSETS") != "" {
			b.PassedOver = envtest + "; using the cache " + dir
		}
		return b, nil
	}
	return Binaries{}, spec.Input(fmt.Errorf("the local control plane needs kube-apiserver and etcd, which were not found (looked in: %s; cache %s: %v): %s",
		envtest, dir, err, howToGet))
}

const howToGet = "run `kb-bench local install` (builds kube-apiserver " + KubeVersion +
	" and etcd " + EtcdVersion + " from the pinned source with your Go toolchain, ~5 minutes once; `make control-plane` in a checkout), or pass --control-plane-bin DIR, or set KUBEBUILDER_ASSETS"

// InstallOptions configures Install.
type InstallOptions struct {
	// ControllerManager builds kube-controller-manager too.
	ControllerManager bool
	// KindNode builds every program the offline kind node image holds
	// (upstream.NodePrograms), the control plane's among them.
	KindNode bool
	// Log receives progress; nil discards it.
	Log io.Writer
	// Getenv reads the environment for CacheDir (os.Getenv when nil).
	Getenv func(string) string
}

// Install builds the pinned local control plane (etcd and kube-apiserver,
// and kube-controller-manager with o.ControllerManager) from source with
// the user's Go toolchain into CacheDir, skipping what is there already,
// and returns the directory.
func Install(ctx context.Context, o InstallOptions) (string, error) {
	programs := []string{upstream.Etcd, upstream.APIServer}
	if o.ControllerManager {
		programs = append(programs, upstream.ControllerManager)
	}
	if o.KindNode {
		programs = upstream.NodePrograms()
	}
	dir := CacheDir(getenvOr(o.Getenv))
	return dir, upstream.Build(ctx, upstream.Options{Dir: dir, Programs: programs, Log: o.Log})
}

// binariesIn checks that dir holds executable kube-apiserver and etcd files.
func binariesIn(dir, source string) (Binaries, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Dir: abs, APIServer: filepath.Join(abs, "kube-apiserver"), Etcd: filepath.Join(abs, "etcd"), Source: source}
	var missing []string
	for _, p := range []string{b.APIServer, b.Etcd} {
		if err := upstream.Executable(p); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) > 0 {
		return Binaries{}, errors.New(strings.Join(missing, ", "))
	}
	if kcm := filepath.Join(abs, "kube-controller-manager"); upstream.Executable(kcm) == nil {
		b.ControllerManager = kcm
	}
	return b, nil
}
