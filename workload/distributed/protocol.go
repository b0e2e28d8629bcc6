package distributed

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
)

// A distributed run (Spec.Shards) is coordinated through the apiserver
// under test, on Leases, a resource the shardable scenarios never touch,
// so the coordination does not blur the server cross-check of what they
// write. The coordinator's Lease (kb-bench-<run>) carries the spec and the
// phase; each shard's Lease (kb-bench-<run>-shard-<i>) its state:
//
//	coordinator phase    shards answer
//	join                 joined        (objects found, writers built, connected)
//	warmup  W..U         quiet-start   (warm-up run, no request in flight)
//	   the coordinator scrapes /metrics: the window's first edge
//	measure S..E         quiet-end     (window run from S to E, no request in flight)
//	   the coordinator scrapes /metrics: the window's last edge
//	collect              uploaded      (result in ConfigMaps kb-bench-<run>-shard-<i>-result-<k>)
//
// W and S lie a lead ahead of the moment they are published, so every
// shard starts at the same instant. "stop" ends the window early
// (Ctrl-C); "abort" ends the run (a shard failed): shards stop at once and
// upload nothing. A shard that fails sets its state to failed with a
// reason.

// Phases of the coordinator's Lease.
const (
	phaseJoin    = "join"
	phaseWarmup  = "warmup"
	phaseMeasure = "measure"
	phaseStop    = "stop"
	phaseCollect = "collect"
	phaseAbort   = "abort"
)

// State is where a shard is, as its Lease tells the coordinator.
type State string

// States of a shard's Lease.
const (
	// stateJoining: the Lease is made, the shard is getting ready (its
	// objects, writers and connections); Joined: it is ready (its objects
	// found, its writers built, its clients connected).
	stateJoining State = "joining"
	Joined       State = "joined"
	// QuietStart: it has run the warm-up and has no request in flight.
	QuietStart State = "quiet-start"
	// QuietEnd: it has run the measured window and has no request in
	// flight.
	QuietEnd      State = "quiet-end"
	stateUploaded State = "uploaded"
	stateFailed   State = "failed"
)

// Annotations of the Leases.
const (
	annPhase    = "kb-bench.io/phase"
	annSpec     = "kb-bench.io/spec"
	annShards   = "kb-bench.io/shards"
	annVersion  = "kb-bench.io/version"
	annWarmup   = "kb-bench.io/warmup"   // "W U", RFC 3339 with nanoseconds
	annWindow   = "kb-bench.io/window"   // "S E" (E "-" when the run is bounded by operations)
	annDeadline = "kb-bench.io/deadline" // when a shard gives up waiting for the coordinator
	annState    = "kb-bench.io/state"
	annReason   = "kb-bench.io/reason"
	annChunks   = "kb-bench.io/chunks"
	annProgress = "kb-bench.io/progress" // a shard's last second (a metrics.SeriesPoint), during the window
	// LabelRole tells the coordinator's Lease from the shards'.
	labelRole = "kb-bench.io/role"
)

// resultChunk bounds one ConfigMap of a shard's uploaded result, under the
// apiserver's 1 MiB object limit.
const resultChunk = 900 << 10

// protocol reads and writes one run's coordination objects.
type protocol struct {
	kube      kubernetes.Interface
	namespace string
	runID     string
}

func (p protocol) runLease() string { return "kb-bench-" + p.runID }

func (p protocol) shardLease(i int) string { return fmt.Sprintf("kb-bench-%s-shard-%d", p.runID, i) }

func (p protocol) resultName(i, chunk int) string {
	return fmt.Sprintf("kb-bench-%s-shard-%d-result-%d", p.runID, i, chunk)
}

// labels are the run's labels and the object's role.
func (p protocol) labels(role string) map[string]string {
	l := k8s.Labels(p.runID)
	l[labelRole] = role
	return l
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseStamps(s string) (a, b time.Time, err error) {
	first, second, ok := strings.Cut(s, " ")
	if !ok {
		return a, b, fmt.Errorf("%q is not two instants", s)
	}
	parse := func(v string) (time.Time, error) {
		if v == "-" {
			return time.Time{}, nil
		}
		return time.Parse(time.RFC3339Nano, v)
	}
	if a, err = parse(first); err == nil {
		b, err = parse(second)
	}
	return a, b, err
}

// createRun creates the coordinator's Lease in the join phase.
func (p protocol) createRun(ctx context.Context, specJSON []byte, shards int, version string, deadline time.Time) error {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name:   p.runLease(),
		Labels: p.labels("coordinator"),
		Annotations: map[string]string{
			annPhase: phaseJoin, annSpec: string(specJSON), annShards: strconv.Itoa(shards),
			annVersion: version, annDeadline: stamp(deadline),
		},
	}}
	_, err := p.kube.CoordinationV1().Leases(p.namespace).Create(ctx, l, metav1.CreateOptions{FieldManager: k8s.SetupManager})
	if err != nil {
		return fmt.Errorf("creating the run's coordination Lease %s: %w", l.Name, err)
	}
	return nil
}

// setPhase moves the run to phase, with its instants (annWarmup or
// annWindow) when given.
func (p protocol) setPhase(ctx context.Context, phase, key string, a, b time.Time) error {
	return p.update(ctx, p.runLease(), func(ann map[string]string) {
		ann[annPhase] = phase
		if key != "" {
			ann[key] = stamp(a) + " " + stamp(b)
		}
	})
}

// update changes a Lease's annotations, retrying on conflict.
func (p protocol) update(ctx context.Context, name string, change func(map[string]string)) error {
	leases := p.kube.CoordinationV1().Leases(p.namespace)
	for {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading Lease %s: %w", name, err)
		}
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		change(l.Annotations)
		l.Spec.RenewTime = new(metav1.NewMicroTime(time.Now()))
		if _, err = leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: k8s.SetupManager}); err == nil {
			return nil
		} else if !apierrors.IsConflict(err) {
			return fmt.Errorf("writing Lease %s: %w", name, err)
		}
	}
}

// runState is the coordinator's Lease as a shard reads it.
type runState struct {
	phase    string
	spec     []byte
	shards   int
	version  string
	warmup   [2]time.Time
	window   [2]time.Time
	deadline time.Time
}

// readRun reads the coordinator's Lease.
func (p protocol) readRun(ctx context.Context) (runState, error) {
	l, err := p.kube.CoordinationV1().Leases(p.namespace).Get(ctx, p.runLease(), metav1.GetOptions{})
	if err != nil {
		return runState{}, fmt.Errorf("reading the run's coordination Lease %s/%s: %w", p.namespace, p.runLease(), err)
	}
	a := l.Annotations
	st := runState{phase: a[annPhase], spec: []byte(a[annSpec]), version: a[annVersion]}
	if st.shards, err = strconv.Atoi(a[annShards]); err != nil {
		return st, fmt.Errorf("Lease %s says %q shards: %w", l.Name, a[annShards], err)
	}
	if st.deadline, err = time.Parse(time.RFC3339Nano, a[annDeadline]); err != nil {
		return st, fmt.Errorf("Lease %s's deadline: %w", l.Name, err)
	}
	for key, dst := range map[string]*[2]time.Time{annWarmup: &st.warmup, annWindow: &st.window} {
		if v, ok := a[key]; ok {
			if dst[0], dst[1], err = parseStamps(v); err != nil {
				return st, fmt.Errorf("Lease %s's %s: %w", l.Name, key, err)
			}
		}
	}
	return st, nil
}

// join creates shard i's Lease in the joining state, held by name: the
// index is taken; the shard says joined once it is ready.
func (p protocol) join(ctx context.Context, i int, name string) error {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: p.shardLease(i), Labels: p.labels("shard"), Annotations: map[string]string{annState: string(stateJoining)}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name},
	}
	_, err := p.kube.CoordinationV1().Leases(p.namespace).Create(ctx, l, metav1.CreateOptions{FieldManager: k8s.SetupManager})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("shard %d of run %s has already joined (Lease %s exists): each shard index runs once", i, p.runID, l.Name)
	}
	if err != nil {
		return fmt.Errorf("joining the run (creating Lease %s): %w", l.Name, err)
	}
	return nil
}

// setState sets shard i's state (and the other annotations given).
func (p protocol) setState(ctx context.Context, i int, state State, more map[string]string) error {
	return p.update(ctx, p.shardLease(i), func(ann map[string]string) {
		ann[annState] = string(state)
		maps.Copy(ann, more)
	})
}

// shardState is one shard's Lease as the coordinator reads it.
type shardState struct {
	state          State
	reason, holder string
	chunks         int
	progress       *metrics.SeriesPoint // its last second in the window, if any
}

// readShards reads every shard's Lease, by index.
func (p protocol) readShards(ctx context.Context) (map[int]shardState, error) {
	list, err := p.kube.CoordinationV1().Leases(p.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: k8s.LabelRunID + "=" + p.runID + "," + labelRole + "=shard",
	})
	if err != nil {
		return nil, fmt.Errorf("reading the shards' Leases: %w", err)
	}
	out := map[int]shardState{}
	prefix := "kb-bench-" + p.runID + "-shard-"
	for _, l := range list.Items {
		i, err := strconv.Atoi(strings.TrimPrefix(l.Name, prefix))
		if err != nil || !strings.HasPrefix(l.Name, prefix) {
			continue
		}
		st := shardState{state: State(l.Annotations[annState]), reason: l.Annotations[annReason]}
		if l.Spec.HolderIdentity != nil {
			st.holder = *l.Spec.HolderIdentity
		}
		st.chunks, _ = strconv.Atoi(l.Annotations[annChunks])
		if v, ok := l.Annotations[annProgress]; ok {
			var pt metrics.SeriesPoint
			if json.Unmarshal([]byte(v), &pt) == nil {
				st.progress = &pt
			}
		}
		out[i] = st
	}
	return out, nil
}

// publishProgress puts shard i's last second on its Lease, for the
// coordinator's progress line.
func (p protocol) publishProgress(ctx context.Context, i int, pt metrics.SeriesPoint) error {
	b, err := json.Marshal(pt)
	if err != nil {
		return err
	}
	return p.update(ctx, p.shardLease(i), func(ann map[string]string) { ann[annProgress] = string(b) })
}

// upload stores shard i's result, compressed, in as many ConfigMaps as it
// needs, and returns how many.
func (p protocol) upload(ctx context.Context, i int, r *results.Result) (int, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(r); err != nil {
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	chunks := 0 // gzip's header alone makes at least one
	for part := range slices.Chunk(buf.Bytes(), resultChunk) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: p.resultName(i, chunks), Labels: p.labels("result")},
			BinaryData: map[string][]byte{"result.json.gz": part},
		}
		if _, err := p.kube.CoreV1().ConfigMaps(p.namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: k8s.SetupManager}); err != nil {
			return chunks, fmt.Errorf("uploading the shard's result (%s): %w", cm.Name, err)
		}
		chunks++
	}
	return chunks, nil
}

// download reads shard i's result from its chunks, and deletes them.
func (p protocol) download(ctx context.Context, i, chunks int) (*results.Result, error) {
	cms := p.kube.CoreV1().ConfigMaps(p.namespace)
	var data []byte
	for k := range chunks {
		cm, err := cms.Get(ctx, p.resultName(i, k), metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading shard %d's result: %w", i, err)
		}
		data = append(data, cm.BinaryData["result.json.gz"]...)
	}
	for k := range chunks {
		_ = cms.Delete(ctx, p.resultName(i, k), metav1.DeleteOptions{})
	}
	var r results.Result
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err == nil {
		err = json.NewDecoder(zr).Decode(&r)
	}
	if err != nil {
		return nil, fmt.Errorf("shard %d's result: %w", i, err)
	}
	if r.Shard == nil || r.Shard.Index != i {
		return nil, fmt.Errorf("shard %d's result does not say it is that shard's", i)
	}
	return &r, nil
}

// share is part i of n of total things: [lo, hi), sizes differing by at
// most one.
func share(total, n, i int) (lo, hi int) {
	return total * i / n, total * (i + 1) / n
}
