// Package app is kb-bench's command line: thin cobra commands that turn
// flags into a request of package bench, call it, and print what it
// returns. Errors are printed once, here, and mapped to exit statuses.
package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kb-bench/kb-bench/bench"
	"github.com/kb-bench/kb-bench/cluster"
	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics/clientgo"
	"github.com/kb-bench/kb-bench/spec"
)

// Streams are the standard streams, swappable in tests.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
	// ClientLog collects what client-go logs (klog), which a run turns
	// into warnings; nil: client-go's lines are dropped.
	ClientLog *clientgo.Log
}

// Main runs kb-bench with the process's arguments and streams and returns
// the exit status. The first interrupt cancels the run, which then drains and
// writes what it has; a second one ends the process at once.
func Main(version string) int {
	// A run may start processes of this executable (leader-election
	// candidates): in one of those, the library runs it.
	if status, ok := bench.Child(); ok {
		return status
	}
	// Output to a pipe that closed (kb-bench run 2>&1 | head) fails to
	// write instead of killing the process (Go's default for stdout and
	// stderr), so that the run still saves its result and deletes what it
	// made on the target. Notify, not Ignore: an ignored signal stays
	// ignored in every program kb-bench starts (etcd, kube-apiserver,
	// shards), a caught one goes back to its default across exec.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), interruptSignals...)
	defer stop()
	go onInterrupt(ctx, stop, os.Stderr, os.Exit)
	// client-go logs through klog: its lines become the run's warnings
	// (counted, deduplicated) instead of interleaving with the summary.
	clientLog := clientgo.NewLog()
	klog.SetLogger(logr.New(clientLog))
	streams := Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ClientLog: clientLog}
	return Run(ctx, streams, os.Args[1:], resolveVersion(version), os.Getenv)
}

// interruptSignals stop a run: Ctrl-C, a termination request, and a
// closed terminal or SSH connection (SIGHUP), so that its result is
// still written.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// onInterrupt waits for ctx, Main's signal context, to end. When a signal
// ended it, the run now drains, saves its result and cleans up: it says
// so, and a second signal ends the process at once (exit), saying what
// may be left. When stop ended it (Main returning: the command is over)
// it says nothing, for that is no interruption; stop cancels the context
// too, so only the cause tells the two apart: context.Canceled itself
// for stop, the signal's own error (which errors.Is calls Canceled too)
// for a signal.
func onInterrupt(ctx context.Context, stop context.CancelFunc, errOut io.Writer, exit func(int)) {
	<-ctx.Done()
	if context.Cause(ctx) == context.Canceled {
		return
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, interruptSignals...)
	stop()
	fmt.Fprintln(errOut, "\nkb-bench: interrupted: stopping; what ran is saved and what was started is cleaned up (interrupt again to exit at once)")
	<-again
	fmt.Fprintln(errOut, "\nkb-bench: interrupted again: exiting now, without cleaning up. A local control plane of the run's own dies with kb-bench; "+
		"on another cluster the run's namespace may be left: kubectl delete namespace -l app.kubernetes.io/managed-by=kb-bench "+
		"(with --namespace, its objects: kubectl delete -n NAMESPACE "+k8s.OwnKinds+" -l app.kubernetes.io/managed-by=kb-bench)")
	exit(spec.ExitInterrupted)
}

// Run executes one command line and returns the exit status.
func Run(ctx context.Context, s Streams, args []string, version string, getenv func(string) string) int {
	root := NewRootCommand(s, version, getenv)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return spec.ExitOK
	}
	fmt.Fprintf(s.Err, "kb-bench: %v\n", err)
	if status := spec.ExitStatus(err); status == spec.ExitTargetLost || ctx.Err() == nil {
		return status
	}
	return spec.ExitInterrupted // also when interrupted before anything ran (starting the target)
}

// NewRootCommand builds the kb-bench command tree.
func NewRootCommand(s Streams, version string, getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "kb-bench",
		Short: "Benchmark Kubernetes apiserver write contention",
		Long: `kb-bench measures what happens when many clients write the same Kubernetes
objects at once: 409 conflicts, retries, latency and lost updates, for each
write strategy (update, retry, patch, server-side apply).

By default it runs against a real local control plane (upstream kube-apiserver
and etcd on loopback). It sends load to an existing cluster only when you name
one with --kubeconfig or --context.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return spec.Input(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	root.AddCommand(
		newRunCommand(s, version, getenv),
		newSweepCommand(s, version, getenv),
		newReportCommand(s, version),
		newShowCommand(s),
		newLocalCommand(s, getenv),
		newKindCommand(s, getenv),
		newRBACCommand(s),
		newShardCommand(s, version, getenv),
		newProfilesCommand(s),
		newScenariosCommand(s),
		newCompareCommand(s),
		newGateCommand(s),
		newVersionCommand(s, version),
	)
	checkCommandLine(root)
	return root
}

// resolveVersion prefers the version stamped at build time, then the module
// version recorded by `go install`, then "dev".
func resolveVersion(stamped string) string {
	if stamped != "" {
		return stamped
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func newVersionCommand(s Streams, version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the kb-bench version, the control-plane versions it builds and the kind node image it uses",
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(s.Out, "kb-bench %s\nlocal control plane: kube-apiserver %s, etcd %s (built by `kb-bench local install`)\nkind node image: %s (Kubernetes %s, kind's own default)\n",
				version, cluster.KubeVersion, cluster.EtcdVersion, cluster.DefaultKindNodeImage, cluster.DefaultKindKubeVersion)
			return nil
		},
	}
}
