// Command kb-bench-image writes kb-bench's container image as a tarball,
// without Docker or a registry (scripts/image.sh runs it for make image):
//
//	kb-bench-image -binary bin/linux-amd64/kb-bench -tag kb-bench/kb-bench:v1 -out bin/kb-bench-image.tar
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/kb-bench/kb-bench/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kb-bench-image:", err)
		os.Exit(1)
	}
}

// run builds and writes the image the arguments describe.
func run(args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("kb-bench-image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	binary := fs.String("binary", "", "the static kb-bench binary (CGO_ENABLED=0 GOOS=linux)")
	certs := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship")
	arch := fs.String("arch", runtime.GOARCH, "the GOARCH the binary is built for")
	tag := fs.String("tag", "", "the image's name, REPOSITORY:TAG")
	out := fs.String("out", "", "the tarball to write")
	version := fs.String("version", "", "the org.opencontainers.image.version label")
	revision := fs.String("revision", "", "the org.opencontainers.image.revision label (a commit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: everything is a flag", fs.Args())
	}
	if *binary == "" || *tag == "" || *out == "" {
		return errors.New("-binary, -tag and -out are required")
	}
	// SOURCE_DATE_EPOCH (reproducible-builds.org) dates the image, so that
	// one commit always gives the same image.
	var created time.Time
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", s)
		}
		created = time.Unix(sec, 0)
	}
	labels := map[string]string{"org.opencontainers.image.title": "kb-bench"}
	for k, v := range map[string]string{"org.opencontainers.image.version": *version, "org.opencontainers.image.revision": *revision} {
		if v != "" {
			labels[k] = v
		}
	}
	img, err := ociimage.Build(ociimage.Options{Binary: *binary, CACerts: *certs, Arch: *arch, Created: created, Labels: labels})
	if err != nil {
		return err
	}
	return ociimage.Write(*out, *tag, img)
}
