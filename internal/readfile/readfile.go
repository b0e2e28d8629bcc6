// Package readfile reads every file kb-bench is given to read (profiles,
// -f, --baseline-spec, Gate files, results, sets, sweeps, kubeconfigs,
// state files) by one rule, so that no file can exhaust the machine or
// hang the command:
//
//   - only a regular file is read (a symbolic link is followed to one): a
//     directory, a FIFO, a socket or a device such as /dev/zero is refused
//     without reading a byte. Standard input is read only where kb-bench
//     itself pipes a document (a process shard's kubeconfig, "-"), with
//     FromReader, under the same bound.
//   - the file is opened non-blocking, so a FIFO with no writer cannot
//     block the open;
//   - a file larger than the bound of its kind is refused before it is
//     read, and one that grows past the bound while being read is refused
//     too (the read never holds more than the bound);
//   - the read stops as soon as ctx is cancelled (an interrupt).
package readfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// The bounds of each kind of file, far above any real one and far below
// what would trouble the machine.
const (
	// Small is the bound of hand-written documents: profiles, Gate and
	// threshold files, kb-bench's own state files. Real ones are a few KiB.
	Small int64 = 1 << 20
	// Kubeconfig is the bound of a kubeconfig: certificates are embedded,
	// base64, a few KiB per cluster and user; one with hundreds of
	// clusters stays under a few MiB.
	Kubeconfig int64 = 16 << 20
	// Document is the bound of set.json and sweep.json: lists of samples
	// and points with their summaries, KiBs to a few MiB.
	Document int64 = 64 << 20
	// Result is the bound of a result.json: it carries lossless HDR
	// histograms and a per-second series with an interval histogram per
	// second, about 1-2 KiB a second, so a day-long run is 100-200 MiB.
	Result int64 = 512 << 20
)

// chunk is how much one read takes before looking at ctx again.
const chunk = 256 << 10

// Read reads the regular file at path, of at most limit bytes; what
// names the file's kind in errors ("the profile", "the Gate file"). An
// error says what is wrong with the file and what to do.
func Read(ctx context.Context, path string, limit int64, what string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", what, path, context.Cause(ctx))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	if err := regular(fi, path, what); err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, tooLarge(path, what, limit)
	}
	return readAll(ctx, f, fi.Size(), limit, path, what)
}

// FromReader reads r to its end, of at most limit bytes, stopping when ctx
// is cancelled between reads; what names it in errors. It is for a stream
// kb-bench itself writes (standard input from its own coordinator).
func FromReader(ctx context.Context, r io.Reader, limit int64, what string) ([]byte, error) {
	return readAll(ctx, r, 0, limit, "from standard input", what)
}

// regular refuses anything but a regular file, saying what it is.
func regular(fi fs.FileInfo, path, what string) error {
	m := fi.Mode()
	var is string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		is = "a directory"
	case m&fs.ModeNamedPipe != 0:
		is = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		is = "a socket"
	case m&fs.ModeDevice != 0:
		is = "a device"
	default:
		is = "not a regular file"
	}
	return fmt.Errorf("reading %s: %s is %s, and kb-bench reads only regular files: name the file itself (copy what a pipe or device gives into a file first)", what, path, is)
}

func tooLarge(path, what string, limit int64) error {
	return fmt.Errorf("reading %s: %s is larger than %s, the most %s can be: name the right file", what, path, size(limit), what)
}

// readAll reads r to its end in chunks, stopping when ctx is cancelled
// or when more than limit bytes come; hint is the expected size.
func readAll(ctx context.Context, r io.Reader, hint, limit int64, path, what string) ([]byte, error) {
	buf := make([]byte, 0, min(hint, limit)+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s %s: stopped: %w", what, path, context.Cause(ctx))
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(cap(buf), len(buf)+chunk)
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		switch {
		case int64(len(buf)) > limit:
			return nil, tooLarge(path, what, limit)
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return nil, fmt.Errorf("reading %s %s: %w", what, path, err)
		}
	}
}

// size shows a bound in the unit that fits it.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
