package ociimage_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kb-bench/kb-bench/internal/ociimage"
)

// tinyBinary builds a small static Go program for the host's architecture.
func tinyBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build a test binary: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello")
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", out, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=", "GO111MODULE=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func caFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(p, []byte("-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuildAndWrite(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("builds a Linux binary for the host's architecture")
	}
	bin, ca := tinyBinary(t), caFile(t)
	created := time.Date(2026, 11, 23, 8, 31, 57, 0, time.UTC)
	o := ociimage.Options{Binary: bin, CACerts: ca, Arch: runtime.GOARCH, Created: created, Labels: map[string]string{"org.opencontainers.image.version": "v9"}}
	img, err := ociimage.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out", "image.tar")
	const tag = "kb-bench/kb-bench:v9"
	if err := ociimage.Write(out, tag, img); err != nil {
		t.Fatal(err)
	}

	// docker load reads manifest.json's RepoTags.
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{tag}) {
		t.Errorf("manifest.json %+v, want one image tagged %s", manifest, tag)
	}

	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(out, &ref)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{"/kb-bench"}) || c.Cmd != nil || c.User != "65532:65532" || c.WorkingDir != "/tmp" {
		t.Errorf("config: entrypoint %q, cmd %q, user %q, workdir %q", c.Entrypoint, c.Cmd, c.User, c.WorkingDir)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || !cfg.Created.Time.Equal(created) || c.Labels["org.opencontainers.image.version"] != "v9" {
		t.Errorf("config: %s/%s created %v labels %v", cfg.OS, cfg.Architecture, cfg.Created, c.Labels)
	}

	layers, err := back.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 on an empty base", len(layers))
	}
	rc := mutate.Extract(back)
	defer rc.Close()
	files := map[string]*tar.Header{}
	contents := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n := strings.TrimSuffix(h.Name, "/") // directories, with or without
		files[n] = h
		if contents[n], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]string{"kb-bench": bin, "etc/ssl/certs/ca-certificates.crt": ca} {
		h := files[path]
		if h == nil {
			t.Errorf("%s is not in the image (it has %v)", path, keys(files))
			continue
		}
		data, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(contents[path], data) {
			t.Errorf("%s differs from %s", path, want)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(created) {
			t.Errorf("%s: owner %d:%d, time %v; want root and %v", path, h.Uid, h.Gid, h.ModTime, created)
		}
	}
	if h := files["kb-bench"]; h != nil && h.Mode != 0o755 {
		t.Errorf("/kb-bench mode %o, want 755", h.Mode)
	}
	if h := files["tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v, want a directory with mode 1777", h)
	}

	// The same inputs give the same image.
	again, err := ociimage.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := again.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: digests %s and %s", d1, d2)
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// dynamicBinary returns a dynamically linked executable of the host.
func dynamicBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/bin/true", "/usr/bin/true", "/bin/sh"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return p
			}
		}
	}
	t.Skip("no dynamically linked executable on this host to refuse")
	return ""
}

func TestBuildRefuses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("builds a Linux binary for the host's architecture")
	}
	bin, ca := tinyBinary(t), caFile(t)
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	for _, tc := range []struct {
		name string
		o    ociimage.Options
		want string
	}{
		{"not an executable", ociimage.Options{Binary: ca, CACerts: ca, Arch: runtime.GOARCH}, "not a Linux executable"},
		{"another architecture", ociimage.Options{Binary: bin, CACerts: ca, Arch: other}, "GOARCH=" + other},
		{"unknown architecture", ociimage.Options{Binary: bin, CACerts: ca, Arch: "pdp11"}, `architecture "pdp11"`},
		{"no CA bundle", ociimage.Options{Binary: bin, CACerts: filepath.Join(t.TempDir(), "none"), Arch: runtime.GOARCH}, "ca-certificates"},
		{"dynamically linked", ociimage.Options{Binary: dynamicBinary(t), CACerts: ca, Arch: runtime.GOARCH}, "CGO_ENABLED=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ociimage.Build(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestWriteRefusesBadTag(t *testing.T) {
	err := ociimage.Write(filepath.Join(t.TempDir(), "x.tar"), "kb-bench/kb-bench:bad tag", nil)
	if err == nil || !strings.Contains(err.Error(), "REPOSITORY:TAG") {
		t.Errorf("got %v", err)
	}
}

// TestRawConfig reads the config as docker does, from its JSON, and checks
// that an image without Created is dated 1970, not year 1.
func TestRawConfig(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("builds a Linux binary for the host's architecture")
	}
	img, err := ociimage.Build(ociimage.Options{Binary: tinyBinary(t), CACerts: caFile(t), Arch: runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Created time.Time `json:"created"`
		Config  struct {
			Entrypoint []string
			User       string
		} `json:"config"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(doc.Config.Entrypoint, []string{"/kb-bench"}) || doc.Config.User != "65532:65532" || !doc.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("raw config %s", raw)
	}
}
