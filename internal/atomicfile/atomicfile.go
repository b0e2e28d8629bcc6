// Package atomicfile writes every file kb-bench writes, by one rule that
// never destroys what is at the path by surprise:
//
//   - a new path, or a regular file, is written atomically: the data goes
//     to a synced temporary file next to the target, which is then renamed
//     into place, so a reader never sees half of it and an interrupted
//     write leaves the previous version intact and no temporary file;
//   - a device, a FIFO or anything else that is not a regular file is
//     written directly, in place (renaming over it would replace a
//     /dev/null or a named pipe with a plain file);
//   - a symbolic link is followed, and the rule applies to what it leads
//     to (the link stays a link); one that leads nowhere is refused;
//   - a directory is refused, and so is a file the data was made from
//     (WriteFile's inputs), which the write would destroy.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with permissions perm (for a file it
// makes or replaces) by the package's rule. inputs are files the data was
// made from: writing over one of them is refused.
func WriteFile(path string, data []byte, perm os.FileMode, inputs ...string) error {
	fi, err := os.Stat(path) // through symbolic links
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			dest, _ := os.Readlink(path)
			return fmt.Errorf("writing %s: it is a symbolic link to %s, which does not exist: write to that path itself, or choose another", path, dest)
		}
		return replace(path, data, perm)
	case err != nil:
		return fmt.Errorf("writing %s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("writing %s: it is a directory: name a file", path)
	}
	for _, in := range inputs {
		if ii, err := os.Stat(in); err == nil && os.SameFile(fi, ii) {
			return fmt.Errorf("writing %s: it is %s, one of the files being read to make it: choose another path", path, in)
		}
	}
	if !fi.Mode().IsRegular() {
		return writeInPlace(path, data)
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return replace(target, data, perm)
}

// writeInPlace writes data to what path is (a device, a FIFO), without
// creating or truncating anything.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// replace writes data to a temporary file next to path, syncs it and
// renames it to path.
func replace(path string, data []byte, perm os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
