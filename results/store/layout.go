package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kb-bench/kb-bench/spec"
)

// DirName is a configuration's label as a directory name:
// "strategy=ssa writers=8" is "strategy-ssa_writers-8".
func DirName(label string) string {
	return strings.NewReplacer("=", "-", " ", "_", "/", "-").Replace(label)
}

// SampleDir is the directory of sample i (from 1) of the set in dir.
func SampleDir(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("sample-%d", i))
}

// PointDir is the directory of a sweep's point: the value x of the axis,
// in the directory of its series (named by its label; "" for a sweep of
// one series).
func PointDir(sweepDir, series, axis, x string) string {
	return filepath.Join(sweepDir, DirName(series), axis+"-"+DirName(x))
}

// CheckOutDir checks, before a run, that its result directory can be
// made and written, and holds no result yet. It makes nothing, so a run
// that fails before its first result leaves no empty directory behind.
func CheckOutDir(dir string) error {
	for _, f := range []string{ResultFile, SetFile, SweepFile, VerdictsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return spec.Input(fmt.Errorf("%s already holds a result (%s): choose another --out, or remove it first", dir, f))
		}
	}
	// The nearest directory that exists is where the first one is made.
	d := filepath.Clean(dir)
	for {
		fi, err := os.Stat(d)
		if err == nil && !fi.IsDir() {
			return spec.Input(fmt.Errorf("the result directory %s cannot be made: %s is not a directory; choose another with --out", dir, d))
		}
		if err == nil || filepath.Dir(d) == d {
			break
		}
		d = filepath.Dir(d)
	}
	probe, err := os.MkdirTemp(d, ".kb-bench-probe-*")
	if err != nil {
		return spec.Input(fmt.Errorf("the result directory %s cannot be made or written (%w): choose another with --out", dir, err))
	}
	return os.Remove(probe)
}
