package cluster

import (
	"context"
	"errors"
	"github.com/kb-bench/kb-bench/internal/proc"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

// sleeper starts a `sleep` that the test kills at the end; it stands for a
// process recorded in a state file.
func sleeper(t *testing.T) ProcessState {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ticks, ok := proc.Stat(cmd.Process.Pid)
	if !ok {
		t.Fatal("sleep is not running")
	}
	return ProcessState{PID: cmd.Process.Pid, StartTicks: ticks}
}

// deadProcess returns the identity of a process that has exited.
func deadProcess(t *testing.T) ProcessState {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ticks, _ := proc.Stat(cmd.Process.Pid)
	_ = cmd.Wait()
	return ProcessState{PID: cmd.Process.Pid, StartTicks: ticks + 1}
}

// recordedState writes a state file as `local up` would, with the given
// processes and real dirs, and returns the state.
func recordedState(t *testing.T, stateDir string, apiserver, etcd ProcessState) *LocalState {
	t.Helper()
	dir, err := os.MkdirTemp(stateDir, "kb-bench-*")
	if err != nil {
		t.Fatal(err)
	}
	etcdDir := filepath.Join(dir, "etcd")
	if err := os.Mkdir(etcdDir, 0o700); err != nil {
		t.Fatal(err)
	}
	st := &LocalState{
		Server: "https://127.0.0.1:1", Kubeconfig: filepath.Join(stateDir, kubeconfigFile),
		Dir: dir, EtcdDataDir: etcdDir, Storage: spec.StorageDisk,
		APIServer: apiserver, Etcd: etcd, Started: time.Now(),
	}
	if err := writeState(stateDir, st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.Kubeconfig, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStatusAndDownWithNothingRecorded(t *testing.T) {
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
		_, err := Status(context.Background(), dir)
		if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "start one with `kb-bench local up`") {
			t.Errorf("Status(%s) = %v, want ErrNotRunning saying to run `kb-bench local up`", dir, err)
		}
		if err := Down(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
			t.Errorf("Down(%s) = %v, want ErrNotRunning", dir, err)
		}
	}
}

func TestStaleStateIsReportedAndCleanedUp(t *testing.T) {
	ctx := context.Background()
	stateDir := t.TempDir()
	st := recordedState(t, stateDir, deadProcess(t), deadProcess(t))

	got, err := Status(ctx, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Healthy || !strings.Contains(got.Detail, "no longer running") || !strings.Contains(got.Detail, "kb-bench local down") {
		t.Errorf("Status of a stale record = healthy %v, %q; want unhealthy, saying to run `kb-bench local down`", got.Healthy, got.Detail)
	}
	if err := Down(ctx, stateDir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{st.Dir, st.Kubeconfig, filepath.Join(stateDir, stateFile)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Down", p)
		}
	}
	if _, err := Status(ctx, stateDir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Status after Down = %v, want ErrNotRunning", err)
	}
}

func TestDownNeverKillsAProcessThatReusedAPid(t *testing.T) {
	stateDir := t.TempDir()
	other := sleeper(t)
	reused := other
	reused.StartTicks++ // same pid, started at another time: not ours
	recordedState(t, stateDir, reused, deadProcess(t))

	if err := Down(context.Background(), stateDir); err != nil {
		t.Fatal(err)
	}
	if !proc.Alive(other.PID, other.StartTicks) {
		t.Fatal("Down killed an unrelated process that had the recorded pid")
	}
}

func TestUpRefusesWhileOneRuns(t *testing.T) {
	stateDir := t.TempDir()
	recordedState(t, stateDir, sleeper(t), sleeper(t))

	_, err := Up(context.Background(), UpOptions{Binaries: Binaries{APIServer: "/nonexistent", Etcd: "/nonexistent"}, StateDir: stateDir})
	if err == nil || !spec.IsInput(err) || !strings.Contains(err.Error(), "`kb-bench local down`") {
		t.Fatalf("Up with one running = %v, want a spec.Input error saying `kb-bench local down` first", err)
	}
}

func TestUnreadableStateIsRemovedByDown(t *testing.T) {
	stateDir := t.TempDir()
	path := filepath.Join(stateDir, stateFile)
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Status(context.Background(), stateDir); err == nil || !strings.Contains(err.Error(), "kb-bench local down") {
		t.Errorf("Status of an unreadable state = %v, want an error saying `kb-bench local down`", err)
	}
	err := Down(context.Background(), stateDir)
	if err == nil || !strings.Contains(err.Error(), "removed it") {
		t.Errorf("Down of an unreadable state = %v, want an error saying it was removed", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("the unreadable state file is still there")
	}
}

func TestStateFileRoundTripHoldsNoStatus(t *testing.T) {
	stateDir := t.TempDir()
	st := &LocalState{Server: "https://127.0.0.1:6443", Dir: filepath.Join(stateDir, "kb-bench-1"), Storage: spec.StorageMemory,
		APIServer: ProcessState{PID: 10, StartTicks: 20, Port: 6443}, Healthy: true, Detail: "x", Started: time.Unix(100, 0).UTC()}
	if err := writeState(stateDir, st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(stateDir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "healthy") || strings.Contains(string(b), "detail") {
		t.Errorf("state file stores a status that is only true when Status runs:\n%s", b)
	}
	got, err := readState(t.Context(), stateDir)
	if err != nil {
		t.Fatal(err)
	}
	want := *st
	want.Healthy, want.Detail = false, ""
	// readState lists the one apiserver of a record that names only it.
	want.APIServers, want.Servers = []ProcessState{st.APIServer}, []string{st.Server}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("read back %+v\nwant %+v", *got, want)
	}
}

// A record whose apiserver runs but whose etcd is gone is not "already
// running": Up says which process is gone and to clean up with local down,
// and starts nothing.
func TestUpOnAPartlyRunningRecord(t *testing.T) {
	dir := t.TempDir()
	ticks, running := proc.Stat(os.Getpid())
	if !running || ticks == 0 {
		t.Skip("no /proc start times here")
	}
	st := &LocalState{Server: "https://127.0.0.1:1", Dir: filepath.Join(dir, "kb-bench-1"),
		APIServer: ProcessState{PID: os.Getpid(), StartTicks: ticks}, Etcd: ProcessState{PID: 0}}
	if err := writeState(dir, st); err != nil {
		t.Fatal(err)
	}
	_, err := Up(context.Background(), UpOptions{Binaries: Binaries{APIServer: "/nonexistent", Etcd: "/nonexistent"}, StateDir: dir})
	if !spec.IsInput(err) || !strings.Contains(err.Error(), "only partly running (etcd is gone)") || !strings.Contains(err.Error(), "kb-bench local down") {
		t.Fatalf("Up on a half-dead record: %v", err)
	}
}
