package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/internal/proc"
	"github.com/kb-bench/kb-bench/spec"
)

// childEnv makes the test binary act as kb-bench. With a storage name it
// starts a control plane, prints "ready" and what it started, and waits
// for a signal; with "up=STATEDIR" it runs `kb-bench local up` and exits;
// with "kindup=JSON" it runs `kb-bench kind up` (KindOptions in JSON).
const childEnv = "KB_BENCH_CLUSTER_TEST_CHILD"

func TestMain(m *testing.M) {
	switch v := os.Getenv(childEnv); {
	case strings.HasPrefix(v, "up="):
		os.Exit(runChildUp(strings.TrimPrefix(v, "up=")))
	case strings.HasPrefix(v, "kindup="):
		os.Exit(runChildKindUp(strings.TrimPrefix(v, "kindup=")))
	case v != "":
		os.Exit(runChild(spec.Storage(v)))
	}
	os.Exit(m.Run())
}

func runChildUp(stateDir string) int {
	bins, err := FindBinaries("", os.Getenv)
	if err == nil {
		_, err = Up(context.Background(), UpOptions{Binaries: bins, Storage: spec.StorageMemory, StateDir: stateDir, Log: os.Stderr})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childReport is what the child prints after "ready ".
type childReport struct {
	Procs []ProcessState `json:"procs"`
	Dirs  []string       `json:"dirs"`
}

func runChild(storage spec.Storage) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bins, err := FindBinaries("", os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cp, err := StartLocal(ctx, LocalOptions{Binaries: bins, Storage: storage, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rep := childReport{
		Procs: []ProcessState{{PID: cp.apiservers[0].Pid, StartTicks: cp.apiservers[0].StartTicks}, {PID: cp.etcd.Pid, StartTicks: cp.etcd.StartTicks}},
		Dirs:  []string{cp.st.Dir, cp.st.EtcdDataDir},
	}
	b, _ := json.Marshal(rep)
	fmt.Printf("ready %s\n", b)
	<-ctx.Done()
	if err := cp.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// binariesOrSkip skips integration tests with -short and where the
// binaries are missing, unless KB_BENCH_REQUIRE_CONTROL_PLANE is set (make
// test sets it; see clustertest.RequireEnv, which this package cannot
// import): then a missing control plane fails, so CI cannot pass by
// skipping the tests that prove nothing is left behind.
func binariesOrSkip(t *testing.T) Binaries {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	b, err := FindBinaries("", os.Getenv)
	if err != nil {
		if os.Getenv("KB_BENCH_REQUIRE_CONTROL_PLANE") != "" {
			t.Fatalf("KB_BENCH_REQUIRE_CONTROL_PLANE is set but: %v", err)
		}
		t.Skipf("no local control plane binaries: %v", err)
	}
	return b
}

// startLocal starts a control plane that the test stops at its end.
func startLocal(t *testing.T, storage spec.Storage) *ControlPlane {
	t.Helper()
	cp, err := StartLocal(context.Background(), LocalOptions{Binaries: binariesOrSkip(t), Storage: storage, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop(context.Background()) })
	t.Logf("control plane (storage %s) started in %s", storage, cp.st.StartupTime.Round(time.Millisecond))
	return cp
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// stillThere says which of the processes still run and which of the dirs
// still exist, or nil when none.
func stillThere(procs []ProcessState, dirs []string) error {
	var left []string
	for _, p := range procs {
		if proc.Alive(p.PID, p.StartTicks) {
			left = append(left, fmt.Sprintf("pid %d", p.PID))
		}
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err == nil {
			left = append(left, dir)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("still there: %s", strings.Join(left, ", "))
	}
	return nil
}

// assertGone fails unless none of the processes runs and none of the dirs
// exists already.
func assertGone(t *testing.T, procs []ProcessState, dirs []string) {
	t.Helper()
	if err := stillThere(procs, dirs); err != nil {
		t.Fatal(err)
	}
}

func procsOf(cp *ControlPlane) []ProcessState {
	return []ProcessState{{PID: cp.apiservers[0].Pid, StartTicks: cp.apiservers[0].StartTicks}, {PID: cp.etcd.Pid, StartTicks: cp.etcd.StartTicks}}
}

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestLocalControlPlaneIsARealCluster starts one, uses it as a client would,
// stops it and finds nothing left.
func TestLocalControlPlaneIsARealCluster(t *testing.T) {
	cp := startLocal(t, spec.StorageDisk)
	ctx := context.Background()
	if cp.st.KubeVersion != KubeVersion && cp.binaries.Source == SourceCache {
		t.Errorf("apiserver reports %s, want %s", cp.st.KubeVersion, KubeVersion)
	}
	if cp.st.EtcdVersion != EtcdVersion && cp.binaries.Source == SourceCache {
		t.Errorf("etcd reports %s, want %s", cp.st.EtcdVersion, EtcdVersion)
	}
	if !strings.HasPrefix(filepath.Base(cp.st.Dir), "kb-bench-") || !strings.HasPrefix(cp.st.EtcdDataDir, cp.st.Dir) {
		t.Errorf("dirs %s, %s: want etcd data inside a kb-bench-* temp dir", cp.st.Dir, cp.st.EtcdDataDir)
	}

	// Threads that goroutines leave locked are ended by the runtime; the
	// children must not take that for kb-bench dying (Pdeathsig).
	done := make(chan struct{})
	for range 16 {
		go func() {
			runtime.LockOSThread()
			done <- struct{}{}
		}()
	}
	for range 16 {
		<-done
	}

	cs := clientset(t, cp.RESTConfig())
	t.Run("optimistic concurrency", func(t *testing.T) {
		cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "occ"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stale := cm.DeepCopy()
		cm.Data["n"] = "1"
		if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		stale.Data["n"] = "2"
		if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Errorf("update with a stale resourceVersion = %v, want 409 Conflict", err)
		}
	})
	t.Run("admin may read /metrics", func(t *testing.T) {
		body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), "apiserver_request_total") {
			t.Error("/metrics has no apiserver_request_total")
		}
	})
	t.Run("ResourceQuota admission enforces", func(t *testing.T) {
		ns := "quota"
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		q, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "q"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("1")}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// No kube-controller-manager here: the status a quota controller
		// would fill is set by hand; admission then does the counting.
		// Admission reads quotas from its informer, so each status is
		// waited for: a dry-run create must be refused while the status
		// says full, then admitted once it says empty.
		dryRun := func() error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		for _, used := range []string{"1", "0"} {
			q.Status = corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("1")},
				Used: corev1.ResourceList{"count/configmaps": resource.MustParse(used)},
			}
			if q, err = cs.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			await.Until(t, "admission to see the quota's used "+used, func() error {
				if err := dryRun(); (err == nil) != (used == "0") {
					return fmt.Errorf("a dry-run create: %v", err)
				}
				return nil
			})
		}
		for i, wantOK := range []bool{true, false} {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm", i)}}, metav1.CreateOptions{})
			if wantOK && err != nil {
				t.Fatal(err)
			}
			if !wantOK && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota")) {
				t.Errorf("create past the quota = %v, want 403 exceeded quota", err)
			}
		}
	})
	t.Run("written kubeconfig works with client-go", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := cp.WriteKubeconfig(path); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("kubeconfig mode: %v %v, want 0600 (it holds the token)", fi.Mode(), err)
		}
		cfg, _, err := kubeconfigFrom(t.Context(), &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := clientset(t, cfg).CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Log("no kubectl on PATH: not tried")
			return
		}
		out, err := exec.Command(kubectl, "--kubeconfig", path, "get", "configmap", "occ", "-n", "default", "-o", "jsonpath={.data.n}").CombinedOutput()
		if err != nil || string(out) != "1" {
			t.Errorf("kubectl with the written kubeconfig: %v: %s", err, out)
		}
	})

	if !cp.apiservers[0].Running() || !cp.etcd.Running() {
		t.Fatal("a control-plane process died during the test")
	}
	procs, dirs := procsOf(cp), []string{cp.st.Dir}
	if err := cp.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, procs, dirs)
	if err := cp.Stop(ctx); err != nil {
		t.Errorf("second Stop = %v, want nil", err)
	}
}

func TestMemoryStorageIsOnTmpfs(t *testing.T) {
	cp := startLocal(t, spec.StorageMemory)
	if cp.st.Storage != spec.StorageMemory || !strings.HasPrefix(cp.st.EtcdDataDir, memoryDir+"/kb-bench-etcd-") {
		t.Fatalf("storage %s, etcd data in %s: want memory under %s", cp.st.Storage, cp.st.EtcdDataDir, memoryDir)
	}
	if _, err := os.Stat(filepath.Join(cp.st.EtcdDataDir, "member", "wal")); err != nil {
		t.Errorf("etcd's WAL is not under %s: %v", cp.st.EtcdDataDir, err)
	}
	procs, dirs := procsOf(cp), []string{cp.st.Dir, cp.st.EtcdDataDir}
	if err := cp.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertGone(t, procs, dirs)
}

// TestNothingLeftWhenKbBenchIsInterruptedOrKilled runs the test binary as
// kb-bench, and stops it with Ctrl-C (it stops cleanly) or kill -9 (the
// kernel and the janitor clean up).
func TestNothingLeftWhenKbBenchIsInterruptedOrKilled(t *testing.T) {
	binariesOrSkip(t)
	for _, tc := range []struct {
		name    string
		sig     syscall.Signal
		storage spec.Storage
	}{
		{"SIGINT", syscall.SIGINT, spec.StorageDisk},
		{"SIGKILL", syscall.SIGKILL, spec.StorageMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+string(tc.storage))
			cmd.Stderr = testLog{t}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			var rep childReport
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if line, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
					if err := json.Unmarshal([]byte(line), &rep); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			if len(rep.Procs) != 2 {
				t.Fatal("the child did not report ready")
			}
			for _, p := range rep.Procs {
				if !proc.Alive(p.PID, p.StartTicks) {
					t.Fatalf("pid %d is not running before the signal", p.PID)
				}
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			if tc.sig == syscall.SIGINT && err != nil {
				t.Errorf("after Ctrl-C the child exited with %v, want a clean stop", err)
			}
			// After kill -9 the kernel and the janitor clean up, a moment later.
			await.Until(t, "the child's processes and dirs to go", func() error { return stillThere(rep.Procs, rep.Dirs) })
		})
	}
}

func TestTargetsOverARealControlPlane(t *testing.T) {
	cp := startLocal(t, spec.StorageDisk)
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("kubeconfig", func(t *testing.T) {
		conn, err := Open(ctx, spec.Target{Kind: spec.TargetKubeconfig, Kubeconfig: kubeconfig, Context: kubeconfigName}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if conn.Target.Kind != spec.TargetKubeconfig || conn.Target.Server != cp.st.Server || conn.Target.ServerVersion != cp.st.KubeVersion || conn.Target.Context != kubeconfigName {
			t.Errorf("target %+v", conn.Target)
		}
		if _, err := clientset(t, conn.Config).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(conn.Target)
		if strings.Contains(string(b), cp.creds.token) {
			t.Error("the result's target holds the token")
		}
	})
	t.Run("kind", func(t *testing.T) {
		deps := fakeKindDeps(fakeKind{clusters: []string{"bench"}, kubeconfig: string(raw)}, nil)
		conn, err := openKind(ctx, spec.Target{Kind: spec.TargetKindCluster, KindCluster: "bench"}, deps)
		if err != nil {
			t.Fatal(err)
		}
		if conn.Target.Kind != spec.TargetKindCluster || conn.Target.Server != cp.st.Server || conn.Target.Context != "kind-bench" || conn.Target.ServerVersion == "" {
			t.Errorf("target %+v", conn.Target)
		}
		if err := conn.Close(ctx); err != nil {
			t.Errorf("closing a cluster the user had: %v (it must never be deleted)", err)
		}
	})
	// A missing cluster is created for the run and deleted at the end,
	// unless --keep-cluster.
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("kind created keep=%t", keep), func(t *testing.T) {
			var created, deleted []string
			deps := fakeKindDeps(fakeKind{kubeconfig: string(raw)}, nil)
			deps.up = func(_ context.Context, o KindOptions, _ spec.PullPolicy) error {
				created = append(created, o.Name+" "+o.NodeImage)
				return nil
			}
			deps.down = func(_ context.Context, name string) error { deleted = append(deleted, name); return nil }
			conn, err := openKind(ctx, spec.Target{Kind: spec.TargetKindCluster, KindCluster: "bench", KindNodeImage: "img:1", KeepCluster: keep}, deps)
			if err != nil {
				t.Fatal(err)
			}
			if err := conn.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(created) != "[bench img:1]" || (len(deleted) == 1) == keep {
				t.Errorf("created %v, deleted %v with keep %t", created, deleted, keep)
			}
		})
	}
}

// TestLocalUpStatusDown goes through the `kb-bench local` life cycle:
// `local up` in a process that then exits, a run that reuses the control
// plane, `local down`.
func TestLocalUpStatusDown(t *testing.T) {
	bins := binariesOrSkip(t)
	ctx := context.Background()
	stateDir := filepath.Join(t.TempDir(), "local")
	up := exec.Command(os.Args[0], "-test.run=^$")
	up.Env = append(os.Environ(), childEnv+"=up="+stateDir)
	up.Stdout, up.Stderr = testLog{t}, testLog{t}
	t.Cleanup(func() { _ = Down(context.Background(), stateDir) })
	if err := up.Run(); err != nil {
		t.Fatalf("local up: %v", err)
	}

	// kb-bench local up has exited; the control plane must still run.
	st, err := Status(ctx, stateDir)
	if err != nil || !st.Healthy {
		t.Fatalf("Status = %+v, %v; want healthy", st, err)
	}
	t.Logf("local up took %s", st.StartupTime.Round(time.Millisecond))
	if st.Storage != spec.StorageMemory || st.KubeVersion == "" || st.EtcdVersion == "" || !strings.HasPrefix(st.EtcdDataDir, memoryDir) {
		t.Errorf("state %+v", st)
	}
	if !strings.HasPrefix(st.Dir, stateDir+"/kb-bench-") {
		t.Errorf("dir %s is not in the state dir", st.Dir)
	}
	if _, err := Up(ctx, UpOptions{Binaries: bins, StateDir: stateDir}); !spec.IsInput(err) || !strings.Contains(err.Error(), "kb-bench local down") {
		t.Errorf("second Up = %v, want a spec.Input error saying `kb-bench local down`", err)
	}

	conn, err := Open(ctx, spec.Target{Kind: spec.TargetLocal, Storage: spec.StorageMemory}, Options{StateDir: stateDir, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if !conn.Target.Reused || conn.Target.Server != st.Server || conn.Target.Storage != spec.StorageMemory || conn.Target.EtcdVersion != st.EtcdVersion {
		t.Errorf("Open(local) target %+v, want the reused `local up` control plane", conn.Target)
	}
	if _, err := clientset(t, conn.Config).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := Status(ctx, stateDir); err != nil || !got.Healthy {
		t.Fatalf("after the run closed, Status = %+v, %v: Close stopped a control plane it did not start", got, err)
	}

	// A run that asks for its own storage or binaries gets a private one.
	private, err := Open(ctx, spec.Target{Kind: spec.TargetLocal, Storage: spec.StorageDisk}, Options{StateDir: stateDir, Log: testLog{t}, Private: true})
	if err != nil {
		t.Fatal(err)
	}
	if private.Target.Reused || private.Target.Server == st.Server || private.Target.Storage != spec.StorageDisk {
		t.Errorf("Open(local, Private) target %+v, want a private disk control plane", private.Target)
	}
	if err := private.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := Status(ctx, stateDir); err != nil || !got.Healthy {
		t.Fatalf("after the private run closed, Status = %+v, %v", got, err)
	}

	if err := Down(ctx, stateDir); err != nil {
		t.Fatal(err)
	}
	assertGone(t, []ProcessState{st.APIServer, st.Etcd}, []string{st.Dir, st.EtcdDataDir, st.Kubeconfig})
	if _, err := Status(ctx, stateDir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Status after Down = %v, want ErrNotRunning", err)
	}
}

// TestLocalUpKilledWhileStartingLeavesNothing: `kb-bench local up` killed
// (kill -9, or a second Ctrl-C) before it recorded its control plane must
// not leave processes that `local down` cannot find.
func TestLocalUpKilledWhileStartingLeavesNothing(t *testing.T) {
	binariesOrSkip(t)
	stateDir := filepath.Join(t.TempDir(), "local")
	up := exec.Command(os.Args[0], "-test.run=^$")
	up.Env = append(os.Environ(), childEnv+"=up="+stateDir)
	stderr, err := up.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = up.Process.Kill(); _ = up.Wait() }()
	// Wait until etcd runs and the apiserver is starting.
	var etcdData string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		t.Log(sc.Text())
		if _, rest, ok := strings.Cut(sc.Text(), "data in "); ok && strings.Contains(sc.Text(), "etcd") {
			etcdData = strings.TrimSuffix(rest, ")")
			break
		}
	}
	if etcdData == "" {
		t.Fatal("local up did not report etcd ready")
	}
	// The apiserver is started right after etcd is ready, and takes
	// seconds to be ready itself: kill as soon as it runs.
	await.Until(t, "etcd and kube-apiserver to run before the kill", func() error {
		if procs := procsMentioning(t, stateDir, etcdData); len(procs) != 2 {
			return fmt.Errorf("found %v", procs)
		}
		return nil
	})
	if err := up.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = up.Wait()

	t.Cleanup(func() { // what the janitor did not clean, if the test failed
		for _, pid := range procsMentioning(t, stateDir, etcdData) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = os.RemoveAll(etcdData)
	})
	await.Until(t, "the janitor to clean up after the killed local up", func() error {
		procs := procsMentioning(t, stateDir, etcdData)
		dirs, _ := filepath.Glob(filepath.Join(stateDir, "kb-bench-*"))
		if _, err := os.Stat(etcdData); err == nil {
			dirs = append(dirs, etcdData)
		}
		if len(procs) > 0 || len(dirs) > 0 {
			return fmt.Errorf("left behind: processes %v, dirs %v", procs, dirs)
		}
		return nil
	})
	if _, err := Status(context.Background(), stateDir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Status after a killed local up = %v, want ErrNotRunning", err)
	}
}

// procsMentioning returns the pids of running processes whose command line
// contains any of the strings.
func procsMentioning(t *testing.T, strs ...string) []int {
	t.Helper()
	return procsWhere(t, "cmdline", func(cmdline []byte) bool {
		return slices.ContainsFunc(strs, func(s string) bool { return bytes.Contains(cmdline, []byte(s)) })
	})
}

// procsWhere returns the pids of running processes (but this one) whose
// /proc/PID/file (cmdline, environ) matches.
func procsWhere(t *testing.T, file string, match func([]byte) bool) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), file))
		if err != nil || !match(b) {
			continue
		}
		if _, running := proc.Stat(pid); running {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestOpenLocalStartsAndStopsItsOwn: with no `local up`, a run gets a
// private control plane that Close removes.
func TestOpenLocalStartsAndStopsItsOwn(t *testing.T) {
	binariesOrSkip(t)
	ctx := context.Background()
	conn, err := Open(ctx, spec.Target{Kind: spec.TargetLocal}, Options{StateDir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if conn.Target.Reused || conn.Target.Storage != spec.StorageDisk || conn.Target.ServerVersion == "" || conn.Target.EtcdVersion == "" {
		t.Errorf("target %+v", conn.Target)
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := clientset(t, conn.Config).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the apiserver still answers after Close")
	}
}
