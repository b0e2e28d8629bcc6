package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/store"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/distributed/job"
)

// run executes kb-bench in-process and returns its exit status and output.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, args, "test", getenv)
	return code, out.String(), errOut.String()
}

// deadServer returns the URL of a loopback port nothing listens on.
func deadServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "https://" + addr
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadInputExitsTwo(t *testing.T) {
	kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "`+deadServer(t)+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: secret-token}}]
contexts: [{name: dead, context: {cluster: dead, user: u}}]
current-context: dead
`)
	remoteProfile := writeFile(t, "remote.yaml", `apiVersion: kb-bench.io/v1alpha1
kind: Profile
name: remote
description: names a cluster
spec:
  target:
    kind: kubeconfig
    kubeconfig: /somewhere/kubeconfig
`)
	contextProfile := writeFile(t, "context.yaml", `apiVersion: kb-bench.io/v1alpha1
kind: Profile
name: prod-context
description: picks a context of whatever kubeconfig is given
spec:
  target:
    context: prod
`)
	badProfile := writeFile(t, "bad.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Profile\nspec:\n  writerz: 3\n")
	badSetting := writeFile(t, "bad-setting.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Profile\nspec:\n  writers: 3\n  settings:\n    objects: -2\n")
	notADir := writeFile(t, "file", "")
	cases := []struct {
		name string
		args []string
		want string // substring of stderr
	}{
		{"unknown flag", []string{"run", "--writerz", "3"}, "unknown flag: --writerz"},
		{"stray argument", []string{"run", "now"}, "takes no arguments"},
		{"mistyped alias", []string{"kind", "delet"}, `unknown command "delet" for "kb-bench kind"; did you mean "delete"?`},
		{"unknown help topic", []string{"help", "local", "stp"}, `kb-bench help: unknown command "stp" for "kb-bench local"; did you mean "up" or "stop"?`},
		// kind's nouns after the verbs it lends (kind get clusters): the alias as typed.
		{"noun after an alias", []string{"kind", "get", "clusters"}, `kb-bench kind get takes no arguments, got ["clusters"]`},
		{"unknown strategy", []string{"run", "--strategy", "put"}, `strategy: Unsupported value: "put": supported values: "update", "retry", "patch", "ssa" (--strategy)`},
		{"zero writers", []string{"run", "--writers", "0"}, "--writers 0 would mean its default (8) here"},
		{"negative objects", []string{"run", "--objects", "-1"}, "settings.objects: Invalid value: -1: use 1 to 10000 (--objects)"},
		{"zero duration", []string{"run", "--duration", "0"}, "--duration 0s would mean its default (10s) here"},
		{"bad duration", []string{"run", "--duration", "soon"}, `"soon" is not a duration`},
		{"rate with think time", []string{"run", "--rate", "10", "--think-time", "1ms"}, "an open loop (--rate) schedules arrivals itself"},
		{"zipf exponent without zipf", []string{"run", "--zipf-exponent", "1.5"}, "settings.zipfExponent: Forbidden: applies only to distribution zipf"},
		{"another scenario's setting", []string{"run", "--quota-hard", "5"}, "--quota-hard is a setting of scenario quota, not counter"},
		{"op timeout below a millisecond", []string{"run", "--op-timeout", "1ns"}, "opTimeout: Invalid value"},
		{"far too many writers", []string{"run", "--writers", "100000000"}, "writers: Invalid value: 100000000: use 1 to 100000"},
		{"absurd rate", []string{"run", "--rate", "1e12"}, "rate: Invalid value: 1e+12"},
		{"unknown profile", []string{"run", "--profile", "nope"}, "nope"},
		{"bad profile file", []string{"run", "-f", badProfile}, `unknown field "writerz"`},
		{"bad setting in a profile", []string{"run", "-f", badSetting}, "bad-setting.yaml:6: spec.settings.objects: Invalid value: -2"},
		{"profile and file", []string{"run", "-f", badProfile, "--profile", "counter"}, "choose one profile"},
		{"profile names a cluster", []string{"run", "-f", remoteProfile}, "sends load only to a cluster named on the command line"},
		// The user names the kubeconfig, the profile would pick its context.
		{"profile picks the context", []string{"run", "-f", contextProfile, "--kubeconfig", kubeconfig}, "sends load only to a cluster named on the command line"},
		{"bad output", []string{"run", "--output", "yaml"}, `--output "yaml" is not known`},
		// Not a silent run on another target than the one named.
		{"kubeconfig with target local", []string{"run", "--target", "local", "--kubeconfig", kubeconfig}, "but --target is local"},
		{"context with target kind", []string{"run", "--target", "kind", "--context", "dead"}, "but --target is kind"},
		// Before any load, not after the whole run.
		{"unusable out dir", []string{"run", "--out", filepath.Join(notADir, "result"), "--duration", "1s"}, "choose another with --out"},
		{"out holds a result", []string{"run", "--out", filepath.Dir(writeFile(t, store.ResultFile, "{}")), "--duration", "1s"}, "already holds a result (result.json): choose another --out"},
		{"missing binaries", []string{"run", "--control-plane-bin", t.TempDir(), "--duration", "1s"}, "kb-bench local install"},
		{"dead kubeconfig server", []string{"run", "--kubeconfig", kubeconfig, "--duration", "1s"}, "127.0.0.1"},
		{"missing kubeconfig", []string{"run", "--kubeconfig", "/does/not/exist", "--duration", "1s"}, "/does/not/exist"},
		{"profiles show unknown", []string{"profiles", "show", "nope"}, "nope"},
		{"profiles show no name", []string{"profiles", "show"}, "takes one profile name"},
		{"local up bad storage", []string{"local", "up", "--storage", "tape"}, `Unsupported value: "tape": supported values: "disk", "memory" (--storage)`},
		{"sweep going down", []string{"sweep", "--writers", "8,4,16"}, "a sweep goes up; give the values in increasing order"},
		{"sweep without a list", []string{"sweep", "--writers", "8", "--strategy", "update,ssa"}, "a sweep needs a list of values for --writers"},
		{"sweep stop relative", []string{"sweep", "--stop-at", "p99 <= baseline"}, "a stop condition is absolute"},
		{"sweep stop unknown", []string{"sweep", "--stop-at", "p98 > 1s"}, `metric "p98" is not known`},
		{"sweep none and more", []string{"sweep", "--stop-at", "none", "--stop-at", "p99 > 1s"}, "give it alone"},
		{"sweep zero slo", []string{"sweep", "--slo", "0s"}, "give the p99 latency objective"},
		{"sweep closed loop rate", []string{"sweep", "--rate", "0,10"}, "sweep offered loads above 0"},
		{"zero in a list", []string{"run", "--writers", "4,0"}, "--writers 0 would mean its default (8) here"},
		{"gate on a matrix", []string{"run", "--strategy", "update,ssa", "--gate", writeFile(t, "gate.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds: [\"p99 < 1s\"]\n")}, "a gate judges one configuration"},
		{"report nothing", []string{"report", t.TempDir()}, "holds no result"},
		{"context without a kubeconfig file", []string{"run", "--context", "nosuch", "--duration", "1s"}, `context "nosuch" does not exist (contexts: none; no such file: `},
		{"rbac without namespace", []string{"rbac"}, "--namespace names the existing namespace"},
		{"bad namespace", []string{"run", "--namespace", "Team_A"}, "namespace: Invalid value: \"Team_A\""},
		{"image without a job", []string{"run", "--shards", "2", "--image", "x"}, "--image is for the shard pods of --shards N --runner job"},
		{"bad shard cpu", []string{"run", "--shards", "2", "--runner", "job", "--shard-cpu", "lots"}, `--shard-cpu "lots" is not a positive quantity`},
		{"bad shard cpu and memory", []string{"run", "--shards", "2", "--runner", "job", "--shard-cpu", "lots", "--shard-memory", "plenty"}, `--shard-cpu "lots" is not a positive quantity`},
		{"bad pull policy", []string{"run", "--shards", "2", "--runner", "job", "--image-pull-policy", "Sometimes"}, "use IfNotPresent, Always or Never"},
		{"runner kubeconfig without a job", []string{"run", "--shards", "2", "--runner-kubeconfig", "/x"}, "--runner-kubeconfig is for the shard pods of --shards N --runner job"},
		{"runner context alone", []string{"run", "--shards", "2", "--runner", "job", "--runner-context", "c"}, "--runner-context names a context of --runner-kubeconfig"},
		{"shards of leader election", []string{"run", "--scenario", "leader-election", "--shards", "2"}, "this scenario runs in one process only: drop --shards"},
		{"more shards than writers", []string{"run", "--shards", "9"}, "more shards than the 8 writers"},
		{"shard without a run", []string{"shard", "--index", "0"}, "--namespace and --run-id name the run this shard joins"},
		{"shard without an index", []string{"shard", "--namespace", "n", "--run-id", "r"}, "no --index, and $JOB_COMPLETION_INDEX is"},
		{"controller manager on kind", []string{"run", "--target", "kind", "--controller-manager"}, "controllerManager: Forbidden: applies only to the local control plane"},
		// A RoleBinding the apiserver would refuse is not printed.
		{"rbac bad service account", []string{"rbac", "--namespace", "team-a", "--service-account", "Bad_Name!"}, `--service-account "Bad_Name!" is not a ServiceAccount name`},
		{"rbac bad namespace", []string{"rbac", "--namespace", "Team_A"}, `namespace: Invalid value: "Team_A"`},
		// Found out up front, not after the shards' time to join (the
		// missing binaries would be found next).
		{"job runner on the local control plane", []string{"run", "--shards", "2", "--runner", "job", "--control-plane-bin", t.TempDir()}, "the local control plane has no node to run a pod"},
		{"job runner sweep on the local control plane", []string{"sweep", "--writers", "4,8", "--shards", "2", "--runner", "job", "--control-plane-bin", t.TempDir()}, "--runner job runs the shards as the pods of a Job"},
		{"pull without kind", []string{"run", "--pull", "never"}, "--node-image, --pull and --keep-cluster are for a kind cluster created for the run"},
		{"unknown pull policy", []string{"run", "--target", "kind", "--pull", "sometimes"}, `kindPull: Unsupported value: "sometimes": supported values: "missing", "never", "always" (--pull)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(t, map[string]string{"HOME": t.TempDir()}, c.args...)
			if code != spec.ExitInput {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", code, spec.ExitInput, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Fatalf("stderr does not say %q:\n%s", c.want, stderr)
			}
			if strings.Contains(stderr, "secret-token") {
				t.Fatalf("stderr leaks the kubeconfig token:\n%s", stderr)
			}
		})
	}
}

// Every file kb-bench reads is read through internal/readfile: a device
// (/dev/zero, which once read until the OOM killer), a FIFO with no
// writer (which once blocked until a second Ctrl-C), a directory or a file
// over its kind's bound is refused at once as bad input. The test's own
// deadline is the only limit on how long each may take.
func TestHostileInputFilesExitTwo(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fifoResult := filepath.Join(t.TempDir(), store.ResultFile)
	if err := syscall.Mkfifo(fifoResult, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 2<<20); err != nil { // sparse: 2 MiB of zeros
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"baseline spec /dev/zero", []string{"run", "--baseline-spec", "/dev/zero"}, "/dev/zero is a device"},
		{"profile /dev/zero", []string{"run", "-f", "/dev/zero"}, "/dev/zero is a device"},
		{"profile fifo", []string{"run", "-f", fifo}, "is a named pipe (FIFO)"},
		{"baseline spec fifo", []string{"run", "--baseline-spec", fifo}, "is a named pipe (FIFO)"},
		{"profile directory", []string{"run", "-f", dir}, "is a directory"},
		{"profile over its bound", []string{"run", "-f", huge}, "larger than 1 MiB, the most the profile can be"},
		{"gate file fifo", []string{"run", "--gate", fifo}, "is a named pipe (FIFO)"},
		{"gate thresholds /dev/zero", []string{"gate", "x", "--thresholds", "/dev/zero"}, "/dev/zero is a device"},
		{"kubeconfig /dev/zero", []string{"run", "--kubeconfig", "/dev/zero"}, "/dev/zero is a device"},
		{"kubeconfig fifo", []string{"run", "--kubeconfig", fifo}, "is a named pipe (FIFO)"},
		{"compare a fifo", []string{"compare", fifo, fifo}, "is a named pipe (FIFO)"},
		{"show a fifo result", []string{"show", fifoResult}, "is a named pipe (FIFO)"},
		{"baseline a fifo result", []string{"run", "--baseline", fifoResult}, "is a named pipe (FIFO)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(t, map[string]string{"HOME": t.TempDir()}, c.args...)
			if code != spec.ExitInput || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "regular files") && !strings.Contains(stderr, "larger than") {
				t.Fatalf("exit status %d, want %d and an error saying %q and what to do; stderr:\n%s", code, spec.ExitInput, c.want, stderr)
			}
		})
	}
}

// An A/B run whose sides run different control planes checks both sides'
// binaries before its first sample: a candidate's bad --control-plane-bin
// is refused before the baseline's control plane is even started (it was
// refused only after a whole baseline sample).
func TestABChecksBothSidesFirst(t *testing.T) {
	good, ran := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(good, name), []byte("#!/bin/sh\ntouch "+ran+"\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bad, out := t.TempDir(), filepath.Join(t.TempDir(), "ab")
	code, _, stderr := run(t, map[string]string{"HOME": t.TempDir()}, "run", "--out", out, "--duration", "1s",
		"--control-plane-bin", bad, "--baseline-with", "control-plane-bin="+good)
	if code != spec.ExitInput || !strings.Contains(stderr, "the candidate: --control-plane-bin "+bad) {
		t.Fatalf("exit status %d, want %d naming the candidate's --control-plane-bin; stderr:\n%s", code, spec.ExitInput, stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the baseline's control plane was started before the candidate's binaries were checked")
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was left behind", out)
	}
}

// A run that fails leaves no empty result directory behind.
func TestFailedRunLeavesNoResultDir(t *testing.T) {
	kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "`+deadServer(t)+`"}}]
contexts: [{name: dead, context: {cluster: dead}}]
current-context: dead
`)
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, out := range []string{filepath.Join(cwd, "a", "b", "result"), ""} {
		args := []string{"run", "--kubeconfig", kubeconfig}
		if out != "" {
			args = append(args, "--out", out)
		}
		code, _, stderr := run(t, map[string]string{"HOME": t.TempDir()}, args...)
		if code != spec.ExitInput {
			t.Fatalf("exit %d, want %d:\n%s", code, spec.ExitInput, stderr)
		}
		if left, _ := os.ReadDir(cwd); len(left) > 0 {
			t.Errorf("the failed run with --out %q left %s behind", out, left[0].Name())
		}
	}
}

// local status exits non-zero unless the control plane is healthy, so
// scripts can rely on it; a stale record still shows what was recorded.
func TestLocalStatusExitStatus(t *testing.T) {
	stateDir := t.TempDir()
	if code, _, _ := run(t, nil, "local", "status", "--state-dir", stateDir); code == spec.ExitOK {
		t.Errorf("local status with nothing recorded: exit 0")
	}
	// Down with nothing up: what was asked for holds.
	if code, out, stderr := run(t, nil, "local", "down", "--state-dir", stateDir); code != spec.ExitOK || !strings.Contains(out, "no local control plane was running") {
		t.Errorf("local down with nothing up: exit %d\n%s%s", code, out, stderr)
	}
	// A record whose processes are gone (pid 0 is never ours).
	state := `{"server": "https://127.0.0.1:1", "kubeconfig": "` + filepath.Join(stateDir, "kubeconfig") + `",
"dir": "` + filepath.Join(stateDir, "kb-bench-1") + `", "storage": "disk", "apiserver": {"pid": 0}, "etcd": {"pid": 0}}`
	if err := os.WriteFile(filepath.Join(stateDir, "state.json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, nil, "local", "status", "--state-dir", stateDir)
	if code == spec.ExitOK || !strings.Contains(out, "NOT healthy") || !strings.Contains(out, "https://127.0.0.1:1") {
		t.Errorf("local status of a stale record: exit %d, want non-zero and the record shown:\n%s%s", code, out, stderr)
	}
}

// --context alone runs against that context of the usual kubeconfig
// ($KUBECONFIG), as the help says: here a dead one, so exit 2 naming it.
func TestContextAloneUsesTheUsualKubeconfig(t *testing.T) {
	server := deadServer(t)
	kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "`+server+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: secret-token}}]
contexts: [{name: dead, context: {cluster: dead, user: u}}]
`)
	env := map[string]string{"HOME": t.TempDir(), "KUBECONFIG": kubeconfig}
	code, _, stderr := run(t, env, "run", "--context", "dead", "--duration", "1s")
	if code != spec.ExitInput || !strings.Contains(stderr, "cannot reach the apiserver "+server) || !strings.Contains(stderr, `context "dead"`) {
		t.Errorf("--context dead: exit %d, want %d and an error naming %s:\n%s", code, spec.ExitInput, server, stderr)
	}
	code, _, stderr = run(t, env, "run", "--context", "prod", "--duration", "1s")
	if code != spec.ExitInput || !strings.Contains(stderr, `context "prod" does not exist (contexts: dead)`) {
		t.Errorf("--context prod: exit %d, want %d and the contexts there are:\n%s", code, spec.ExitInput, stderr)
	}
}

func TestProfilesListAndShow(t *testing.T) {
	code, out, stderr := run(t, nil, "profiles", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, name := range []string{"counter", "hot-key", "ssa-disjoint", "ssa-shared", "leader-election", "quota", "controller-status"} {
		if !strings.Contains(out, name) {
			t.Errorf("profiles list does not show %s:\n%s", name, out)
		}
	}
	code, out, _ = run(t, nil, "profiles", "show", "counter")
	if code != 0 || !strings.Contains(out, "kind: Profile") {
		t.Fatalf("profiles show counter: exit %d\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, nil, "version")
	first, rest, _ := strings.Cut(out, "\n")
	if code != 0 || first != "kb-bench test" {
		t.Fatalf("exit %d, output %q", code, out)
	}
	// As its help says: also the control-plane versions it builds.
	if !strings.Contains(rest, "kube-apiserver v1.") || !strings.Contains(rest, "etcd v3.") {
		t.Errorf("version does not show the control-plane versions:\n%s", out)
	}
	if !strings.Contains(rest, "kind node image: kindest/node:v1.") {
		t.Errorf("version does not show the kind node image:\n%s", out)
	}
}

// Every flag has one default in --help, the field's own (issue: durations
// showed "(default 10s) (default 0s)").
func TestHelpShowsOneDefaultPerFlag(t *testing.T) {
	code, out, _ := run(t, nil, "run", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	_, kindUp, _ := run(t, nil, "kind", "up", "--help")
	for _, line := range strings.Split(out+kindUp, "\n") {
		if strings.Count(line, "(default") > 1 {
			t.Errorf("two defaults: %s", line)
		}
	}
	for _, want := range []string{"--writers ints", "(default 8)", "--duration duration", "(default 10s)", "--objects int", "--lease-duration"} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not show %q", want)
		}
	}
}

// compare reads results from the paths a user has, and refuses what it
// cannot compare with exit status 2.
func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	save := func(path string, ops float64) {
		r := &results.Result{RunID: filepath.Base(path), Workload: "counter: 8 writers on 1 object"}
		r.Summary.Throughput = ops
		b, err := results.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path, store.ResultFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, ops := range []float64{100, 101, 99, 102} {
		save(filepath.Join(dir, "before", fmt.Sprint("run-", i)), ops)
		save(filepath.Join(dir, "after", fmt.Sprint("run-", i)), ops*1.5)
	}
	single := filepath.Join(dir, "before", "run-0")
	code, out, stderr := run(t, nil, "compare", filepath.Join(dir, "before"), filepath.Join(dir, "after"), single)
	if code != 0 || !strings.Contains(out, "before (n=4)") || !strings.Contains(out, "+50.0% (p=0.029)") || !strings.Contains(out, "run-0 (n=1)") {
		t.Errorf("compare: exit %d\n%s%s", code, out, stderr)
	}
	// Four copies of one run are one sample, not four (which would show a
	// significant change, p=0.029, where there is one run to go on).
	for i := range 4 {
		save(filepath.Join(dir, "copies", fmt.Sprint("copy-", i)), 100)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "copies", "copy-0", store.ResultFile))
	for i := 1; i < 4; i++ {
		if err := os.WriteFile(filepath.Join(dir, "copies", fmt.Sprint("copy-", i), store.ResultFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr = run(t, nil, "compare", filepath.Join(dir, "copies"), filepath.Join(dir, "after"))
	if code != 0 || !strings.Contains(out, "copies (n=1)") || strings.Contains(out, "(p=0.029)") || !strings.Contains(stderr, "run copy-0 is there 4 times") {
		t.Errorf("compare copies: exit %d\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{
		{"compare", single},
		{"compare", single, filepath.Join(dir, "nowhere")},
		{"compare", single, dir + "/before", "--format", "yaml"},
		{"compare", single, t.TempDir()},
	} {
		if code, _, stderr := run(t, nil, args...); code != spec.ExitInput {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, spec.ExitInput, stderr)
		}
	}
}

// gate's exit status is its verdict: 0 all hold, 1 one fails, 2 bad input.
func TestGateCommand(t *testing.T) {
	dir := t.TempDir()
	save := func(path string, p99 time.Duration) string {
		r := &results.Result{RunID: filepath.Base(filepath.Dir(path)) + "-" + filepath.Base(path), Workload: filepath.Base(filepath.Dir(path))}
		if r.Workload != "other" {
			r.Workload = "counter: 8 writers on 1 object"
		}
		r.Summary.Ops, r.Summary.Latency.P99 = 1000, p99
		r.Server = &results.ServerCheck{Available: true, Match: true}
		r.Checks = []results.Check{{Name: "counter kb-bench-0", Passed: true}}
		r.Summary.LostUpdates = results.LostUpdatesOf(r.Checks)
		b, err := results.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path, store.ResultFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for i := range 5 {
		save(filepath.Join(dir, "base", fmt.Sprint(i)), time.Duration(20+i)*time.Millisecond)
		save(filepath.Join(dir, "slow", fmt.Sprint(i)), time.Duration(40+i)*time.Millisecond)
	}
	other := save(filepath.Join(dir, "other", "0"), 20*time.Millisecond)
	// A side that mixes workloads is not samples of one.
	mixed := filepath.Join(dir, "mixed")
	for i := range 4 {
		save(filepath.Join(mixed, fmt.Sprint(i)), 20*time.Millisecond)
	}
	save(filepath.Join(dir, "other", "1"), 20*time.Millisecond)
	if err := os.Rename(filepath.Join(dir, "other", "1"), filepath.Join(mixed, "4")); err != nil {
		t.Fatal(err)
	}
	gate := writeFile(t, "gate.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- p99 <= baseline +10%\n- serverMatch == true\n")
	base, slow := filepath.Join(dir, "base"), filepath.Join(dir, "slow")
	nan := writeFile(t, "nan.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- conflictRate < NaN%\n")
	inf := writeFile(t, "inf.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- conflictRate < Inf%\n")
	twoDocs := writeFile(t, "two.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- p99 < 1h\n---\napiVersion: kb-bench.io/v1alpha1\nkind: Gate\nthresholds:\n- p99 < 1ms\n")
	relativeProfile := writeFile(t, "rel.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Profile\nspec:\n  writers: 2\nthresholds:\n- throughput >= baseline -10%\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		// The same run on both sides judges nothing.
		{[]string{"gate", "--baseline", base, base, "--thresholds", gate}, spec.ExitInput, "both hold run base-0"},
		{[]string{"run", "--baseline-with", "writers=4", "--baseline-with", "writers=8"}, spec.ExitInput, "set writers twice: give each setting once"},
		{[]string{"gate", "--baseline", base, slow, "--thresholds", gate}, spec.ExitError, "FAIL"},
		{[]string{"gate", "--baseline", base, slow}, spec.ExitError, "p99 <= baseline +10%"},
		{[]string{"gate", slow}, spec.ExitOK, "serverMatch == true"},
		{[]string{"gate", slow, "--thresholds", gate}, spec.ExitInput, "pass --baseline"},
		{[]string{"gate", "--baseline", base, slow, "--thresholds", "/no/such/gate.yaml"}, spec.ExitInput, "reading the thresholds"},
		{[]string{"gate", "--baseline", base, slow, "--format", "yaml"}, spec.ExitInput, "not known"},
		{[]string{"gate", "--baseline", base, other}, spec.ExitInput, "pass --force"},
		{[]string{"gate", "--baseline", base, other, "--force"}, spec.ExitOK, "pass"},
		{[]string{"gate", "--baseline", base, mixed}, spec.ExitInput, "mixed: its samples are not of one workload: " + filepath.Join(mixed, "4") + " (run other-1) ran \"other\""},
		{[]string{"gate", "--baseline", mixed, base, "--force"}, spec.ExitInput, "its samples are not of one workload"},
		{[]string{"run", "--baseline", base}, spec.ExitInput, "--baseline is for a gate"},
		{[]string{"run", "-f", writeFile(t, "p.yaml", "apiVersion: kb-bench.io/v1alpha1\nkind: Profile\nspec:\n  writers: 2\nthresholds:\n- p99 < soon\n")}, spec.ExitInput, `p.yaml: thresholds[0]: threshold "p99 < soon"`},
		{[]string{"run", "--gate", "/no/such/gate.yaml"}, spec.ExitInput, "reading the thresholds"},
		// The exit status is the verdict's, whatever the format; nonsense
		// is bad input in every format.
		{[]string{"gate", "--baseline", base, slow, "--thresholds", nan}, spec.ExitInput, `"NaN" is not a number`},
		{[]string{"gate", "--baseline", base, slow, "--thresholds", nan, "--format", "json"}, spec.ExitInput, `"NaN" is not a number`},
		{[]string{"gate", "--baseline", base, slow, "--thresholds", inf, "--format", "junit"}, spec.ExitInput, `"Inf" is not a number`},
		{[]string{"gate", "/no/such/result", "--format", "yaml"}, spec.ExitInput, `--format "yaml" is not known`},
		{[]string{"gate", "--baseline", base, slow, "--thresholds", twoDocs}, spec.ExitInput, "holds more than one document"},
		// Relative thresholds without a baseline are refused before the
		// run, not after it (the missing binaries would be found next).
		{[]string{"run", "--gate", gate, "--control-plane-bin", t.TempDir()}, spec.ExitInput, `threshold "p99 <= baseline +10%" is relative to a baseline: pass --baseline`},
		{[]string{"run", "-f", relativeProfile, "--control-plane-bin", t.TempDir()}, spec.ExitInput, `threshold "throughput >= baseline -10%" is relative to a baseline`},
		// So is a baseline of another workload than the run would have.
		{[]string{"run", "--gate", gate, "--baseline", base, "--control-plane-bin", t.TempDir()}, spec.ExitInput, `the baseline ran "counter: 8 writers on 1 object" but the candidate "counter: 8 writers on 1 object, shared fields`},
	}
	for _, c := range cases {
		code, out, stderr := run(t, nil, c.args...)
		if code != c.code || !strings.Contains(out+stderr, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s%s", c.args, code, c.code, c.want, out, stderr)
		}
	}
}

// A list given to a matrix flag runs every combination (see package
// bench); a bad value in one is bad input.
func TestMatrixFlags(t *testing.T) {
	code, _, stderr := run(t, nil, "run", "--strategy", "update,put")
	if code != spec.ExitInput || !strings.Contains(stderr, `"put"`) {
		t.Errorf("a bad value in a list: exit %d\n%s", code, stderr)
	}
}

// The kind commands' error paths never create anything: no runtime, no
// node image, a cluster kb-bench did not make; and --print-config shows
// what would be created.
func TestKindCommands(t *testing.T) {
	state := t.TempDir()
	env := map[string]string{"HOME": t.TempDir()}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want []string // stderr says one of these
	}{
		{"no runtime", map[string]string{"KIND_EXPERIMENTAL_PROVIDER": "podman-that-is-not-there"}, []string{"kind", "up"}, []string{"is not a runtime kind knows"}},
		// Never a pull from a test: --pull never.
		{"absent image, never pulled", env, []string{"kind", "up", "--node-image", "kb-bench-test/absent:v0", "--pull", "never"}, []string{"--pull never forbids pulling it", "needs a container runtime", "does not answer"}},
		{"unknown pull policy", env, []string{"kind", "up", "--pull", "sometimes"}, []string{`Unsupported value: "sometimes"`}},
		{"two control planes", env, []string{"kind", "up", "--control-planes", "2"}, []string{"use 1, or 3"}},
		{"bad apiserver arg", env, []string{"kind", "up", "--apiserver-arg", "--v=4"}, []string{"write NAME=VALUE without dashes"}},
		{"down another", env, []string{"kind", "down", "--name", "not-ours", "--state-dir", state}, []string{"it deletes only its own"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(t, c.env, c.args...)
			if code != spec.ExitInput {
				t.Fatalf("exit %d, want %d:\n%s", code, spec.ExitInput, stderr)
			}
			if !slices.ContainsFunc(c.want, func(w string) bool { return strings.Contains(stderr, w) }) {
				t.Fatalf("stderr says none of %q:\n%s", c.want, stderr)
			}
		})
	}
	code, out, stderr := run(t, env, "kind", "up", "--print-config", "--control-planes", "3", "--etcd-tmpfs")
	if code != spec.ExitOK || strings.Count(out, "role: control-plane") != 3 || !strings.Contains(out, `"dataDir":"/tmp/etcd"`) {
		t.Errorf("--print-config: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := run(t, env, "kind", "status", "--state-dir", state); code != spec.ExitOK || !strings.Contains(out, "kb-bench made no kind cluster kb-bench") {
		t.Errorf("status: exit %d: %s", code, out)
	}
}

// kb-bench rbac prints the Role a run needs: the scenario's own verbs and
// deleting what it creates, nothing on namespaces; and the binding.
func TestRBACCommand(t *testing.T) {
	code, out, stderr := run(t, nil, "rbac", "--namespace", "team-a", "--service-account", "bench")
	if code != spec.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"kind: Role\n", "namespace: team-a", "- configmaps", "- deletecollection", "- update", "- patch", "kind: RoleBinding", "- kind: ServiceAccount\n  name: bench"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "namespaces") || strings.Contains(out, "ClusterRole") {
		t.Errorf("the Role grants more than the run needs:\n%s", out)
	}
	// The Job runner's rights: deleting only the shard objects it makes,
	// by name; a token only for their ServiceAccount, only with a runner
	// cluster.
	for _, remote := range []bool{false, true} {
		args := []string{"rbac", "--namespace", "team-a", "--shards", "2", "--runner", "job"}
		if remote {
			args = append(args, "--runner-kubeconfig", "/runner.kubeconfig")
		}
		code, out, stderr := run(t, nil, args...)
		if code != spec.ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var role rbacv1.Role
		if err := sigsyaml.Unmarshal([]byte(strings.Split(out, "\n---\n")[0]), &role); err != nil {
			t.Fatal(err)
		}
		token := false
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				shardKind := slices.Contains([]string{"serviceaccounts", "roles", "rolebindings", "jobs"}, res)
				if shardKind && slices.Contains(r.Verbs, "deletecollection") {
					t.Errorf("remote %v: deletecollection of every %s", remote, res)
				}
				if (shardKind && slices.Contains(r.Verbs, "delete") || res == "serviceaccounts/token") && !slices.Equal(r.ResourceNames, []string{job.ObjectName}) {
					t.Errorf("remote %v: %v %s of any name", remote, r.Verbs, res)
				}
				token = token || res == "serviceaccounts/token"
				if remote && (res == "jobs" || res == "pods") {
					t.Errorf("with a runner cluster, %v %s on the target", r.Verbs, res)
				}
			}
		}
		if token != remote {
			t.Errorf("remote %v: serviceaccounts/token granted: %v", remote, token)
		}
	}
	_, out, _ = run(t, nil, "rbac", "--namespace", "team-a", "--scenario", "quota", "--user", "alice", "--with-metrics")
	for _, want := range []string{"- resourcequotas/status", "kind: User", "kind: ClusterRole\n", "- /metrics"} {
		if !strings.Contains(out, want) {
			t.Errorf("quota output lacks %q:\n%s", want, out)
		}
	}
}

// A server that answers /version and then hangs: the run fails when its
// first setup request times out (bounded by --op-timeout), says so, and
// does not blame the credentials; it never hangs.
func TestServerThatHangsAfterVersion(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.1"}`)
			return
		}
		select { // hang until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: hung, cluster: {server: "`+srv.URL+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: hung, context: {cluster: hung, user: u}}]
current-context: hung
`)
	code, _, stderr := run(t, map[string]string{"HOME": t.TempDir()}, "run", "--kubeconfig", kubeconfig, "--op-timeout", "500ms", "--duration", "1s", "--out", filepath.Join(t.TempDir(), "r"))
	if code == spec.ExitOK || !strings.Contains(stderr, "did not answer within 500ms") || strings.Contains(stderr, "credentials") {
		t.Fatalf("exit %d, stderr:\n%s\nwant a failure saying the apiserver did not answer within the op timeout", code, stderr)
	}
}

// saveDoc writes doc (a JSON document: a result, a set or a sweep) as
// dir/name.
func saveDoc(t *testing.T, dir, name string, doc []byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), doc, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A real tenfold regression (throughput divided by ten, every latency
// percentile multiplied by ten, as the reproduction does to a
// saved result) fails the default gate with 1, 3 or 5 samples a side; and
// a result no run can produce (damaged histogram, negative or absurd
// figures) is bad input (2) in compare, gate and report alike.
func TestGateVerdictsOnEditedResults(t *testing.T) {
	real, err := os.ReadFile(filepath.Join("..", "..", "..", "results", "store", "testdata", "closed-loop-result.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(id string, f func(r map[string]any)) []byte {
		var r map[string]any
		if err := json.Unmarshal(real, &r); err != nil {
			t.Fatal(err)
		}
		r["runID"] = id
		// Samples differ a little, as repeated runs do.
		i, _ := strconv.Atoi(strings.TrimPrefix(id, "run-"))
		s := r["summary"].(map[string]any)
		s["throughput"] = s["throughput"].(float64) * (1 + float64(i)/100)
		for k, v := range s["latency"].(map[string]any) {
			s["latency"].(map[string]any)[k] = math.Round(v.(float64) * (1 + float64(i)/100))
		}
		r["server"] = map[string]any{"available": true, "match": true} // only the figures fail
		f(r)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tenfold := func(r map[string]any) {
		r["runID"] = "slow-" + r["runID"].(string) // another run, not a copy
		s := r["summary"].(map[string]any)
		s["throughput"] = s["throughput"].(float64) / 10
		s["writeThroughput"] = s["writeThroughput"].(float64) / 10
		l := s["latency"].(map[string]any)
		for k, v := range l {
			l[k] = v.(float64) * 10
		}
	}
	dir := t.TempDir()
	for _, n := range []int{1, 3, 5} {
		base, slow := filepath.Join(dir, fmt.Sprint("base", n)), filepath.Join(dir, fmt.Sprint("slow", n))
		for i := range n {
			id := fmt.Sprint("run-", i)
			saveDoc(t, filepath.Join(base, id), store.ResultFile, edit(id, func(map[string]any) {}))
			saveDoc(t, filepath.Join(slow, id), store.ResultFile, edit(id, tenfold))
		}
		if n == 1 {
			base, slow = filepath.Join(base, "run-0"), filepath.Join(slow, "run-0")
		}
		code, out, stderr := run(t, nil, "gate", slow, "--baseline", base)
		want := "does not hold; NOT tested for significance"
		if n == 5 {
			want = "the difference is significant (p="
		}
		if code != spec.ExitError || !strings.Contains(out, want) {
			t.Errorf("%d vs %d: exit %d, want %d and %q:\n%s%s", n, n, code, spec.ExitError, want, out, stderr)
		}
	}

	spoilt := map[string]func(r map[string]any){
		"damaged histogram": func(r map[string]any) {
			h := r["measurements"].(map[string]any)["histograms"].(map[string]any)
			h["op"] = "AAAAAAAA" + h["op"].(string)[8:]
		},
		"negative throughput":   func(r map[string]any) { r["summary"].(map[string]any)["throughput"] = -1 },
		"negative lost updates": func(r map[string]any) { r["summary"].(map[string]any)["lostUpdates"] = -1 },
		"absurd p99": func(r map[string]any) {
			r["summary"].(map[string]any)["latency"].(map[string]any)["p99"] = int64(math.MaxInt64)
		},
	}
	good := filepath.Join(dir, "base1", "run-0")
	for name, spoil := range spoilt {
		bad := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		saveDoc(t, bad, store.ResultFile, edit("bad", spoil))
		for _, args := range [][]string{
			{"compare", good, bad},
			{"gate", bad, "--baseline", good},
			{"report", bad, "-o", filepath.Join(dir, "r.html")},
		} {
			code, _, stderr := run(t, nil, args...)
			if code != spec.ExitInput || !strings.Contains(stderr, "figures no run can produce") {
				t.Errorf("%s: %v: exit %d, want %d:\n%s", name, args[0], code, spec.ExitInput, stderr)
			}
		}
	}
	// The crafted sweep: refused, not drawn until memory runs out.
	sweep := filepath.Join(dir, "sweep")
	points := []string{`{"value":-1.7e308,"dir":"a"}`}
	for v := 1; v <= 12; v++ {
		points = append(points, fmt.Sprintf(`{"value":%d,"dir":"w%d"}`, v, v))
	}
	points = append(points, `{"value":1.7e308,"dir":"z"}`)
	saveDoc(t, sweep, store.SweepFile, []byte(`{"apiVersion":"kb-bench.io/v1alpha2","kind":"Sweep","axis":"writers","slo":1000000000,"series":[{"points":[`+
		strings.Join(points, ",")+`]}]}`))
	if code, _, stderr := run(t, nil, "report", sweep, "-o", filepath.Join(dir, "r.html")); code != spec.ExitInput || !strings.Contains(stderr, "series[0].points[0].value: Invalid value: -1.7e+308") {
		t.Errorf("crafted sweep: exit %d:\n%s", code, stderr)
	}
}

// report -o never replaces what is at the path by surprise: it follows a
// symbolic link (the link stays), writes into a FIFO in place, writes to
// standard output for -, and refuses to write over its own input.
func TestReportOutputs(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "result")
	real, err := os.ReadFile(filepath.Join("..", "..", "..", "results", "store", "testdata", "closed-loop-result.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	saveDoc(t, res, store.ResultFile, real)
	input := filepath.Join(res, store.ResultFile)

	target := filepath.Join(dir, "target.html")
	link := filepath.Join(dir, "link.html")
	saveDoc(t, dir, "target.html", []byte("an older report"))
	if err := os.Symlink("target.html", link); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, nil, "report", res, "-o", link); code != spec.ExitOK {
		t.Fatalf("-o a link: exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the link was replaced: %v (%v)", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); !strings.HasPrefix(string(b), "<!DOCTYPE html>") {
		t.Errorf("the link's target holds %.40q", b)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // opens when the report does
		got <- string(b)
	}()
	if code, _, stderr := run(t, nil, "report", res, "-o", fifo); code != spec.ExitOK {
		t.Fatalf("-o a FIFO: exit %d: %s", code, stderr)
	}
	if page := <-got; !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Errorf("the FIFO's reader got %.40q", page)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v (%v)", fi.Mode(), err)
	}

	code, out, stderr := run(t, nil, "report", res, "-o", "-")
	if code != spec.ExitOK || !strings.HasPrefix(out, "<!DOCTYPE html>") || strings.Contains(stderr, "report: -") {
		t.Errorf("-o -: exit %d, stdout %.40q, stderr %s", code, out, stderr)
	}

	for _, in := range []string{input, filepath.Join(dir, "to-input")} {
		if in != input {
			if err := os.Symlink(input, in); err != nil {
				t.Fatal(err)
			}
		}
		code, _, stderr := run(t, nil, "report", res, "-o", in)
		if code != spec.ExitInput || !strings.Contains(stderr, "one of the files being read to make it") {
			t.Errorf("-o %s: exit %d: %s", in, code, stderr)
		}
	}
	if b, _ := os.ReadFile(input); string(b) != string(real) {
		t.Error("the report's input was written over")
	}
}

// chanWriter sends what is written to it, so that a test can wait for it.
type chanWriter chan string

func (w chanWriter) Write(b []byte) (int, error) {
	w <- string(b)
	return len(b), nil
}

// A command that ends normally is not reported as interrupted: Main's
// deferred stop cancels the signal context too, and the watcher once
// printed "interrupted: stopping" when it won the race to the exit. A
// real interrupt still says so, and a second one exits at once.
func TestInterruptWatcher(t *testing.T) {
	t.Run("normal end", func(t *testing.T) {
		ctx, stop := signal.NotifyContext(context.Background(), interruptSignals...)
		var errOut bytes.Buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			onInterrupt(ctx, stop, &errOut, func(code int) { t.Errorf("exited %d", code) })
		}()
		stop() // the command returned
		<-done
		if errOut.Len() > 0 {
			t.Errorf("a normal end said: %s", errOut.String())
		}
	})
	t.Run("two interrupts", func(t *testing.T) {
		ctx, stop := signal.NotifyContext(context.Background(), interruptSignals...)
		said := make(chanWriter, 2)
		exited := make(chan int, 1)
		go onInterrupt(ctx, stop, said, func(code int) { exited <- code })
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if line := <-said; !strings.Contains(line, "interrupted: stopping") {
			t.Fatalf("the first interrupt said %q", line)
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if line := <-said; !strings.Contains(line, "interrupted again: exiting now") {
			t.Errorf("the second interrupt said %q", line)
		}
		if code := <-exited; code != spec.ExitInterrupted {
			t.Errorf("exit %d, want %d", code, spec.ExitInterrupted)
		}
	})
}
