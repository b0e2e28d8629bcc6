package readfile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A regular file within its bound is read whole; anything else is refused
// at once, with an error that says what the file is and what to do.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(ok, []byte("name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), 1025), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		want       string // "" reads the file
	}{
		{"regular", ok, ""},
		{"link to a regular file", link, ""},
		{"device", "/dev/zero", "is a device"},
		{"fifo without a writer", fifo, "is a named pipe"},
		{"over the bound", big, "larger than 1 KiB"},
		{"directory", dir, "is a directory"},
		{"missing", filepath.Join(dir, "none"), "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The test's own deadline is the only limit: a FIFO or
			// /dev/zero that blocked or read forever fails it.
			b, err := Read(t.Context(), c.path, 1024, "the profile")
			if c.want == "" {
				if err != nil || string(b) != "name: x\n" {
					t.Fatalf("Read = %q, %v", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "the profile") {
				t.Fatalf("Read error %v, want one saying %q about the profile", err, c.want)
			}
		})
	}
}

// endless is an endless reader that cancels its context on its second
// read: a read in progress when the interrupt comes.
type endless struct {
	reads  int
	cancel context.CancelFunc
}

func (e *endless) Read(p []byte) (int, error) {
	e.reads++
	if e.reads == 2 {
		e.cancel()
	}
	return len(p), nil
}

// A cancelled context stops a read in progress at its next chunk, and a
// stream that never ends stops at the bound.
func TestReadAllStops(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e := &endless{cancel: cancel}
	_, err := readAll(ctx, e, 0, 1<<40, "x", "the result")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("readAll error %v, want it stopped by the cancel", err)
	}
	if e.reads != 2 {
		t.Errorf("%d reads, want none after the cancel", e.reads)
	}

	e = &endless{cancel: func() {}}
	_, err = readAll(t.Context(), e, 0, 3*chunk, "x", "the result")
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("readAll error %v, want the bound", err)
	}

	if _, err := Read(ctx, "/dev/null", 10, "the result"); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled context: %v, want it refused", err)
	}
}
