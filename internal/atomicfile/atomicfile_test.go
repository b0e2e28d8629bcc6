package atomicfile

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A write replaces the file whole, with the permissions asked, and leaves
// no temporary file; a write that cannot happen leaves the old file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"first", "second"} {
		if err := WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q (%v), want %q", got, err, content)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir"), []byte("x"), 0o600); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left %d files, want only the written one", len(entries))
	}
}

// Whatever is at the path is never replaced by surprise: a symbolic link
// stays a link (its target is written), and a directory, a dangling link
// and the files the data was made from are refused, untouched.
func TestWriteFileKeepsWhatIsThere(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular.html")
	input := filepath.Join(dir, "result.json")
	for _, p := range []string{regular, input} {
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link.html")
	dangling := filepath.Join(dir, "dangling.html")
	toInput := filepath.Join(dir, "to-input")
	for l, target := range map[string]string{link: "regular.html", dangling: "nowhere/x.html", toInput: input} {
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		path     string
		wantErr  string
		wantMode fs.FileMode // of path (not followed) after the write
		readBack string      // the file to read the data back from
	}{
		{"new", filepath.Join(dir, "new.html"), "", 0, filepath.Join(dir, "new.html")},
		{"regular", regular, "", 0, regular},
		{"link to a regular file", link, "", fs.ModeSymlink, regular},
		{"dangling link", dangling, "a symbolic link to nowhere/x.html, which does not exist", fs.ModeSymlink, ""},
		{"directory", dir, "it is a directory", fs.ModeDir, ""},
		{"an input", input, "one of the files being read to make it", 0, ""},
		{"a link to an input", toInput, "one of the files being read to make it", fs.ModeSymlink, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteFile(tt.path, []byte("new"), 0o644, input)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			fi, lerr := os.Lstat(tt.path)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if got := fi.Mode().Type(); got != tt.wantMode.Type() {
				t.Errorf("the path is now %v, was %v", got, tt.wantMode.Type())
			}
			if tt.readBack != "" {
				if b, _ := os.ReadFile(tt.readBack); string(b) != "new" {
					t.Errorf("%s holds %q", tt.readBack, b)
				}
			}
		})
	}
	if b, _ := os.ReadFile(input); string(b) != "old" {
		t.Errorf("the input was written over: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left %s behind", e.Name())
		}
	}
}

// A FIFO is written into, as a shell redirection would, and stays a FIFO.
func TestWriteFileToFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the writer opens it
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if err := WriteFile(fifo, []byte("report"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "report" {
		t.Errorf("the reader got %q", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO is now %v (%v)", fi.Mode().Type(), err)
	}
}

// device makes a character device node (major, minor) in dir, as the
// ones in /dev (never those: a failing test must not replace them), or
// skips the test where that is not allowed.
func device(t *testing.T, dir, name string, major, minor uint32) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mknod(path, syscall.S_IFCHR|0o666, int(major<<8|minor)); err != nil {
		t.Skipf("cannot make a device node here (%v)", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("cannot open a device node here (%v)", err)
	}
	f.Close()
	return path
}

// A device is written in place and stays a device, also through a
// symbolic link; one that refuses the data (a full one) fails the write.
func TestWriteFileToDevice(t *testing.T) {
	dir := t.TempDir()
	null := device(t, dir, "null", 1, 3)
	full := device(t, dir, "full", 1, 7)
	toNull := filepath.Join(dir, "to-null")
	if err := os.Symlink(null, toNull); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, wantErr string
	}{{null, ""}, {toNull, ""}, {full, "no space left on device"}} {
		err := WriteFile(tt.path, []byte("report"), 0o644)
		if (tt.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: err = %v, want %q", tt.path, err, tt.wantErr)
		}
	}
	for _, p := range []string{null, full} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("%s is no longer a device: %v (%v)", p, fi.Mode(), err)
		}
	}
	if fi, err := os.Lstat(toNull); err != nil || fi.Mode().Type() != fs.ModeSymlink {
		t.Errorf("the link is no longer one: %v (%v)", fi.Mode(), err)
	}
}
