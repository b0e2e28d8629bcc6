package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRefuses(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		name   string
		args   []string
		getenv func(string) string
		want   string
	}{
		{"no flags", nil, noEnv, "-binary, -tag and -out are required"},
		{"stray argument", []string{"-binary", "b", "x"}, noEnv, `unexpected arguments ["x"]`},
		{"unknown flag", []string{"-binari", "b"}, noEnv, "flag provided but not defined"},
		{"bad SOURCE_DATE_EPOCH", []string{"-binary", "b", "-tag", "a:b", "-out", "o"},
			func(k string) string {
				if k == "SOURCE_DATE_EPOCH" {
					return "yesterday"
				}
				return ""
			}, "want seconds since 1970"},
		{"missing binary", []string{"-binary", filepath.Join(t.TempDir(), "none"), "-tag", "a:b", "-out", filepath.Join(t.TempDir(), "o.tar")}, noEnv, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, tc.getenv, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestRunWritesNothingOnError: a failed build leaves no tarball behind.
func TestRunWritesNothingOnError(t *testing.T) {
	out := filepath.Join(t.TempDir(), "image.tar")
	notELF := filepath.Join(t.TempDir(), "kb-bench")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-binary", notELF, "-tag", "a/b:c", "-out", out}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("a shell script was accepted as the binary")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want it absent", out, err)
	}
}
