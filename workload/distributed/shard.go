package distributed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// ErrAborted is a shard's error when the coordinator ended the run.
var ErrAborted = errors.New("the coordinator aborted the run (another shard failed, or it was interrupted before the measured window)")

// Shard is a shard's side of a distributed run.
type Shard struct {
	// Index is the shard's number, from 0; Spec the run's resolved spec,
	// as JSON; Version the coordinator's kb-bench version.
	Index   int
	Spec    []byte
	Version string
	p       protocol
	run     runState // the coordinator's Lease as last read
}

// Join reads the coordinator's Lease of run runID in namespace and takes
// shard index's place in the run: its Lease, held by name, in the joining
// state (Joined follows once the shard is ready). timeout bounds the read.
func Join(ctx context.Context, kube kubernetes.Interface, namespace, runID string, index int, name string, timeout time.Duration) (*Shard, error) {
	p := protocol{kube: kube, namespace: namespace, runID: runID}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	st, err := p.readRun(rctx)
	cancel()
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= st.shards {
		return nil, spec.Input(fmt.Errorf("--index %d: run %s has shards 0 to %d", index, runID, st.shards-1))
	}
	if err := p.join(ctx, index, name); err != nil {
		return nil, err
	}
	return &Shard{Index: index, Spec: st.spec, Version: st.version, p: p, run: st}, nil
}

// Share is this shard's part [lo, hi) of total things (writers,
// operations): the parts of all shards differ in size by at most one.
func (s *Shard) Share(total int) (lo, hi int) { return share(total, s.run.shards, s.Index) }

// Say tells the coordinator the shard is in state st.
func (s *Shard) Say(ctx context.Context, st State) error {
	return s.p.setState(ctx, s.Index, st, nil)
}

// Warmup waits until the coordinator publishes the warm-up, and returns
// its bounds.
func (s *Shard) Warmup(ctx context.Context) (start, end time.Time, err error) {
	err = s.await(ctx, phaseWarmup)
	return s.run.warmup[0], s.run.warmup[1], err
}

// Window waits until the coordinator publishes the measured window, and
// returns its bounds (a zero end: bounded by operations); stopped says the
// coordinator ended the run before the window (Ctrl-C), which is then empty.
func (s *Shard) Window(ctx context.Context) (start, end time.Time, stopped bool, err error) {
	err = s.await(ctx, phaseMeasure, phaseStop)
	return s.run.window[0], s.run.window[1], s.run.phase == phaseStop, err
}

// Follow follows the coordinator during the measured window: the
// returned context ends when it stops the window early (Ctrl-C) or aborts
// the run, and meanwhile each new second latest returns is published for
// its progress line. end stops following and reports whether the run was
// aborted.
func (s *Shard) Follow(ctx context.Context, latest func() *metrics.SeriesPoint) (window context.Context, end func() (aborted bool)) {
	window, stop := context.WithCancel(ctx)
	aborted := make(chan bool, 1)
	go func() {
		defer close(aborted)
		var published *metrics.SeriesPoint
		for window.Err() == nil {
			k8s.Sleep(window, 500*time.Millisecond)
			if st, err := s.p.readRun(window); err == nil && (st.phase == phaseStop || st.phase == phaseAbort) {
				aborted <- st.phase == phaseAbort
				stop()
				return
			}
			if pt := latest(); pt != published && window.Err() == nil {
				published = pt
				_ = s.p.publishProgress(window, s.Index, *pt) // progress only: a miss is no failure
			}
		}
	}()
	return window, func() bool {
		stop()
		return <-aborted
	}
}

// Upload waits until the coordinator collects the results, uploads the
// shard's and says so.
func (s *Shard) Upload(ctx context.Context, r *results.Result) error {
	ctx = context.WithoutCancel(ctx)
	if err := s.await(ctx, phaseCollect); err != nil {
		return err
	}
	chunks, err := s.p.upload(ctx, s.Index, r)
	if err != nil {
		return err
	}
	return s.p.setState(ctx, s.Index, stateUploaded, map[string]string{annChunks: fmt.Sprint(chunks)})
}

// Fail tells the coordinator the shard failed, and why.
func (s *Shard) Fail(ctx context.Context, err error, timeout time.Duration) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	_ = s.p.setState(fctx, s.Index, stateFailed, map[string]string{annReason: err.Error()})
}

// await waits until the coordinator's Lease is in one of phases (polling
// it), and fails when the run is aborted or its deadline passes.
func (s *Shard) await(ctx context.Context, phases ...string) error {
	for {
		st, err := s.p.readRun(ctx)
		switch {
		case err == nil && st.phase == phaseAbort:
			return ErrAborted
		case err == nil && slices.Contains(phases, st.phase):
			s.run = st
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("interrupted while waiting for the coordinator: %w", context.Cause(ctx))
		case time.Now().After(s.run.deadline):
			return fmt.Errorf("the coordinator did not move the run to %s by its deadline %s: it is gone", strings.Join(phases, " or "), s.run.deadline.Format(time.RFC3339))
		}
		k8s.Sleep(ctx, 50*time.Millisecond)
	}
}
