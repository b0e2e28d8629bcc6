package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	"github.com/kb-bench/kb-bench/cluster/kindtest"
	"github.com/kb-bench/kb-bench/cluster/upstream"
	"github.com/kb-bench/kb-bench/spec"
)

// kindDouble starts the docker double with kind's images in its registry
// and points this process (and so kind's library) at it.
func kindDouble(t *testing.T, o kindtest.Options) *kindtest.Runtime {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the docker double: skipped with -short")
	}
	rt := kindtest.Start(t, o)
	rt.Setenv(t)
	// The double's networks are recorded apart from the host's.
	old := kindNetworkLock
	kindNetworkLock = filepath.Join(t.TempDir(), "network.lock")
	t.Cleanup(func() { kindNetworkLock = old })
	t.Setenv("KIND_EXPERIMENTAL_PROVIDER", "docker")
	// kind reads ~/.docker/config.json for proxies: none here.
	t.Setenv("HOME", t.TempDir())
	return rt
}

// kubeadm returns the real kubeadm of KubeVersion, built from the pinned
// source into the control-plane cache the first time a test needs it.
func kubeadm(t *testing.T) string {
	t.Helper()
	dir := CacheDir(os.Getenv)
	path := filepath.Join(dir, upstream.Kubeadm)
	if upstream.Executable(path) == nil {
		return path
	}
	if err := upstream.Build(context.Background(), upstream.Options{Dir: dir, Programs: []string{upstream.Kubeadm}, Log: testLog{t}}); err != nil {
		if os.Getenv("KB_BENCH_REQUIRE_CONTROL_PLANE") != "" {
			t.Fatalf("KB_BENCH_REQUIRE_CONTROL_PLANE is set but kubeadm does not build: %v", err)
		}
		t.Skipf("kubeadm does not build here: %v", err)
	}
	return path
}

// kubeadmValidate has the real kubeadm check a configuration kind wrote.
func kubeadmValidate(t *testing.T, bin, node, conf string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), node+".conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "config", "validate", "--config", path).CombinedOutput()
	if err != nil {
		t.Errorf("kubeadm %s rejects the configuration kind wrote into %s: %v\n%s\n--- /kind/kubeadm.conf:\n%s", upstream.KubeVersion, node, err, out, conf)
	}
}

// kb-bench kind up drives kind's real create flow to its end against the
// docker double, for one control plane and for three behind kind's load
// balancer with the benchmark settings; what reaches the runtime is what
// kind users get, and real kubeadm accepts every configuration kind wrote
// into the nodes. kind down then removes everything it made.
func TestKindUpThroughKindsCreate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    KindOptions
		// in the kubeadm configuration of every node
		want []string
	}{
		{"one control plane", KindOptions{Name: "bench"},
			[]string{"kubernetesVersion: " + DefaultKindKubeVersion, "controlPlaneEndpoint: bench-control-plane:6443"}},
		{"three control planes tuned", KindOptions{Name: "tuned", ControlPlanes: 3, EtcdOnTmpfs: true,
			APIServerArgs: []string{"max-requests-inflight=800", "max-mutating-requests-inflight=400"}},
			[]string{"controlPlaneEndpoint: tuned-external-load-balancer:6443", "dataDir: /tmp/etcd",
				"- name: max-mutating-requests-inflight\n    value: \"400\"", "- name: max-requests-inflight\n    value: \"800\"",
				// kind's own apiserver flag is kept, not replaced
				"- name: runtime-config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adm := kubeadm(t)
			o := tc.o
			if err := o.Defaults(); err != nil {
				t.Fatal(err)
			}
			rt := kindDouble(t, kindtest.Options{Registry: o.Images()})
			stateDir := t.TempDir()
			var log bytes.Buffer
			full := FullKindHost()
			st, created, err := KindUp(context.Background(), o, KindUpOptions{StateDir: stateDir, Log: &log, Host: &full})
			t.Log(log.String())
			if err != nil {
				for _, c := range rt.Calls() {
					t.Logf("%s -> %d", c, c.Code)
				}
				t.Fatal(err)
			}
			if !created || st.KubernetesVersion != DefaultKindKubeVersion || st.Options.NodeImage != DefaultKindNodeImage {
				t.Errorf("created %t, state %+v", created, st)
			}
			calls := rt.Calls()
			for _, c := range calls {
				if c.Code == 125 || c.Code == 126 {
					t.Errorf("the double could not answer %s", c)
				}
			}
			// The images were pulled, as kind does, before anything was made.
			firstRun := slices.IndexFunc(calls, func(c kindtest.Call) bool {
				return c.Args[0] == "run" || c.Args[0] == "network" && c.Args[1] == "create"
			})
			for _, image := range o.Images() {
				i := slices.IndexFunc(calls, func(c kindtest.Call) bool { return slices.Equal(c.Args, []string{"pull", image}) })
				if i < 0 || i > firstRun {
					t.Errorf("%s pulled at call %d, the first creation is call %d", image, i, firstRun)
				}
			}
			if !strings.Contains(log.String(), "pulling it, as `kind create cluster` does") {
				t.Errorf("the pull is not said:\n%s", log.String())
			}

			containers := rt.Containers()
			var nodes []kindtest.Container
			var lb *kindtest.Container
			for i, c := range containers {
				if c.Labels[kindtest.ClusterLabel] != o.Name {
					t.Errorf("%s is not labelled as a node of %s: %v", c.Name, o.Name, c.Labels)
				}
				if c.Labels[kindtest.RoleLabel] == "external-load-balancer" {
					lb = &containers[i]
					continue
				}
				nodes = append(nodes, c)
			}
			if len(nodes) != o.ControlPlanes || (lb != nil) != (o.ControlPlanes == 3) {
				t.Fatalf("%d nodes and load balancer %v for %d control planes", len(nodes), lb != nil, o.ControlPlanes)
			}
			// The apiserver endpoint users get: the load balancer's port with
			// three control planes, the node's with one.
			front := nodes[0]
			if lb != nil {
				front = *lb
				if lb.Image != KindLoadBalancerImage {
					t.Errorf("load balancer image %s, want %s", lb.Image, KindLoadBalancerImage)
				}
				backends := lb.Files["/home/envoy/cds.yaml.tmp"]
				for _, n := range nodes {
					if !strings.Contains(backends, n.Name) {
						t.Errorf("the load balancer does not send to %s:\n%s", n.Name, backends)
					}
				}
			}
			if len(front.Publish) != 1 || !strings.HasPrefix(front.Publish[0], "127.0.0.1:") || !strings.HasSuffix(strings.ToLower(front.Publish[0]), ":6443/tcp") {
				t.Fatalf("%s publishes %v, want 127.0.0.1:PORT:6443/tcp", front.Name, front.Publish)
			}
			port := strings.Split(front.Publish[0], ":")[1]
			kc, err := clientcmd.LoadFromFile(st.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if got := kc.Clusters["kind-"+o.Name].Server; got != "https://127.0.0.1:"+port {
				t.Errorf("kubeconfig server %s, want the published https://127.0.0.1:%s", got, port)
			}
			for _, n := range nodes {
				for _, want := range []string{"--privileged", "--tmpfs", "/var", "--cgroupns=private", "--label", kindtest.ClusterLabel + "=" + o.Name} {
					if !slices.Contains(n.RunArgs, want) {
						t.Errorf("%s: run args lack %s: %v", n.Name, want, n.RunArgs)
					}
				}
				if n.Image != DefaultKindNodeImage {
					t.Errorf("%s runs %s, want %s", n.Name, n.Image, DefaultKindNodeImage)
				}
				conf, ok := n.Files["/kind/kubeadm.conf"]
				if !ok {
					t.Fatalf("kind wrote no kubeadm configuration into %s", n.Name)
				}
				for _, want := range tc.want {
					if !strings.Contains(conf, want) {
						t.Errorf("%s: the kubeadm configuration lacks %q:\n%s", n.Name, want, conf)
					}
				}
				kubeadmValidate(t, adm, n.Name, conf)
			}
			kubeadmRan := func(node, verb string) bool {
				return slices.ContainsFunc(calls, func(c kindtest.Call) bool {
					return c.Args[0] == "exec" && slices.Contains(c.Args, node) && slices.Contains(c.Args, "kubeadm") && slices.Contains(c.Args, verb)
				})
			}
			for i, n := range nodes {
				if verb := map[bool]string{true: "init", false: "join"}[i == 0]; !kubeadmRan(n.Name, verb) {
					t.Errorf("no kubeadm %s on %s", verb, n.Name)
				}
			}

			// What a run records of a kind cluster kb-bench did not make.
			if got := kindNodeImage(os.Getenv, o.Name); got != DefaultKindNodeImage {
				t.Errorf("the node image the runtime reports: %q, want %s", got, DefaultKindNodeImage)
			}

			// kind status's record, then kind down.
			back, err := ReadKindState(t.Context(), stateDir, o.Name, os.Getenv)
			if err != nil || back.KubernetesVersion != DefaultKindKubeVersion {
				t.Errorf("recorded state %+v, %v", back, err)
			}
			if err := KindDown(context.Background(), o.Name, stateDir, os.Getenv); err != nil {
				t.Fatal(err)
			}
			if left := rt.Containers(); len(left) > 0 || len(rt.Networks()) > 0 {
				t.Errorf("left after kind down: %d containers, networks %v", len(left), rt.Networks())
			}
			if _, err := os.Stat(filepath.Join(stateDir, o.Name+".json")); !os.IsNotExist(err) {
				t.Errorf("state file left: %v", err)
			}
		})
	}
}

// A create that fails before or during kind's create leaves nothing: no
// container, no network, no state; and says why.
func TestKindUpFailureLeavesNothing(t *testing.T) {
	image := DefaultKindNodeImage
	// This machine's host: no CAP_SYS_RESOURCE in the bounding set.
	restricted := FullKindHost()
	restricted.Bounding &^= 1 << capSysResource
	preflight := func(args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "dev.kb-bench.preflight=") })
	}
	for _, tc := range []struct {
		name  string
		o     kindtest.Options
		host  *KindHost
		pull  spec.PullPolicy
		input bool
		want  []string
	}{
		{name: "pull fails", o: kindtest.Options{}, input: true,
			want: []string{"pulling the kind node image " + image + " failed", kindtest.RegistryError, "--pull never"}},
		{name: "pull never without the image", o: kindtest.Options{Registry: []string{image}}, pull: spec.PullNever, input: true,
			want: []string{"the kind node image " + image + " is not in docker, and --pull never forbids pulling it",
				"`docker pull " + image + " && docker tag " + image + " kindest/node:v1.37.0 && docker save kindest/node:v1.37.0 -o image.tar`",
				"`docker load -i image.tar` and pass --node-image kindest/node:v1.37.0"}},
		{name: "kubeadm init fails", o: kindtest.Options{Images: []string{image}, Fail: func(args []string) (string, int, bool) {
			return "error execution phase preflight: [preflight] Some fatal errors occurred\n", 1, slices.Contains(args, "kubeadm") && slices.Contains(args, "init")
		}}, want: []string{"failed to init node with kubeadm", "Some fatal errors occurred"}},
		// runc asks for every capability in a privileged container, and
		// the host lacks one: the run fails, or (a wrapper that covers
		// only the run) every exec into it does.
		{name: "privileged containers do not start", host: &restricted, input: true, o: kindtest.Options{Images: []string{image}, Fail: func(args []string) (string, int, bool) {
			return "docker: Error response from daemon: failed to create shim: OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown.\n", 126,
				args[0] == "run" && preflight(args)
		}}, want: []string{"privileged containers cannot start here", "`docker run --privileged` failed", "unable to apply caps", "lacks CAP_SYS_RESOURCE", "scripts/kind-host.sh"}},
		{name: "exec into a privileged container fails", host: &restricted, input: true, o: kindtest.Options{Images: []string{image}, Fail: func(args []string) (string, int, bool) {
			return "OCI runtime exec failed: exec failed: unable to start container process: unable to apply caps: operation not permitted: unknown\n", 126,
				args[0] == "exec" && strings.HasPrefix(args[1], "kb-bench-preflight-")
		}}, want: []string{"privileged containers cannot start here", "`docker exec` failed", "lacks CAP_SYS_RESOURCE", "scripts/kind-host.sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := kindDouble(t, tc.o)
			stateDir := t.TempDir()
			host := FullKindHost()
			if tc.host != nil {
				host = *tc.host
			}
			_, _, err := KindUp(context.Background(), KindOptions{Name: "bench"}, KindUpOptions{StateDir: stateDir, Pull: tc.pull, Host: &host})
			if err == nil {
				t.Fatal("KindUp succeeded")
			}
			if testing.Verbose() {
				t.Log(err)
			}
			if spec.IsInput(err) != tc.input {
				t.Errorf("input error %t, want %t: %v", spec.IsInput(err), tc.input, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			if c := rt.Containers(); len(c) > 0 || len(rt.Networks()) > 0 {
				t.Errorf("left behind: %d containers, networks %v", len(c), rt.Networks())
			}
			if tc.input && slices.ContainsFunc(rt.Calls(), func(c kindtest.Call) bool {
				return c.Args[0] == "run" && !preflight(c.Args) || c.Args[0] == "network" && c.Args[1] == "create"
			}) {
				t.Error("kind's create began after bad input")
			}
			if _, err := os.Stat(filepath.Join(stateDir, "bench.json")); !os.IsNotExist(err) {
				t.Errorf("state recorded for a cluster that failed: %v", err)
			}
		})
	}
}

// On a restricted host (this machine's: cgroup v1, no CAP_SYS_RESOURCE,
// fuse-overlayfs) and with a node image that holds its own etcd, kb-bench
// checks that privileged containers start before kind's create, says each
// adaptation on one line, and kind carries them into the nodes: the
// kubelet's failCgroupV1, kubeadm's etcd image tag (real kubeadm accepts
// both), containerd's restrict_oom_score_adj, and the snapshotter in the
// node's environment. The cluster's record holds them.
func TestKindUpAdaptsToTheHost(t *testing.T) {
	adm := kubeadm(t)
	image := "kb-bench/kind-node:v1.37.1"
	rt := kindDouble(t, kindtest.Options{Images: []string{image}, Labels: map[string]map[string]string{image: {EtcdImageTagLabel: "3.6.16-0"}}})
	host := KindHost{CgroupVersion: "1", StorageDriver: "fuse-overlayfs", Bounding: 0x1fffeffffff, LastCap: 40}
	if _, set := os.LookupEnv(SnapshotterEnv); set {
		t.Skipf("%s is set here: kb-bench leaves the user's choice alone", SnapshotterEnv)
	}
	stateDir := t.TempDir()
	var log bytes.Buffer
	st, _, err := KindUp(context.Background(), KindOptions{Name: "adapted", NodeImage: image}, KindUpOptions{StateDir: stateDir, Log: &log, Host: &host})
	t.Log(log.String())
	if err != nil {
		t.Fatal(err)
	}
	want := KindAdaptations{FailCgroupV1Off: true, RestrictOOMScoreAdj: true, Snapshotter: "overlayfs", EtcdImageTag: "3.6.16-0"}
	if st.Options.Adapt != want {
		t.Errorf("recorded adaptations %+v, want %+v", st.Options.Adapt, want)
	}
	for _, l := range want.Lines() {
		if strings.Count(log.String(), "kind: adapting to this host: "+l+"\n") != 1 {
			t.Errorf("not said once on a line of its own: %s", l)
		}
	}
	if _, set := os.LookupEnv(SnapshotterEnv); set {
		t.Errorf("%s is left set in kb-bench's environment", SnapshotterEnv)
	}

	// The check ran, and was gone, before kind's first node.
	calls := rt.Calls()
	firstNode := slices.IndexFunc(calls, func(c kindtest.Call) bool {
		return c.Args[0] == "run" && slices.Contains(c.Args, kindtest.ClusterLabel+"=adapted")
	})
	var check []string
	for _, c := range calls[:max(firstNode, 0)] {
		if slices.ContainsFunc(c.Args, func(a string) bool {
			return strings.HasPrefix(a, "kb-bench-preflight-") || a == "dev.kb-bench.preflight=adapted"
		}) {
			check = append(check, c.Args[0])
		}
	}
	if !slices.Equal(check, []string{"run", "exec", "rm"}) || firstNode < 0 {
		t.Errorf("before kind's first node (call %d) the check made %v, want run, exec, rm", firstNode, check)
	}

	nodes := rt.Containers()
	if len(nodes) != 1 {
		t.Fatalf("%d containers, want the node alone", len(nodes))
	}
	n := nodes[0]
	if got := n.Env[SnapshotterEnv]; got != "overlayfs" {
		t.Errorf("the node's %s is %q, want overlayfs", SnapshotterEnv, got)
	}
	conf := n.Files["/kind/kubeadm.conf"]
	for _, w := range []string{"failCgroupV1: false", "imageTag: 3.6.16-0"} {
		if !strings.Contains(conf, w) {
			t.Errorf("the kubeadm configuration lacks %q:\n%s", w, conf)
		}
	}
	kubeadmValidate(t, adm, n.Name, conf)
	containerd := n.Files["/etc/containerd/config.toml"]
	if !regexp.MustCompile(`(?s)\[plugins\."io\.containerd\.grpc\.v1\.cri"\][^\[]*restrict_oom_score_adj = true`).MatchString(containerd) {
		t.Errorf("containerd's CRI plugin does not restrict oom_score_adj:\n%s", containerd)
	}

	// The record a run keeps says what was adapted.
	back, err := ReadKindState(t.Context(), stateDir, "adapted", os.Getenv)
	if err != nil || back.Options.Adapt != want {
		t.Fatalf("state %+v, %v", back, err)
	}
	b, err := KindConfigYAML(back.Options)
	if err != nil || strings.Count(string(b), "# adapted: ") != 4 {
		t.Errorf("the recorded configuration does not say the 4 adaptations (%v):\n%s", err, b)
	}
	if err := KindDown(context.Background(), "adapted", stateDir, os.Getenv); err != nil {
		t.Fatal(err)
	}
}

// --print-config shows the adaptations the host (as the runtime reports
// it) and the node image call for, creating nothing.
func TestKindConfigHere(t *testing.T) {
	image := "kb-bench/kind-node:v1.37.1"
	rt := kindDouble(t, kindtest.Options{Images: []string{image}, Labels: map[string]map[string]string{image: {EtcdImageTagLabel: "3.6.16-0"}},
		Info: map[string]any{"CgroupVersion": "1"}})
	b, err := KindConfigHere(context.Background(), KindOptions{NodeImage: image}, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# adapted: the host runs cgroup v1", `"path":"/failCgroupV1"`, `"imageTag":"3.6.16-0"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the configuration does not say %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER") {
		t.Errorf("the double's overlay2 got a snapshotter:\n%s", b)
	}
	if c := rt.Containers(); len(c) > 0 {
		t.Errorf("--print-config created %d containers", len(c))
	}
}

// A failed command inside a node is shown by the end of its output, where
// kubeadm says what failed after pages of its log: two kind creates at
// once on a loaded machine failed in kubeadm init, and the error showed
// only the log's first lines.
func TestRuntimeErrorShowsTheEnd(t *testing.T) {
	var log strings.Builder
	for i := range 200 {
		fmt.Fprintf(&log, "I1128 17:17:00.%06d 232 initconfiguration.go:262] line %d of kubeadm's log\n", i, i)
	}
	log.WriteString("error execution phase wait-control-plane: couldn't initialize a Kubernetes cluster\n")
	re := &kindexec.RunError{Command: []string{"docker", "exec", "--privileged", "bench-control-plane", "kubeadm", "init"}, Output: []byte(log.String()), Inner: errors.New("exit status 1")}
	got := runtimeError(fmt.Errorf("failed to init node with kubeadm: command \"docker exec ...\" failed with error: %w", re))
	for _, want := range []string{"failed to init node with kubeadm: `docker exec ...` failed (exit status 1): ...", "error execution phase wait-control-plane: couldn't initialize a Kubernetes cluster"} {
		if !strings.Contains(got, want) {
			t.Errorf("the error does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "line 0 ") || len(got) > 600 {
		t.Errorf("the error is the log's start or too long (%d bytes):\n%s", len(got), got)
	}
}
