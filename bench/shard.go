package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kb-bench/kb-bench/internal/readfile"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/leaderelection"
)

// ShardRequest is one shard of a distributed run, as the run's runner
// starts it: a process of kb-bench ('kb-bench shard') or a pod of its Job.
type ShardRequest struct {
	// Namespace and RunID name the run the shard joins.
	Namespace, RunID string
	// Index is the shard's number, from 0; -1 takes it from
	// $JOB_COMPLETION_INDEX (an Indexed Job's pod).
	Index int
	// Kubeconfig is the target's kubeconfig file, "-" to read it from In,
	// "" for the pod's service account.
	Kubeconfig string
	In         io.Reader
	// LiveFD and ResultFD are the listener and the pipe the process
	// runner hands down (0: none): the shard serves its figures on the
	// first and writes its result to the second, however the run ends.
	LiveFD, ResultFD int
}

// Shard runs one shard of a distributed run: it finds the run's
// coordination Lease, runs its share of the writers when the coordinator
// says so, and uploads its result for the coordinator to merge. Of o it
// uses Version, Log, Getenv and ClientLog.
func Shard(ctx context.Context, r ShardRequest, o Options) error {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if r.Namespace == "" || r.RunID == "" {
		return spec.Input(fmt.Errorf("--namespace and --run-id name the run this shard joins: both are needed"))
	}
	if r.Index < 0 {
		v := getenv("JOB_COMPLETION_INDEX")
		i, err := strconv.Atoi(v)
		if err != nil {
			return spec.Input(fmt.Errorf("no --index, and $JOB_COMPLETION_INDEX is %q: give the shard's index", v))
		}
		r.Index = i
	}
	var cfg *rest.Config
	var err error
	switch r.Kubeconfig {
	case "-":
		var b []byte
		if b, err = readfile.FromReader(ctx, r.In, readfile.Kubeconfig, "the kubeconfig"); err == nil {
			cfg, err = clientcmd.RESTConfigFromKubeConfig(b)
		}
	case "":
		// The pod's service account, asked for directly: through
		// clientcmd it would also log a warning into every shard's result.
		cfg, err = rest.InClusterConfig()
	default:
		// client-go reads the file itself: readfile refuses a device, a
		// FIFO or a huge file first.
		if _, err = readfile.Read(ctx, r.Kubeconfig, readfile.Kubeconfig, "the kubeconfig"); err == nil {
			cfg, err = clientcmd.BuildConfigFromFlags("", r.Kubeconfig)
		}
	}
	if err != nil {
		return spec.Input(fmt.Errorf("reaching the target: %w (give --kubeconfig, or run in a pod)", err))
	}
	name := getenv("POD_NAME")
	if name == "" {
		host, _ := os.Hostname()
		name = fmt.Sprintf("%s pid %d", host, os.Getpid())
	}
	var liveLn net.Listener
	if r.LiveFD > 0 {
		f := os.NewFile(uintptr(r.LiveFD), "live figures")
		if liveLn, err = net.FileListener(f); err != nil {
			return fmt.Errorf("--live-fd %d is not a listener the coordinator handed down: %w", r.LiveFD, err)
		}
		f.Close()
	}
	var resultOut io.Writer
	if r.ResultFD > 0 {
		f := os.NewFile(uintptr(r.ResultFD), "result hand-off")
		defer f.Close() // the coordinator reads until it is closed
		resultOut = f
	}
	return workload.RunShard(ctx, workload.ShardOptions{
		Options:   workload.Options{Config: cfg, RunID: r.RunID, Version: o.Version, Log: o.Log, ClientLog: o.ClientLog},
		Namespace: r.Namespace, Index: r.Index, Name: name, LiveListener: liveLn, ResultOut: resultOut,
	})
}

// Child runs this process as a child process that a run started of
// kb-bench itself (a leader-election candidate, for the pause fault) when
// it is one, and returns its exit status; it reports false otherwise. A
// program that runs kb-bench's runs calls it first.
func Child() (status int, isChild bool) { return leaderelection.CandidateMain() }
