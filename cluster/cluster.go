// Package cluster provides the apiservers kb-bench runs against: a local
// control plane of real upstream kube-apiserver and etcd processes on
// loopback (started per run, or kept by `kb-bench local up`), an existing
// kind cluster, or any kubeconfig. Open turns a spec.Target into a
// rest.Config and a spec.TargetInfo that says what ran.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/internal/netdelay"
	"github.com/kb-bench/kb-bench/internal/proc"
	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/spec"
)

// reachTimeout bounds the GET /version that checks a target is reachable.
const reachTimeout = 5 * time.Second

// Options configures Open.
type Options struct {
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// StateDir is where `kb-bench local up` records its control plane
	// (DefaultStateDir when empty).
	StateDir string
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// Private starts a control plane of the run's own even when a
	// `kb-bench local up` one is running: set it when the user asked for a
	// particular storage or binaries, which the running one may not have.
	Private bool
}

// Connection is an open target.
type Connection struct {
	// Config reaches the apiserver as an admin. QPS, Burst and user agent
	// are the caller's to set.
	Config *rest.Config
	// Target describes the apiserver for the result (never credentials).
	Target spec.TargetInfo
	// Close releases the target: it stops a control plane that Open
	// started, and does nothing otherwise.
	Close func(ctx context.Context) error
	// Lost is closed when a control plane that Open started dies by
	// itself; LostReason then says how. Nil (never closed) otherwise.
	Lost       <-chan struct{}
	LostReason func() string
	// KillAPIServer kills apiserver i (from 0) of Servers, for the fault
	// spec.Target.KillAPIServer; nil unless Open started the control plane.
	KillAPIServer func(i int) error
	// Servers are the URLs of every apiserver of a local control plane
	// that runs several, the first (Config's host) first; nil otherwise.
	// Config reaches each with its host replaced.
	Servers []string
	// EtcdDelay, when the target runs a delaying proxy in front of etcd,
	// reads what it has added so far; nil otherwise.
	EtcdDelay func() spec.DelayObserved
	// EtcdMetrics is the URL of etcd's /metrics when kb-bench can read it:
	// a local control plane's etcd serves it on its client URL. Empty for
	// kind and kubeconfig targets, whose etcd kb-bench does not reach.
	EtcdMetrics string
}

// Open connects to the target t describes:
//   - spec.TargetLocal (the default): the healthy `kb-bench local up`
//     control plane when there is one, else a new one that Close stops;
//   - spec.TargetKubeconfig: the given kubeconfig file and context, or with
//     a context alone, that context of $KUBECONFIG or ~/.kube/config;
//   - spec.TargetKindCluster: the kind cluster t.KindCluster ("kind"),
//     created for the run when it does not exist (and deleted by Close
//     unless t.KeepCluster).
//
// Unreachable targets and missing binaries are spec.Input errors.
func Open(ctx context.Context, t spec.Target, o Options) (*Connection, error) {
	o.Log = cmp.Or(o.Log, io.Discard)
	o.Getenv = getenvOr(o.Getenv)
	switch t.Kind {
	case spec.TargetLocal, "":
		return openLocal(ctx, t, o)
	case spec.TargetKubeconfig:
		return openKubeconfig(ctx, t, o.Getenv)
	case spec.TargetKindCluster:
		// A cluster made for the run is watched until it is deleted: a
		// kb-bench killed meanwhile (kill -9) leaves nothing.
		var guard *proc.Janitor
		return openKind(ctx, t, kindDeps{
			newProvider: func() (kindProvider, error) { return kindProviderFor(o.Getenv) },
			describe: func(name string) (string, string) {
				st, err := ReadKindState(ctx, "", name, o.Getenv)
				if err != nil {
					return "", kindNodeImage(o.Getenv, name)
				}
				b, _ := KindConfigYAML(st.Options)
				return string(b), st.Options.NodeImage
			},
			up: func(ctx context.Context, ko KindOptions, pull spec.PullPolicy) error {
				st, created, err := KindUp(ctx, ko, KindUpOptions{Log: o.Log, Getenv: o.Getenv, Pull: pull})
				if err == nil && created && !t.KeepCluster {
					guard = guardKind(o.Getenv, st)
				}
				return err
			},
			down: func(ctx context.Context, name string) error {
				fmt.Fprintf(o.Log, "kind: deleting cluster %s, made for the run (--keep-cluster keeps it)\n", name)
				err := KindDown(ctx, name, "", o.Getenv)
				guard.Release()
				return err
			},
		})
	}
	return nil, spec.Input(fmt.Errorf("target %q is not known (--target): use %s, %s or %s", t.Kind, spec.TargetLocal, spec.TargetKindCluster, spec.TargetKubeconfig))
}

func noClose(context.Context) error { return nil }

func openLocal(ctx context.Context, t spec.Target, o Options) (*Connection, error) {
	stateDir := cmp.Or(o.StateDir, DefaultStateDir(o.Getenv))
	st, err := Status(ctx, stateDir)
	switch {
	case o.Private:
		if err == nil {
			fmt.Fprintf(o.Log, "local control plane: not reusing the one from `kb-bench local up` (storage or binaries were asked for); starting a private one\n")
		}
	case err == nil && st.Healthy && len(st.Servers) != t.APIServerCount():
		fmt.Fprintf(o.Log, "local control plane: not reusing the one from `kb-bench local up`: it runs %s, and %d were asked for; starting a private one\n",
			words.Plural(len(st.Servers), "apiserver"), t.APIServerCount())
	case err == nil && st.Healthy:
		version, err := ServerVersion(ctx, st.config)
		if err != nil {
			return nil, spec.Input(fmt.Errorf("the `kb-bench local up` control plane at %s does not answer (%w): restart it with `kb-bench local down` and `kb-bench local up`", st.Server, err))
		}
		note := ""
		if t.Storage != "" && t.Storage != st.Storage {
			note = fmt.Sprintf(" (its storage is %s, not the requested %s: `kb-bench local down` to run on a fresh one)", st.Storage, t.Storage)
		}
		fmt.Fprintf(o.Log, "local control plane: using the one from `kb-bench local up` at %s%s\n", st.Server, note)
		conn := localConnection(st, st.config, version)
		conn.Target.Reused = true
		return conn, nil
	case err == nil:
		fmt.Fprintf(o.Log, "local control plane: the one from `kb-bench local up` is not healthy (%s); starting a private one\n", st.Detail)
	case !errors.Is(err, ErrNotRunning):
		fmt.Fprintf(o.Log, "local control plane: ignoring the `kb-bench local up` record: %v\n", err)
	}

	bins, err := FindBinaries(t.ControlPlaneBin, o.Getenv)
	if err != nil {
		return nil, err
	}
	if t.ControllerManager && bins.ControllerManager == "" && bins.Source == SourceCache {
		// The default run does not need it, so the first install leaves
		// it out: build it now, once.
		fmt.Fprintf(o.Log, "local control plane: --controller-manager needs kube-controller-manager %s, which is not built yet: building it now (minutes, once)\n", KubeVersion)
		if _, err := Install(ctx, InstallOptions{ControllerManager: true, Log: o.Log, Getenv: o.Getenv}); err != nil {
			return nil, err
		}
		if bins, err = FindBinaries(t.ControlPlaneBin, o.Getenv); err != nil {
			return nil, err
		}
	}
	if bins.PassedOver != "" {
		fmt.Fprintf(o.Log, "local control plane: %s\n", bins.PassedOver)
	}
	cp, err := StartLocal(ctx, LocalOptions{Binaries: bins, Storage: t.Storage, Log: o.Log, ControllerManager: t.ControllerManager,
		APIServers: t.APIServerCount(), EtcdDelay: netdelay.Delay{RTT: t.EtcdLatency.Duration, Jitter: t.EtcdJitter.Duration}})
	if err != nil {
		return nil, err
	}
	conn := localConnection(&cp.st, cp.RESTConfig(), cp.st.KubeVersion)
	conn.Target.ControllerManager = cp.kcm != nil
	conn.Close = cp.Stop
	conn.Lost, conn.LostReason = cp.Lost()
	conn.KillAPIServer = cp.KillAPIServer
	if cp.proxy != nil {
		conn.EtcdDelay = cp.proxy.Observed
	}
	return conn, nil
}

// localConnection reaches the local control plane st records with cfg.
func localConnection(st *LocalState, cfg *rest.Config, version string) *Connection {
	conn := &Connection{Config: cfg, Close: noClose, EtcdMetrics: etcdMetricsURL(st.Etcd.Port),
		Target: spec.TargetInfo{Kind: spec.TargetLocal, Server: st.Server, ServerVersion: version, Storage: st.Storage, EtcdVersion: st.EtcdVersion}}
	if len(st.Servers) > 1 {
		conn.Servers, conn.Target.APIServers = st.Servers, st.Servers
	}
	return conn
}

func openKubeconfig(ctx context.Context, t spec.Target, getenv func(string) string) (*Connection, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: t.Kubeconfig}
	source := t.Kubeconfig
	if t.Kubeconfig == "" {
		// --context alone names a context of the user's usual kubeconfig;
		// without either nothing is named, and nothing is used.
		if t.Context == "" {
			return nil, spec.Input(errors.New("target kubeconfig needs the cluster named: pass --kubeconfig PATH and/or --context NAME"))
		}
		// The files kubectl reads: $KUBECONFIG, else ~/.kube/config.
		files := []string{filepath.Join(getenv("HOME"), ".kube", "config")}
		if env := getenv("KUBECONFIG"); env != "" {
			files = filepath.SplitList(env)
		}
		rules = &clientcmd.ClientConfigLoadingRules{Precedence: files}
		source = strings.Join(rules.Precedence, string(filepath.ListSeparator))
	}
	cfg, raw, err := kubeconfigFrom(ctx, rules, t.Context)
	if raw == nil {
		return nil, spec.Input(fmt.Errorf("reading kubeconfig %s: %w: check --kubeconfig", source, err))
	}
	contextName := cmp.Or(t.Context, raw.CurrentContext)
	if err != nil {
		return nil, spec.Input(fmt.Errorf("kubeconfig %s (context %q): %w: check --kubeconfig and --context", source, contextName, err))
	}
	version, err := ServerVersion(ctx, cfg)
	if err != nil {
		return nil, spec.Input(fmt.Errorf("cannot reach the apiserver %s (kubeconfig %s, context %q): %w: check the kubeconfig and context, or start the cluster",
			cfg.Host, source, contextName, err))
	}
	return &Connection{
		Config: cfg,
		Target: spec.TargetInfo{Kind: spec.TargetKubeconfig, Server: cfg.Host, ServerVersion: version, Context: contextName},
		Close:  noClose,
	}, nil
}

// ServerVersion GETs /version within reachTimeout: it proves the apiserver
// answers and accepts the credentials.
func ServerVersion(ctx context.Context, cfg *rest.Config) (string, error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = reachTimeout
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return "", err
	}
	v, err := dc.ServerVersionWithContext(ctx)
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}
