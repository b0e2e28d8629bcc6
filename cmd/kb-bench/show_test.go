package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/kb-bench/kb-bench/internal/await"
)

// The saved result is the source of truth: 'kb-bench show' prints from the
// files alone exactly what the run printed on its standard output, byte
// for byte, for every kind of directory: one result, a set, a matrix, an
// A/B run, a gated run (its verdicts, passing or failing, in text and in
// json), a sweep, an interrupted run, every scenario's own figures and a
// distributed run; and --format json the documents 'run -o json' printed.
// Only standard error is left out: the progress lines, the notes and where
// the result went, which tell how the run went, not what it measured.
// Every run uses one local control plane ('kb-bench local up').
func TestShowPrintsWhatTheRunPrinted(t *testing.T) {
	bin, env, state := localUp(t)
	gate := func(thresholds ...string) string {
		path := filepath.Join(t.TempDir(), "gate.yaml")
		doc := "apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- " + strings.Join(thresholds, "\n- ") + "\n"
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// Four writers of one counter conflict: a conflict rate of 0% fails.
	passes, fails := gate("lostUpdates == 0", "throughput > 0"), gate("conflictRate <= 0%", "lostUpdates == 0")
	for _, tc := range []struct {
		name string
		args []string
		code int // the run's exit status
	}{
		{"counter", []string{"run", "--writers", "4", "--duration", "2s"}, 0},
		{"counter as json", []string{"run", "--writers", "4", "--duration", "1s", "-o", "json"}, 0},
		{"quota", []string{"run", "--scenario", "quota", "--duration", "2s"}, 0},
		{"controller-status", []string{"run", "--scenario", "controller-status", "--duration", "2s"}, 0},
		{"leader election with a fault", append([]string{"run"}, append(pauseArgs, "--duration", "6s")...), 0},
		{"shards", []string{"run", "--shards", "2", "--writers", "4", "--duration", "2s"}, 0},
		{"a set", []string{"run", "--count", "2", "--duration", "1s"}, 0},
		{"a matrix", []string{"run", "--strategy", "update,ssa", "--count", "2", "--duration", "1s"}, 0},
		{"an A/B run", []string{"run", "--writers", "4", "--baseline-with", "writers=1", "--count", "2", "--duration", "1s"}, 0},
		{"gated", []string{"run", "--writers", "4", "--duration", "1s", "--gate", passes}, 0},
		{"gated, failing, as json", []string{"run", "--writers", "4", "--duration", "1s", "--gate", fails, "-o", "json"}, 1},
		{"a gated A/B run, failing", []string{"run", "--writers", "4", "--baseline-with", "writers=1", "--count", "2", "--duration", "1s", "--gate", fails}, 1},
		{"a sweep", []string{"sweep", "--writers", "1,2", "--strategy", "update,retry", "--duration", "1s", "--warmup", "0s"}, 0},
		{"interrupted", []string{"run", "--writers", "4", "--duration", "5m"}, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "result")
			args := append(tc.args, "--state-dir", state, "--out", out)
			var code int
			var live string
			if tc.code == 130 {
				code, live = interrupted(t, bin, env, args...)
			} else {
				code, live, _ = kbBench(t, bin, env, args...)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, live)
			}
			show := []string{"show", out}
			if tc.args[len(tc.args)-1] == "json" {
				show = append(show, "--format", "json")
			}
			code, shown, _ := kbBench(t, bin, env, show...)
			if code != 0 || shown != live {
				t.Errorf("show: exit %d; it printed\n%s\nthe run printed\n%s", code, shown, live)
			}
			if len(live) < 100 {
				t.Errorf("the run printed too little to compare:\n%s", live)
			}
			if gated := slices.Contains(tc.args, "--gate"); gated != strings.Contains(live, "lostUpdates == 0") {
				t.Errorf("gated %t, but the run printed:\n%s", gated, live)
			}
		})
	}
}

// localUp starts a local control plane ('kb-bench local up', memory
// storage) for a test's runs, stopped when the test ends; it returns the
// kb-bench binary, the environment its commands run with (a temporary
// home) and the state directory that names the control plane.
func localUp(t *testing.T) (bin string, env []string, state string) {
	t.Helper()
	bin, cpBin := binary(t)
	tmp := t.TempDir()
	env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp, "XDG_STATE_HOME="+tmp)
	state = filepath.Join(tmp, "state")
	if code, _, _ := kbBench(t, bin, env, "local", "up", "--control-plane-bin", cpBin, "--storage", "memory", "--state-dir", state); code != 0 {
		t.Fatalf("local up: exit %d", code)
	}
	t.Cleanup(func() { kbBench(t, bin, env, "local", "down", "--state-dir", state) })
	return bin, env, state
}

// interrupted runs kb-bench with args, interrupts it (SIGINT, as Ctrl-C
// does) once its measured window shows progress, and returns its exit
// status and what it printed on standard output.
func interrupted(t *testing.T, bin string, env []string, args ...string) (code int, stdout string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	progress, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		for shown := false; sc.Scan(); {
			t.Log("kb-bench: " + sc.Text())
			if !shown && strings.HasPrefix(sc.Text(), "[") {
				close(progress)
				shown = true
			}
		}
	}()
	select {
	case <-progress:
	case <-ended:
		t.Fatal("kb-bench ended before its measured window showed progress")
	case <-await.After(t):
		t.Fatal("kb-bench's measured window showed no progress before the test's deadline")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	await.Recv(t, "kb-bench to stop after SIGINT", ended)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}
