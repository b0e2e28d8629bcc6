package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The saved result is the source of truth: 'kb-bench show' prints from the
// files alone exactly what the run printed on its standard output (its
// progress and notes on stderr aside), for every scenario's own figures,
// a distributed run, sets, a matrix and a sweep; and --format json the
// documents 'run -o json' printed.
func TestShowPrintsWhatTheRunPrinted(t *testing.T) {
	bin, cpBin := binary(t)
	tmp := t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp, "XDG_STATE_HOME="+tmp)
	state := filepath.Join(tmp, "state")
	if code, _, _ := kbBench(t, bin, env, "local", "up", "--control-plane-bin", cpBin, "--storage", "memory", "--state-dir", state); code != 0 {
		t.Fatalf("local up: exit %d", code)
	}
	t.Cleanup(func() { kbBench(t, bin, env, "local", "down", "--state-dir", state) })
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"counter", []string{"run", "--writers", "4", "--duration", "2s"}},
		{"counter as json", []string{"run", "--writers", "4", "--duration", "1s", "-o", "json"}},
		{"quota", []string{"run", "--scenario", "quota", "--duration", "2s"}},
		{"controller-status", []string{"run", "--scenario", "controller-status", "--duration", "2s"}},
		{"leader election with a fault", append([]string{"run"}, append(pauseArgs, "--duration", "6s")...)},
		{"shards", []string{"run", "--shards", "2", "--writers", "4", "--duration", "2s"}},
		{"a set", []string{"run", "--count", "2", "--duration", "1s"}},
		{"a matrix", []string{"run", "--strategy", "update,ssa", "--count", "2", "--duration", "1s"}},
		{"a sweep", []string{"sweep", "--writers", "1,2", "--strategy", "update,retry", "--duration", "1s", "--warmup", "0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "result")
			code, live, _ := kbBench(t, bin, env, append(tc.args, "--state-dir", state, "--out", out)...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, live)
			}
			args := []string{"show", out}
			if tc.args[len(tc.args)-1] == "json" {
				args = append(args, "--format", "json")
			}
			code, shown, _ := kbBench(t, bin, env, args...)
			if code != 0 || shown != live {
				t.Errorf("show: exit %d; it printed\n%s\nthe run printed\n%s", code, shown, live)
			}
			if len(live) < 100 {
				t.Errorf("the run printed too little to compare:\n%s", live)
			}
		})
	}
}
