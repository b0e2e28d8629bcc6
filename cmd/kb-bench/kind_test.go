package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/cluster/kindtest"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/spec"
)

// kindRuntime starts the docker double whose nodes lead to a real local
// control plane: kubeadm init writes its kubeconfig as the node's
// admin.conf, and a published port forwards to its apiserver, so the
// kubeconfig kind exports reaches a real kube-apiserver (v1.37.1; the node
// image says v1.37.0) exactly as a kind user's reaches theirs. It returns
// the environment kb-bench runs with.
func kindRuntime(t *testing.T, cpBin string) (*kindtest.Runtime, []string) {
	t.Helper()
	bins, err := cluster.FindBinaries(cpBin, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := cluster.StartLocal(context.Background(), cluster.LocalOptions{Binaries: bins, Storage: spec.StorageMemory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop(context.Background()) })
	admin := filepath.Join(t.TempDir(), "admin.conf")
	if err := cp.WriteKubeconfig(admin); err != nil {
		t.Fatal(err)
	}
	adminConf, err := os.ReadFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	rt := kindtest.Start(t, kindtest.Options{
		Registry:        []string{cluster.DefaultKindNodeImage},
		AdminKubeconfig: adminConf,
		Forward:         strings.TrimPrefix(cp.State().Server, "https://"),
	})
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "TMPDIR="+home, "KIND_EXPERIMENTAL_PROVIDER=docker")
	return rt, append(env, rt.Env()...)
}

// kbBench runs kb-bench to its end and returns its exit status and output.
func kbBench(t *testing.T, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	t.Logf("kb-bench %s:\n%s%s", strings.Join(args, " "), out.String(), errb.String())
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// The kind target as its users meet it, kb-bench run as a real process
// with the docker double first on PATH: `kind up` pulls kind's node image
// and drives kind's create to its end, `kind status` says what runs,
// `run --target kind` measures the apiserver through the kubeconfig kind
// exported and records the node image, and `kind down` removes it all. A
// run against a cluster that does not exist creates one for itself and
// deletes it at the end.
func TestKindTargetEndToEnd(t *testing.T) {
	bin, cpBin := binary(t)
	rt, env := kindRuntime(t, cpBin)

	if code, _, stderr := kbBench(t, bin, env, "kind", "up", "--name", "bench"); code != 0 {
		t.Fatalf("kind up: exit %d", code)
	} else if !strings.Contains(stderr, "pulling it, as `kind create cluster` does") || !strings.Contains(stderr, "Pull complete") {
		t.Errorf("kind up does not show the pull:\n%s", stderr)
	}
	nodes := rt.Containers()
	if len(nodes) != 1 || nodes[0].Image != cluster.DefaultKindNodeImage || len(nodes[0].Publish) != 1 {
		t.Fatalf("containers after kind up: %+v", nodes)
	}
	port := strings.Split(nodes[0].Publish[0], ":")[1]

	_, status, _ := kbBench(t, bin, env, "kind", "status", "--name", "bench")
	for _, want := range []string{"node image: " + cluster.DefaultKindNodeImage, "kubernetes: " + cluster.DefaultKindKubeVersion + " (the local control plane is " + cluster.KubeVersion + ")"} {
		if !strings.Contains(status, want) {
			t.Errorf("kind status does not say %q:\n%s", want, status)
		}
	}

	out := filepath.Join(t.TempDir(), "result")
	if code, stdout, _ := kbBench(t, bin, env, "run", "--target", "kind", "--kind-cluster", "bench", "--writers", "4", "--duration", "2s", "--out", out); code != 0 {
		t.Fatalf("run --target kind: exit %d", code)
	} else if !strings.Contains(stdout, "node image "+cluster.DefaultKindNodeImage) {
		t.Errorf("the summary does not name the node image:\n%s", stdout)
	}
	r, err := store.Read(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Target.Kind != spec.TargetKindCluster || r.Target.Server != "https://127.0.0.1:"+port || r.Target.NodeImage != cluster.DefaultKindNodeImage ||
		r.Target.ServerVersion != cluster.KubeVersion || r.Target.KindConfig == "" || r.Summary.Successes == 0 {
		t.Errorf("result: target %+v, %d successes", r.Target, r.Summary.Successes)
	}
	if len(rt.Containers()) != 1 {
		t.Error("the run deleted a cluster it did not create")
	}

	if code, _, _ := kbBench(t, bin, env, "kind", "down", "--name", "bench"); code != 0 {
		t.Fatalf("kind down: exit %d", code)
	}
	if c, n := rt.Containers(), rt.Networks(); len(c) > 0 || len(n) > 0 {
		t.Errorf("left after kind down: %d containers, networks %v", len(c), n)
	}

	// A cluster made for the run alone, deleted at its end.
	if code, _, _ := kbBench(t, bin, env, "run", "--target", "kind", "--kind-cluster", "once", "--writers", "2", "--duration", "1s", "--out", filepath.Join(t.TempDir(), "r")); code != 0 {
		t.Fatalf("run --target kind on a new cluster: exit %d", code)
	}
	calls := rt.Calls()
	ran := slices.ContainsFunc(calls, func(c kindtest.Call) bool { return c.Args[0] == "run" && slices.Contains(c.Args, "once-control-plane") })
	removed := slices.ContainsFunc(calls, func(c kindtest.Call) bool { return c.Args[0] == "rm" && slices.Contains(c.Args, "once-control-plane") })
	if !ran || !removed || len(rt.Containers()) > 0 || len(rt.Networks()) > 0 {
		t.Errorf("cluster for the run: created %t, deleted %t, left %d containers, networks %v", ran, removed, len(rt.Containers()), rt.Networks())
	}
}
