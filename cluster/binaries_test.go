package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/spec"
)

// fakeBinDir makes a dir holding the named files (executable unless the
// name ends in "!").
func fakeBinDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		mode := os.FileMode(0o755)
		if strings.HasSuffix(n, "!") {
			n, mode = strings.TrimSuffix(n, "!"), 0o644
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// makeCache puts both binaries where scripts/control-plane.sh would, under
// the cache root, and returns that dir.
func makeCache(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, "control-plane", KubeVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFindBinaries(t *testing.T) {
	full := fakeBinDir(t, "kube-apiserver", "etcd")
	other := fakeBinDir(t, "kube-apiserver", "etcd")
	noEtcd := fakeBinDir(t, "kube-apiserver")
	notExec := fakeBinDir(t, "kube-apiserver", "etcd!")
	empty := t.TempDir()

	// Cache roots whose control-plane/<KubeVersion> holds both binaries,
	// as KB_BENCH_CACHE, under XDG_CACHE_HOME and under HOME.
	cacheRoot := t.TempDir()
	cacheBin := makeCache(t, cacheRoot)
	xdg := t.TempDir()
	xdgBin := makeCache(t, filepath.Join(xdg, "kb-bench"))
	home := t.TempDir()
	homeBin := makeCache(t, filepath.Join(home, ".cache", "kb-bench"))

	tests := []struct {
		name       string
		explicit   string
		env        map[string]string
		wantDir    string
		wantSource string
		wantErr    []string // substrings of the error; nil means success
	}{
		{name: "explicit dir", explicit: full, env: map[string]string{"KUBEBUILDER_ASSETS": other}, wantDir: full, wantSource: SourceFlag},
		{name: "explicit dir wins over cache", explicit: full, env: map[string]string{"KB_BENCH_CACHE": cacheRoot}, wantDir: full, wantSource: SourceFlag},
		{name: "explicit dir missing etcd is an error, not a fallback", explicit: noEtcd, env: map[string]string{"KB_BENCH_CACHE": cacheRoot},
			wantErr: []string{"--control-plane-bin " + noEtcd, "no etcd", "kb-bench local install"}},
		{name: "explicit etcd not executable", explicit: notExec, wantErr: []string{"etcd is not executable"}},
		{name: "KUBEBUILDER_ASSETS", env: map[string]string{"KUBEBUILDER_ASSETS": other, "KB_BENCH_CACHE": cacheRoot}, wantDir: other, wantSource: SourceEnvtest},
		{name: "KUBEBUILDER_ASSETS incomplete falls back to the cache", env: map[string]string{"KUBEBUILDER_ASSETS": noEtcd, "KB_BENCH_CACHE": cacheRoot},
			wantDir: cacheBin, wantSource: SourceCache},
		{name: "cache under XDG_CACHE_HOME", env: map[string]string{"XDG_CACHE_HOME": xdg, "HOME": home}, wantDir: xdgBin, wantSource: SourceCache},
		{name: "cache under HOME", env: map[string]string{"HOME": home}, wantDir: homeBin, wantSource: SourceCache},
		{name: "nothing anywhere", env: map[string]string{"KUBEBUILDER_ASSETS": empty, "HOME": empty},
			wantErr: []string{
				"KUBEBUILDER_ASSETS=" + empty,
				filepath.Join(empty, ".cache", "kb-bench", "control-plane", KubeVersion),
				"run `kb-bench local install` (builds kube-apiserver v1.37.1 and etcd v3.6.16 from the pinned source with your Go toolchain, ~5 minutes once; `make control-plane` in a checkout)",
				"or pass --control-plane-bin DIR, or set KUBEBUILDER_ASSETS",
			}},
		{name: "KUBEBUILDER_ASSETS unset is said", env: map[string]string{"HOME": empty}, wantErr: []string{"KUBEBUILDER_ASSETS: not set"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := FindBinaries(tc.explicit, envOf(tc.env))
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("found %+v, want an error", b)
				}
				if !spec.IsInput(err) {
					t.Errorf("error is not a spec.Input error (exit 2): %v", err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error does not say %q:\n%v", s, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Falling back from an incomplete KUBEBUILDER_ASSETS is said.
			if passed := tc.env["KUBEBUILDER_ASSETS"] != "" && tc.wantSource == SourceCache; passed != strings.Contains(b.PassedOver, "KUBEBUILDER_ASSETS=") {
				t.Errorf("passed over %q", b.PassedOver)
			}
			b.PassedOver = ""
			want := Binaries{Dir: tc.wantDir, APIServer: filepath.Join(tc.wantDir, "kube-apiserver"), Etcd: filepath.Join(tc.wantDir, "etcd"), Source: tc.wantSource}
			if b != want {
				t.Errorf("got %+v\nwant %+v", b, want)
			}
		})
	}
}

func TestCacheDirMatchesTheBuildScript(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"KB_BENCH_CACHE": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/c/control-plane/" + KubeVersion},
		{map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/kb-bench/control-plane/" + KubeVersion},
		{map[string]string{"HOME": "/h"}, "/h/.cache/kb-bench/control-plane/" + KubeVersion},
		{map[string]string{"KB_BENCH_CACHE": "", "XDG_CACHE_HOME": "", "HOME": "/h"}, "/h/.cache/kb-bench/control-plane/" + KubeVersion},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := CacheDir(envOf(tc.env)); got != tc.want {
				t.Errorf("CacheDir = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDefaultStateDir(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"KB_BENCH_STATE": "/s", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s/local"},
		{map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/kb-bench/local"},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/kb-bench/local"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := DefaultStateDir(envOf(tc.env)); got != tc.want {
				t.Errorf("DefaultStateDir = %s, want %s", got, tc.want)
			}
		})
	}
}
