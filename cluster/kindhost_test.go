package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/spec"
)

type noJanitor struct{}

func (noJanitor) RunOnDeath(string) {}

// sleepImage imports into docker an image built here (nothing is pulled)
// that has what the privileged-container check runs: sleep, which waits
// until killed, and true. It is removed when the test ends.
func sleepImage(t *testing.T, docker string) string {
	t.Helper()
	src := t.TempDir()
	prog := `package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	if filepath.Base(os.Args[0]) == "true" {
		return
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, os.Interrupt)
	<-c
}
`
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", "prog", "main.go")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the image's program: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(src, "prog"))
	if err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	for _, name := range []string{"bin/sleep", "bin/true"} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(bin))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(bin); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	image := fmt.Sprintf("kb-bench-test/sleep:%d", os.Getpid())
	imp := exec.Command(docker, "import", "--change", "ENV PATH=/bin", "-", image)
	imp.Stdin = &tarball
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(docker, "rmi", "-f", image).Run() })
	return image
}

// The privileged-container check against the real Docker daemon, with
// plain runc as the runtime (whatever the daemon's default): on a host
// whose bounding set lacks a capability (this machine's lacks
// CAP_SYS_RESOURCE) it fails as kind would, names the capability and what
// to do, and is bad input (exit 2); on a full host it passes. Either way
// the check's container is gone.
func TestPrivilegedCheckWithPlainRunc(t *testing.T) {
	docker := dockerOrSkip(t)
	if exec.Command(docker, "info", "--format", "{{json .Runtimes}}").Run() != nil {
		t.Skip("docker info does not list runtimes")
	}
	out, _ := exec.Command(docker, "info", "--format", "{{json .Runtimes}}").Output()
	if !strings.Contains(string(out), `"runc"`) {
		t.Skipf("the daemon has no runtime named runc: %s", out)
	}
	image := sleepImage(t, docker)
	host, err := DetectKindHost(context.Background(), docker, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("kt-check-%d", os.Getpid())
	err = privilegedWorks(context.Background(), docker, image, name, host, noJanitor{}, "--runtime", "runc")
	t.Logf("bounding set %x, missing %v: %v", host.Bounding, host.MissingCaps(), err)
	if missing := host.MissingCaps(); len(missing) > 0 {
		if !spec.IsInput(err) {
			t.Fatalf("runc on a host that lacks %v: %v, want bad input", missing, err)
		}
		for _, w := range append(missing, "privileged containers cannot start here", "scripts/kind-host.sh", "operation not permitted") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error does not say %q", w)
			}
		}
	} else if err != nil {
		t.Fatalf("runc on a full host: %v", err)
	}
	if left := dockerLines(t, docker, "ps", "-aq", "--filter", "label=dev.kb-bench.preflight="+name); len(left) > 0 {
		t.Errorf("the check left containers %v", left)
	}
}
