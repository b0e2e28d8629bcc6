package kubelettest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RequireEnv names the variable that turns a missing Docker daemon from
// a skip into a failure (CI sets it: its machines have Docker).
const RequireEnv = "KB_BENCH_REQUIRE_DOCKER"

// NeedDocker returns the docker CLI of a daemon that answers, or skips
// the test saying why (fails it under RequireEnv).
func NeedDocker(t testing.TB) Docker {
	t.Helper()
	if testing.Short() {
		t.Skip("runs containers: skipped with -short")
	}
	why := ""
	path, err := exec.LookPath("docker")
	if err != nil {
		why = "no docker in PATH"
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := (Docker{Path: path}).ServerVersion(ctx); err != nil {
			why = "the Docker daemon does not answer: " + err.Error()
		}
	}
	if why != "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("%s is set, but %s", RequireEnv, why)
		}
		t.Skipf("the Job's pods run only in Docker containers, and %s (set %s=1 to fail instead)", why, RequireEnv)
	}
	return Docker{Path: path}
}

// Image is kb-bench's image as `make image` builds it, loaded into Docker.
type Image struct {
	// Ref names it: a repository of the test's own, so that nothing else
	// using the daemon is touched, and kb-bench's version as the tag.
	Ref string
	// Version is the kb-bench version inside.
	Version string
}

// versionLabel is the image label holding kb-bench's version.
const versionLabel = "org.opencontainers.image.version"

// BuildImage builds kb-bench's image with scripts/image.sh (what `make
// image` runs) into a temporary tarball, loads it with docker load, and
// removes it from Docker when the test ends.
func BuildImage(t testing.TB, d Docker) Image {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	out := filepath.Join(t.TempDir(), "kb-bench-image.tar")
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "image.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "IMAGE_OUT="+out, "IMAGE_REPO=kb-bench-test-"+hex.EncodeToString(suffix)+"/kb-bench")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, b)
	}
	ctx := context.Background()
	ref, err := d.Load(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.RemoveImage(context.Background(), ref); err != nil {
			t.Errorf("removing the test's image: %v", err)
		}
	})
	version, err := d.ImageLabel(ctx, ref, versionLabel)
	if err != nil {
		t.Fatal(err)
	}
	return Image{Ref: ref, Version: version}
}

// moduleRoot is the kb-bench module's directory, above the test's.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			line, _, _ := bufio.NewReader(bytes.NewReader(b)).ReadLine()
			if strings.TrimSpace(string(line)) == "module github.com/kb-bench/kb-bench" {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the kb-bench module: its scripts/image.sh builds the image")
		}
		dir = parent
	}
}

// StartKubelet starts a Kubelet for the test and, when the test ends,
// stops it, fails the test on anything it met that no kubelet should
// (Err), and checks that none of its containers is left.
func StartKubelet(t testing.TB, o Options) *Kubelet {
	t.Helper()
	if o.Log == nil {
		o.Log = t.Logf
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	k, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := k.Stop(ctx); err != nil {
			t.Errorf("stopping the kubelet: %v", err)
		}
		if err := k.Err(); err != nil {
			t.Errorf("the kubelet met what no kubelet should:\n%v", err)
		}
		if ids, err := o.Docker.Containers(ctx, containerLabel, k.node.Name); err != nil || len(ids) > 0 {
			t.Errorf("containers left behind: %v %v", ids, err)
		}
	})
	return k
}
