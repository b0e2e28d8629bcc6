package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kb-bench/kb-bench/internal/proc"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kb-bench/kb-bench/internal/atomicfile"
	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/spec"
)

// Files in the state dir.
const (
	stateFile      = "state.json"
	kubeconfigFile = "kubeconfig"
	lockFile       = "lock"
)

// ErrNotRunning is wrapped by Status and Down when no `kb-bench local up`
// control plane is recorded in the state dir.
var ErrNotRunning = errors.New("no local control plane is running: start one with `kb-bench local up`")

// LocalState records a control plane started by `kb-bench local up`, in
// <StateDir>/state.json. It holds no credentials: those are in the
// kubeconfig it names.
type LocalState struct {
	// Server is the apiserver URL.
	Server string `json:"server"`
	// Kubeconfig is the admin kubeconfig's path.
	Kubeconfig string `json:"kubeconfig"`
	// Dir holds certificates, logs and (disk storage) etcd's data.
	Dir string `json:"dir"`
	// EtcdDataDir is etcd's data dir (under /dev/shm with memory storage).
	EtcdDataDir string `json:"etcdDataDir"`
	// Storage is spec.StorageDisk or spec.StorageMemory.
	Storage spec.Storage `json:"storage"`
	// KubeVersion and EtcdVersion are what the servers reported.
	KubeVersion string `json:"kubeVersion"`
	EtcdVersion string `json:"etcdVersion"`
	// Binaries is the directory the binaries came from.
	Binaries string `json:"binaries"`
	// APIServer and Etcd are the two processes (APIServer the first
	// apiserver when there are several).
	APIServer ProcessState `json:"apiserver"`
	Etcd      ProcessState `json:"etcd"`
	// APIServers are every apiserver, the first first, and Servers their
	// URLs (`local up --apiservers N`). The file holds them only when
	// there are several, as it did before there could be.
	APIServers []ProcessState `json:"apiservers,omitempty"`
	Servers    []string       `json:"servers,omitempty"`
	// Started is when `local up` started it; StartupTime how long it took.
	Started     time.Time     `json:"started"`
	StartupTime time.Duration `json:"startupTime"`

	// Healthy and Detail are set by Status (never stored): whether both
	// processes run and /readyz answers ok, and if not, why.
	Healthy bool   `json:"-"`
	Detail  string `json:"-"`
	// config reaches the apiserver as the admin, once Status found it
	// healthy.
	config *rest.Config
}

// ProcessState identifies one process of a `local up` control plane.
type ProcessState struct {
	PID int `json:"pid"`
	// StartTicks is the start time from /proc/<pid>/stat; it tells the
	// process from a later one that reused its pid.
	StartTicks uint64 `json:"startTicks"`
	Port       int    `json:"port"`
	Log        string `json:"log"`
}

// DefaultStateDir is where `kb-bench local` keeps its state:
// ${KB_BENCH_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/kb-bench}/local.
func DefaultStateDir(getenv func(string) string) string {
	return filepath.Join(userDir(getenv, "KB_BENCH_STATE", "XDG_STATE_HOME", "/.local/state"), "local")
}

// userDir is kb-bench's directory of a kind: $env, else $xdg/kb-bench,
// else $HOME<home>/kb-bench.
func userDir(getenv func(string) string, env, xdg, home string) string {
	return cmp.Or(getenv(env), filepath.Join(cmp.Or(getenv(xdg), getenv("HOME")+home), "kb-bench"))
}

// getenvOr is getenv, or os.Getenv when getenv is nil.
func getenvOr(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}

// UpOptions configures Up.
type UpOptions struct {
	// Binaries are the kube-apiserver and etcd to run; when not given, Up
	// finds them (FindBinaries) in Bin, or where Getenv says.
	Binaries Binaries
	Bin      string
	Getenv   func(string) string
	// Storage is spec.StorageDisk (default) or spec.StorageMemory.
	Storage spec.Storage
	// StateDir holds state.json, the kubeconfig and the control plane's dir.
	StateDir string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// APIServers is how many kube-apiservers to run (0 means 1).
	APIServers int
}

// gone names the recorded processes that no longer run ("etcd (pid
// 12)"); someAlive says whether any still does.
func (st *LocalState) gone() (gone []string, someAlive bool) {
	check := func(name string, ps ProcessState) {
		if ps.alive() {
			someAlive = true
		} else {
			gone = append(gone, fmt.Sprintf("%s (pid %d)", name, ps.PID))
		}
	}
	for _, ps := range st.APIServers {
		check("kube-apiserver", ps)
	}
	check("etcd", st.Etcd)
	return gone, someAlive
}

// stopped reports whether the (first) apiserver or etcd is stopped
// (SIGSTOP or a debugger).
func (st *LocalState) stopped() bool {
	return proc.Stopped(st.APIServer.PID) || proc.Stopped(st.Etcd.PID)
}

// Up starts a control plane that outlives kb-bench and records it in
// <StateDir>/state.json and <StateDir>/kubeconfig. It refuses when one is
// already running; a stale record (processes gone) is cleaned up first.
func Up(ctx context.Context, o UpOptions) (*LocalState, error) {
	if o.StateDir == "" {
		return nil, errors.New("UpOptions.StateDir is empty: use cluster.DefaultStateDir")
	}
	o.Log = cmp.Or(o.Log, io.Discard)
	t := spec.Target{Kind: spec.TargetLocal, Storage: cmp.Or(o.Storage, spec.StorageDisk), APIServers: o.APIServers}
	if errs := t.Validate(field.NewPath("target")); len(errs) > 0 {
		return nil, spec.Input(errors.New(spec.Describe(errs)))
	}
	if o.Binaries.APIServer == "" {
		var err error
		if o.Binaries, err = FindBinaries(o.Bin, getenvOr(o.Getenv)); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state dir: %w", err)
	}
	unlock, err := lockStateDir(o.StateDir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	old, err := readState(ctx, o.StateDir)
	var gone []string
	someAlive := false
	if err == nil {
		gone, someAlive = old.gone()
	}
	switch {
	case errors.Is(err, ErrNotRunning):
	case err != nil:
		return nil, err
	case len(gone) == 0 && old.stopped():
		return nil, spec.Input(fmt.Errorf("the local control plane recorded at %s is running but stopped (kube-apiserver pid %d, etcd pid %d; SIGSTOP or a debugger): it answers nothing. Resume it with kill -CONT %d %d, or remove it with `kb-bench local down`",
			old.Server, old.APIServer.PID, old.Etcd.PID, old.APIServer.PID, old.Etcd.PID))
	case len(gone) == 0:
		return nil, spec.Input(fmt.Errorf("a local control plane is already running at %s (state in %s): stop it first with `kb-bench local down`",
			old.Server, o.StateDir))
	case someAlive:
		which := "kube-apiserver"
		if !old.Etcd.alive() {
			which = "etcd"
		}
		return nil, spec.Input(fmt.Errorf("the local control plane recorded at %s is only partly running (%s is gone): clean it up with `kb-bench local down`, then run `kb-bench local up` again",
			old.Server, which))
	default:
		fmt.Fprintf(o.Log, "local control plane: cleaning up a stale record (its processes are gone): %s\n", old.Dir)
		if err := down(ctx, o.StateDir, old); err != nil {
			return nil, err
		}
	}

	cp, err := StartLocal(ctx, LocalOptions{Binaries: o.Binaries, Storage: o.Storage, Log: o.Log, Detached: true, Dir: o.StateDir, APIServers: o.APIServers})
	if err != nil {
		return nil, err
	}
	st := cp.st
	st.Kubeconfig = filepath.Join(o.StateDir, kubeconfigFile)
	err = cp.WriteKubeconfig(st.Kubeconfig)
	if err == nil {
		err = writeState(o.StateDir, &st)
	}
	if err != nil {
		_ = cp.Stop(ctx)
		os.Remove(st.Kubeconfig)
		return nil, fmt.Errorf("recording the local control plane in %s: %w", o.StateDir, err)
	}
	// Recorded: from now on `kb-bench local down` stops it, and the
	// janitor no longer does when kb-bench dies.
	cp.janitor.Release()
	st.Healthy = true
	return &st, nil
}

// Status reads the state dir and checks that both processes run and that
// /readyz answers ok. With nothing recorded it returns an error wrapping
// ErrNotRunning; otherwise the state, with Healthy and Detail set.
func Status(ctx context.Context, stateDir string) (*LocalState, error) {
	st, err := readState(ctx, stateDir)
	if err != nil {
		return nil, err
	}
	if gone, _ := st.gone(); len(gone) > 0 {
		st.Detail = fmt.Sprintf("%s no longer running: clean up with `kb-bench local down`, then `kb-bench local up`", strings.Join(gone, " and "))
		return st, nil
	}
	if st.stopped() {
		st.Detail = fmt.Sprintf("its processes are stopped (SIGSTOP or a debugger) and answer nothing: resume them with kill -CONT %d %d, or remove them with `kb-bench local down`",
			st.APIServer.PID, st.Etcd.PID)
		return st, nil
	}
	cfg, _, err := kubeconfigFrom(ctx, &clientcmd.ClientConfigLoadingRules{ExplicitPath: st.Kubeconfig}, "")
	if err != nil {
		st.Detail = fmt.Sprintf("its kubeconfig is unusable (%v): restart it with `kb-bench local down` and `kb-bench local up`", err)
		return st, nil
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		st.Detail = err.Error()
		return st, nil
	}
	client.Timeout = 3 * time.Second
	for i, server := range st.Servers {
		if err := get(ctx, client, strings.TrimSuffix(server, "/")+"/readyz", nil); err != nil {
			st.Detail = fmt.Sprintf("processes run but the apiserver at %s is not ready: %v (logs: %s, %s)", server, err, st.APIServers[min(i, len(st.APIServers)-1)].Log, st.Etcd.Log)
			return st, nil
		}
	}
	st.Healthy, st.config = true, cfg
	return st, nil
}

// Down stops the `local up` control plane and removes its dir, kubeconfig
// and state, also when the record is stale. With nothing recorded it returns
// an error wrapping ErrNotRunning.
func Down(ctx context.Context, stateDir string) error {
	unlock, err := lockStateDir(stateDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w (no state dir %s)", ErrNotRunning, stateDir)
		}
		return err
	}
	defer unlock()
	st, err := readState(ctx, stateDir)
	if err != nil {
		if errors.Is(err, ErrNotRunning) {
			return err
		}
		// Unreadable: nothing to stop by it, but the record must go.
		if rmErr := os.Remove(filepath.Join(stateDir, stateFile)); rmErr != nil {
			return errors.Join(err, rmErr)
		}
		return fmt.Errorf("%w; removed it: stop any kube-apiserver or etcd it started by hand", err)
	}
	return down(ctx, stateDir, st)
}

func down(ctx context.Context, stateDir string, st *LocalState) error {
	var apiservers []*proc.Process
	for _, ps := range st.APIServers {
		apiservers = append(apiservers, ps.process("kube-apiserver"))
	}
	if err := stopAndClean(ctx, [][]*proc.Process{apiservers, {st.Etcd.process("etcd")}}, []string{st.Dir, st.EtcdDataDir}); err != nil {
		return err
	}
	for _, f := range []string{kubeconfigFile, stateFile} {
		if err := os.Remove(filepath.Join(stateDir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// stateOf records p, listening on port.
func stateOf(p *proc.Process, port int) ProcessState {
	return ProcessState{PID: p.Pid, StartTicks: p.StartTicks, Port: port, Log: p.Log}
}

// process is the recorded process, found again, named name.
func (p ProcessState) process(name string) *proc.Process {
	return &proc.Process{Name: name, Pid: p.PID, StartTicks: p.StartTicks}
}

// alive reports whether the recorded process still runs. Without a start
// time to compare, a pid alone is not trusted.
func (p ProcessState) alive() bool {
	return p.PID > 0 && p.StartTicks > 0 && proc.Alive(p.PID, p.StartTicks)
}

func readState(ctx context.Context, stateDir string) (*LocalState, error) {
	path := filepath.Join(stateDir, stateFile)
	b, err := readfile.Read(ctx, path, readfile.Small, "the local control plane's state")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (no %s)", ErrNotRunning, path)
	}
	if err != nil {
		return nil, err
	}
	var st LocalState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("the local control plane's state %s is unreadable (%v): remove it with `kb-bench local down`", path, err)
	}
	// Down removes these dirs: only ever ones StartLocal made.
	if st.Server == "" || !madeByStartLocal(st.Dir, "kb-bench-") ||
		(st.EtcdDataDir != "" && filepath.Dir(st.EtcdDataDir) != st.Dir && !madeByStartLocal(st.EtcdDataDir, "kb-bench-etcd-")) {
		return nil, fmt.Errorf("the local control plane's state %s is incomplete: remove it with `kb-bench local down`", path)
	}
	if len(st.APIServers) == 0 {
		st.APIServers = []ProcessState{st.APIServer}
	}
	if len(st.Servers) == 0 {
		st.Servers = []string{st.Server}
	}
	return &st, nil
}

func madeByStartLocal(dir, prefix string) bool {
	return filepath.IsAbs(dir) && filepath.Clean(dir) == dir && strings.HasPrefix(filepath.Base(dir), prefix)
}

func writeState(stateDir string, st *LocalState) error {
	rec := *st
	if len(rec.APIServers) == 1 {
		rec.APIServers, rec.Servers = nil, nil
	}
	return writeJSON(filepath.Join(stateDir, stateFile), &rec)
}

// writeJSON writes v, indented, to path, readable only by the owner.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}

// lockStateDir takes an exclusive lock on the state dir so that two
// `local up`/`down` cannot interleave.
func lockStateDir(stateDir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(stateDir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another `kb-bench local` command is using %s: wait for it to finish", stateDir)
	}
	return func() { f.Close() }, nil
}

// LoadKubeconfig is the config of context contextName (the current one
// when empty) of the kubeconfig file path, read as a target's is.
func LoadKubeconfig(ctx context.Context, path, contextName string) (*rest.Config, error) {
	cfg, _, err := kubeconfigFrom(ctx, &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, contextName)
	return cfg, err
}

// kubeconfigFrom loads the kubeconfig files rules name and returns the
// config of context contextName (the current context when empty) and the
// merged file. Unlike client-go's deferred loading it never falls back to
// the in-cluster config: inside a pod, an empty kubeconfig would otherwise
// send the load to the pod's own cluster, which nobody named.
func kubeconfigFrom(ctx context.Context, rules *clientcmd.ClientConfigLoadingRules, contextName string) (*rest.Config, *clientcmdapi.Config, error) {
	// client-go reads the files itself, whole: each is first read through
	// readfile, so that a device, a FIFO or a huge file is refused (a
	// missing one is client-go's to judge: it skips those it may).
	for _, f := range rules.GetLoadingPrecedence() {
		if _, err := readfile.Read(ctx, f, readfile.Kubeconfig, "the kubeconfig"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, nil, err
	}
	if _, ok := raw.Contexts[contextName]; contextName != "" && !ok {
		names := cmp.Or(strings.Join(slices.Sorted(maps.Keys(raw.Contexts)), ", "), "none")
		var missing []string // client-go skips kubeconfig files that do not exist
		for _, f := range rules.GetLoadingPrecedence() {
			if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			return nil, raw, fmt.Errorf("context %q does not exist (contexts: %s; no such file: %s)", contextName, names, strings.Join(missing, ", "))
		}
		return nil, raw, fmt.Errorf("context %q does not exist (contexts: %s)", contextName, names)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, contextName, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, raw, errors.New("it names no cluster to use")
	}
	if err != nil {
		return nil, raw, err
	}
	return cfg, raw, nil
}
