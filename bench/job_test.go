package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// The default shard image is a valid reference for any version string,
// a Go pseudo-version's build metadata included.
func TestDefaultImage(t *testing.T) {
	for _, c := range []struct{ version, want string }{
		{"v1.2.3", "kb-bench/kb-bench:v1.2.3"},
		{"v0.0.0-20261127232939-fccd9bd1e2f3+dirty", "kb-bench/kb-bench:v0.0.0-20261127232939-fccd9bd1e2f3-dirty"},
		{"dev", "kb-bench/kb-bench:dev"},
		{"", "kb-bench/kb-bench:dev"},
		{"+x", "kb-bench/kb-bench:x"},
		{strings.Repeat("a", 200), "kb-bench/kb-bench:" + strings.Repeat("a", 128)},
	} {
		got := defaultImage(c.version)
		if got != c.want {
			t.Errorf("defaultImage(%q) = %q, want %q", c.version, got, c.want)
		}
		if _, err := name.NewTag(got); err != nil {
			t.Errorf("defaultImage(%q) = %q is not a valid image tag: %v", c.version, got, err)
		}
	}
}

// kb-bench makes its shard image of its own binary when that is static,
// the same image (id) each time; a dynamically linked kb-bench is refused
// as bad input that says what to do.
func TestSelfImage(t *testing.T) {
	if _, err := os.Stat(caBundle); err != nil {
		t.Skipf("no CA bundle to put in the image: %v", err)
	}
	dir := t.TempDir()
	hello := filepath.Join(dir, "main.go")
	if err := os.WriteFile(hello, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(t *testing.T, cgo string, extra ...string) string {
		bin := filepath.Join(dir, "bin-cgo"+cgo)
		cmd := exec.Command("go", append([]string{"build", "-o", bin}, append(extra, hello)...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		return bin
	}
	static := build(t, "0")
	a, err := selfImageOf(static, "kb-bench/kb-bench:test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := selfImageOf(static, "kb-bench/kb-bench:test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.ID, "sha256:") || a.ID != b.ID {
		t.Errorf("the same binary gave the image ids %q and %q, want one sha256 digest", a.ID, b.ID)
	}
	var archive strings.Builder
	if err := a.Archive(&archive); err != nil || !strings.Contains(archive.String(), `"RepoTags":["kb-bench/kb-bench:test"]`) {
		t.Errorf("the archive does not name its tag (err %v)", err)
	}

	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no C compiler to build a dynamically linked binary with")
	}
	// net with cgo links the C library.
	if err := os.WriteFile(hello, []byte("package main\n\nimport \"net\"\n\nfunc main() { _, _ = net.LookupHost(\"localhost\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = selfImageOf(build(t, "1"), "kb-bench/kb-bench:test")
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamically linked kb-bench: %v, want an error saying to build it with CGO_ENABLED=0", err)
	}
}
