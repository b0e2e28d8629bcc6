package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/spec"
)

// runChildKindUp is `kb-bench kind up` with the options in o (JSON), never
// pulling: the test kills it during kind's create.
func runChildKindUp(o string) int {
	var opts KindOptions
	if err := json.Unmarshal([]byte(o), &opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// The node is a plain container (see TestKindCreateKilledLeavesNothing):
	// nothing to adapt, nothing to check.
	full := FullKindHost()
	_, _, err := KindUp(context.Background(), opts, KindUpOptions{Log: os.Stderr, StateDir: os.Getenv("KB_BENCH_TEST_STATE"), Pull: spec.PullNever, Host: &full})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// dockerOrSkip returns the docker command when a Docker daemon answers.
func dockerOrSkip(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("uses the Docker daemon: skipped with -short")
	}
	docker, err := exec.LookPath("docker")
	if err == nil {
		err = exec.Command(docker, "info", "--format", "{{.ServerVersion}}").Run()
	}
	if err != nil {
		t.Skipf("no Docker daemon: %v", err)
	}
	return docker
}

// nodeImage imports a tiny image (a static program that waits for
// SIGTERM) into docker, built here: nothing is pulled. It is removed when
// the test ends.
func nodeImage(t *testing.T, docker string) string {
	t.Helper()
	src := t.TempDir()
	prog := `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, os.Interrupt)
	<-c
}
`
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", "pause", "main.go")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the node image's program: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(src, "pause"))
	if err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	image := fmt.Sprintf("kb-bench-test/kind-node:janitor-%d", os.Getpid())
	imp := exec.Command(docker, "import", "--change", `ENTRYPOINT ["/pause"]`, "-", image)
	imp.Stdin = &tarball
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(docker, "rmi", "-f", image).Run() })
	return image
}

// dockerLines runs docker and returns its output's lines.
func dockerLines(t *testing.T, docker string, args ...string) []string {
	t.Helper()
	out, err := exec.Command(docker, args...).Output()
	if err != nil {
		t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// kb-bench killed with SIGKILL in the middle of kind's create leaves
// nothing: the janitor removes the node container kind started (and its
// volumes) and the network kind made. On the real Docker daemon: the node
// is a plain container of an image built here, since this machine grants
// no privileged container; a docker wrapper on PATH drops --privileged and
// holds kind's create once the node runs, as a node that boots slowly
// does, until kb-bench is gone.
func TestKindCreateKilledLeavesNothing(t *testing.T) {
	docker := dockerOrSkip(t)
	image := nodeImage(t, docker)
	name := fmt.Sprintf("kb-bench-janitor-%d", os.Getpid())
	label := "label=" + kindClusterLabel + "=" + name
	hadNetwork := exec.Command(docker, "network", "inspect", "kind").Run() == nil
	volumesBefore := len(dockerLines(t, docker, "volume", "ls", "-q"))
	t.Cleanup(func() {
		if ids := dockerLines(t, docker, "ps", "-aq", "--filter", label); len(ids) > 0 {
			_ = exec.Command(docker, append([]string{"rm", "-f", "-v"}, ids...)...).Run()
		}
		if !hadNetwork {
			_ = exec.Command(docker, "network", "rm", "kind").Run()
		}
	})

	wrap := t.TempDir()
	started := filepath.Join(wrap, "node-started")
	script := fmt.Sprintf(`#!/bin/sh
# docker as kind uses it, on a daemon that refuses privileged containers
if [ "$1" = run ]; then
	shift
	for a; do
		shift
		case "$a" in
		--privileged) ;;
		/lib/modules:/lib/modules:ro) set -- "$@" /lib/modules ;; # no host path created
		*) set -- "$@" "$a" ;;
		esac
	done
	%[1]s run "$@" || exit $?
	touch %[2]s
	while kill -0 "$PPID" 2>/dev/null; do sleep 0.1; done
	exit 1
fi
exec %[1]s "$@"
`, docker, started)
	if err := os.WriteFile(filepath.Join(wrap, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts, _ := json.Marshal(KindOptions{Name: name, NodeImage: image})
	kb := exec.Command(os.Args[0], "-test.run=^$")
	state := "KB_BENCH_TEST_STATE=" + t.TempDir() // marks every process of this kb-bench
	kb.Env = append(os.Environ(), childEnv+"=kindup="+string(opts), state,
		"PATH="+wrap+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir(), "KIND_EXPERIMENTAL_PROVIDER=docker")
	var stderr bytes.Buffer
	kb.Stderr = &stderr
	if err := kb.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- kb.Wait() }()

	// Wait for the event: the node container runs and kind waits on it.
	await.Until(t, "kind's node container to start", func() error {
		select {
		case err := <-exited:
			t.Fatalf("kb-bench kind up ended before its node started (%v):\n%s", err, stderr.String())
		default:
		}
		_, err := os.Stat(started)
		return err
	})
	nodes := dockerLines(t, docker, "ps", "-aq", "--filter", label)
	if len(nodes) != 1 {
		t.Fatalf("%d node containers during the create, want 1:\n%s", len(nodes), stderr.String())
	}
	if err := kb.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	t.Logf("kb-bench killed during kind's create of %s (node %s); its output:\n%s", name, nodes[0], stderr.String())

	// The janitor needs a few seconds (it waits for late containers).
	await.Until(t, "the janitor to remove what kind made", func() error {
		left := dockerLines(t, docker, "ps", "-aq", "--filter", label)
		network := !hadNetwork && exec.Command(docker, "network", "inspect", "kind").Run() == nil
		if len(left) > 0 || network {
			return fmt.Errorf("left after kb-bench was killed: containers %v, network kind %t", left, network)
		}
		return nil
	})
	if hadNetwork && exec.Command(docker, "network", "inspect", "kind").Run() != nil {
		t.Error("the janitor removed a kind network that was there before")
	}
	if after := len(dockerLines(t, docker, "volume", "ls", "-q")); after != volumesBefore {
		t.Errorf("%d volumes before, %d after: the node's anonymous volumes are left", volumesBefore, after)
	}
	// Nor a process: the wrapper and the janitor end once done.
	await.Until(t, "the wrapper and the janitor to end", func() error {
		if procs := procsWithEnv(t, state); len(procs) > 0 {
			return fmt.Errorf("processes of the killed kb-bench left: %v", procs)
		}
		return nil
	})
}

// procsWithEnv lists the running processes whose environment holds kv:
// a test's child and everything it started, reparented or not.
func procsWithEnv(t *testing.T, kv string) []int {
	t.Helper()
	return procsWhere(t, "environ", func(env []byte) bool {
		return bytes.Contains(append([]byte{0}, env...), []byte("\x00"+kv+"\x00"))
	})
}
