// Package ociimage builds kb-bench's container image without Docker or a
// registry: one layer on an empty base holding the static kb-bench binary
// and a CA bundle, run as a non-root user, written as a tarball that
// `docker load`, `kind load image-archive` and `crane push` accept.
package ociimage

import (
	"archive/tar"
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kb-bench/kb-bench/internal/atomicfile"
)

// Where things are in the image, and who runs it.
const (
	BinaryPath  = "/kb-bench"
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// WorkDir is writable by anyone (mode 1777), like /tmp anywhere; the
	// shard Job mounts an emptyDir there over a read-only root.
	WorkDir = "/tmp"
	// User is the numeric user and group the image runs as.
	User = "65532:65532"
)

// Options say what goes into the image.
type Options struct {
	// Binary is the statically linked kb-bench executable for Arch.
	Binary string
	// CACerts is the PEM CA bundle to ship, usually the build host's
	// /etc/ssl/certs/ca-certificates.crt.
	CACerts string
	// Arch is the GOARCH the binary was built for (amd64, arm64...).
	Arch string
	// Created stamps the image and its files; the same inputs and Created
	// give the same image digest. The zero time is 1970-01-01.
	Created time.Time
	// Labels are set on the image config (org.opencontainers.image.*).
	Labels map[string]string
}

// Build returns the image. It refuses a binary that is not a statically
// linked Linux executable for o.Arch, which would fail on an empty base
// with a puzzling "no such file or directory".
func Build(o Options) (v1.Image, error) {
	if err := checkBinary(o.Binary, o.Arch); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, err
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("reading the CA bundle: %w (on Debian or Ubuntu: apt-get install ca-certificates)", err)
	}
	created := cmp.Or(o.Created, time.Unix(0, 0)).UTC()
	layerTar, err := layer(created, []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: CACertsPath[1:], mode: 0o644, data: certs},
		{name: BinaryPath[1:], mode: 0o755, data: bin},
		{name: WorkDir[1:] + "/", mode: 0o1777},
	})
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   l,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "kb-bench-image", Comment: "kb-bench and CA certificates"},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", o.Arch
	cfg.Created = v1.Time{Time: created}
	cfg.Config.Entrypoint = []string{BinaryPath}
	cfg.Config.Cmd = nil
	cfg.Config.User = User
	cfg.Config.WorkingDir = WorkDir
	cfg.Config.Labels = o.Labels
	return mutate.ConfigFile(img, cfg)
}

// Write writes img as a docker-loadable tarball tagged tag to path,
// atomically.
func Write(path, tag string, img v1.Image) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("image tag %q: %w (use REPOSITORY:TAG)", tag, err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(t, img, &buf); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, buf.Bytes(), 0o644)
}

// file is one entry of the layer: a directory when its name ends in "/".
type file struct {
	name string
	mode int64
	data []byte
}

// layer returns an uncompressed tar of files, all owned by root and dated
// created.
func layer(created time.Time, files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: created, Format: tar.FormatPAX}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// machines are the ELF machines of each GOARCH's binaries.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// checkBinary says what is wrong with path as the image's only program.
func checkBinary(path, arch string) error {
	want, ok := machines[arch]
	if !ok {
		return fmt.Errorf("architecture %q: the image builder knows amd64, arm64, arm, ppc64le, s390x and riscv64", arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		if _, ok := errors.AsType[*elf.FormatError](err); ok {
			return fmt.Errorf("%s is not a Linux executable (%v): build it with GOOS=linux", path, err)
		}
		return err
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("%s is built for %v, not %s: build it with GOARCH=%s", path, f.Machine, arch, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked, and the image has no C library: build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}
