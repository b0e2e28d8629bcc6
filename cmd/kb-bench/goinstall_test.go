package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/results/store"
)

// goInstallVersion is the version the checkout is served as.
const goInstallVersion = "v0.0.0-checkout"

// modulePath is kb-bench's module path.
const modulePath = "github.com/kb-bench/kb-bench"

// fileProxy makes a Go module proxy in dir (for GOPROXY=file://dir)
// serving the checkout at root as modulePath@goInstallVersion: the files
// git tracks or would track, as a release would publish them.
func fileProxy(t *testing.T, root, dir string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var files []modzip.File
	for _, name := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil { // not deleted in the work tree
			files = append(files, checkoutFile{root, name})
		}
	}
	at := filepath.Join(dir, modulePath, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	z, err := os.Create(filepath.Join(at, goInstallVersion+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if err := modzip.Create(z, module.Version{Path: modulePath, Version: goInstallVersion}, files); err != nil {
		t.Fatalf("module zip of the checkout: %v", err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": goInstallVersion, "Time": time.Now().UTC()})
	for name, content := range map[string][]byte{"list": []byte(goInstallVersion + "\n"), goInstallVersion + ".mod": gomod, goInstallVersion + ".info": info} {
		if err := os.WriteFile(filepath.Join(at, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkoutFile is a file of the checkout, for modzip.Create.
type checkoutFile struct{ root, name string }

func (f checkoutFile) Path() string                 { return f.name }
func (f checkoutFile) Lstat() (os.FileInfo, error)  { return os.Lstat(filepath.Join(f.root, f.name)) }
func (f checkoutFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.root, f.name)) }

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// A Go user without a checkout: in an empty directory with a fresh HOME,
// `go install github.com/kb-bench/kb-bench/cmd/kb-bench@VERSION` from a
// module proxy (a file proxy made from this checkout, in front of the
// configured one), then `kb-bench local install` builds the control plane
// from the pins embedded in that binary, and `kb-bench run` works.
//
// What is shared with the machine, to keep make test's time reasonable:
// Go's build cache (content-addressed: a package is reused only when its
// source and flags are the same, so what runs is what a fresh machine
// would build, only sooner; -trimpath keeps the module cache's path out of
// the cache keys), and the module cache's downloads, served as one more
// file proxy (the same module zips the configured proxy serves, checked
// against the same go.sum). The module cache, HOME, the kb-bench cache and
// the working directory are fresh.
func TestGoInstallWithoutCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kb-bench and the control plane from a module proxy: skipped with -short")
	}
	if _, err := cluster.FindBinaries("", os.Getenv); err != nil {
		if os.Getenv("KB_BENCH_REQUIRE_CONTROL_PLANE") == "" {
			t.Skipf("no control plane here, so no warm build cache: %v", err)
		}
	}
	root := goEnv(t, "GOMOD")
	if root == "" || root == os.DevNull {
		t.Skip("not in kb-bench's module")
	}
	root = filepath.Dir(root)
	proxy := t.TempDir()
	fileProxy(t, root, proxy)

	home, work := t.TempDir(), t.TempDir()
	goproxy := "file://" + proxy + ",file://" + filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download") + "," + goEnv(t, "GOPROXY")
	env := append(os.Environ(),
		"HOME="+home, "XDG_CACHE_HOME=", "XDG_STATE_HOME=", "KB_BENCH_CACHE=", "KUBEBUILDER_ASSETS=", "GOPATH="+filepath.Join(home, "go"), "GOMODCACHE=",
		"GOCACHE="+goEnv(t, "GOCACHE"), "GOPROXY="+goproxy, "GONOSUMDB="+modulePath, "GOFLAGS=-trimpath -modcacherw", "GOTOOLCHAIN=local", "GOWORK=off")
	step := func(name string, args ...string) string {
		t.Helper()
		begin := time.Now()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		t.Logf("%s %s (%s):\n%s", name, strings.Join(args, " "), time.Since(begin).Round(time.Second), out)
		if err != nil {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
		return string(out)
	}
	step("go", "install", modulePath+"/cmd/kb-bench@"+goInstallVersion)
	kb := filepath.Join(home, "go", "bin", "kb-bench")
	if out := step(kb, "version"); !strings.Contains(out, "kb-bench "+goInstallVersion) {
		t.Errorf("kb-bench version does not say %s:\n%s", goInstallVersion, out)
	}
	cache := filepath.Join(home, ".cache", "kb-bench", "control-plane", cluster.KubeVersion)
	if out := step(kb, "local", "install"); !strings.Contains(out, cache) {
		t.Errorf("local install does not print %s:\n%s", cache, out)
	}
	for _, prog := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(cache, prog)); err != nil {
			t.Errorf("local install built no %s: %v", prog, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "kube-controller-manager")); err == nil {
		t.Error("local install built kube-controller-manager, which the default run does not need")
	}
	out := filepath.Join(work, "result")
	step(kb, "run", "--writers", "4", "--duration", "2s", "--out", out)
	r, err := store.Read(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Target.ServerVersion != cluster.KubeVersion || r.Summary.Successes == 0 {
		t.Errorf("run: target %+v, %d successes", r.Target, r.Summary.Successes)
	}
}
