package leaderelection

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Intruder is the holder identity the edit fault writes into the Lease:
// someone who is not a candidate.
const Intruder = "kb-bench-intruder"

// partition holds a candidate slot's requests to the apiserver while the
// slot is cut off, as a network partition does: a request waits until
// the partition heals or its own deadline passes, whichever comes first,
// while the candidate's clock and goroutines run on. A request that
// outlives the partition reaches the apiserver when it heals, late.
type partition struct {
	healed atomic.Pointer[chan struct{}] // nil while not partitioned
}

// cut partitions the slot until heal is called.
func (p *partition) cut() (heal func()) {
	ch := make(chan struct{})
	p.healed.Store(&ch)
	return sync.OnceFunc(func() {
		p.healed.CompareAndSwap(&ch, nil)
		close(ch)
	})
}

// wait returns at once when the slot is not partitioned; otherwise when
// the partition heals (nil) or ctx ends (its error: the request was
// never sent).
func (p *partition) wait(ctx context.Context) error {
	if p == nil {
		return nil
	}
	ch := p.healed.Load()
	if ch == nil {
		return nil
	}
	select {
	case <-*ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// faultEvent is one injected fault.
type faultEvent struct {
	kind   string
	at     time.Time // injected (for delete and edit: when the request was sent)
	victim string    // the leader it was injected on
	// healed is when a partition or pause ended (zero: at the end of the
	// run).
	healed time.Time
	err    error // the fault could not be injected
}

// inject injects the run's fault on the leader id in slot.
func (r *election) inject(ctx context.Context, slot int, id string) {
	ev := faultEvent{kind: r.set.fault(), at: time.Now(), victim: id}
	switch ev.kind {
	case FaultPartition, FaultPause:
		// The fault's times are taken before its signals, so that a paused
		// process's next event comes after both.
		var resume func()
		if ev.kind == FaultPause {
			// SIGSTOP freezes the process until SIGCONT.
			p := r.procs[slot].proc
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				ev.err = fmt.Errorf("pausing candidate process %d (pid %d): %w", slot, p.Pid, err)
				break
			}
			resume = sync.OnceFunc(func() { _ = p.Signal(syscall.SIGCONT) })
		} else {
			resume = r.cands[slot].partition.cut()
		}
		i := r.addFault(ev)
		timer := time.AfterFunc(r.set.FaultDuration.Duration, func() {
			r.mu.Lock()
			r.faults[i].healed = time.Now()
			r.mu.Unlock()
			resume()
		})
		r.heals = append(r.heals, func() { timer.Stop(); resume() })
		return
	case FaultDelete:
		ev.err = r.intrude(ctx, slot, evWrite, "", func(ctx context.Context) error {
			return r.env.Clients[0].CoordinationV1().Leases(r.env.Namespace).Delete(ctx, LeaseName, metav1.DeleteOptions{})
		})
	case FaultEdit:
		ev.err = r.editLease(ctx, slot)
	}
	if ev.err != nil {
		start, _ := r.env.Window.Start()
		r.env.Warn("leader election: the %s fault %s into the measured window failed: %v", ev.kind, ev.at.Sub(start).Round(time.Millisecond), ev.err)
	}
	r.addFault(ev)
}

func (r *election) addFault(ev faultEvent) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, ev)
	return len(r.faults) - 1
}

// editLease overwrites the Lease's holder with Intruder, renewed now for
// the lease duration: someone else takes the Lease by hand. A 409 (a
// candidate renewed in between) is retried on a fresh read.
func (r *election) editLease(ctx context.Context, slot int) error {
	leases := r.env.Clients[0].CoordinationV1().Leases(r.env.Namespace)
	var err error
	for range 5 {
		var lease *coordinationv1.Lease
		err = r.intrude(ctx, slot, evRead, "", func(ctx context.Context) (err error) {
			lease, err = leases.Get(ctx, LeaseName, metav1.GetOptions{})
			return err
		})
		if err != nil {
			return err
		}
		holder, secs, now := Intruder, int32(r.set.leaseSeconds()), metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &holder, &secs
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		err = r.intrude(ctx, slot, evWrite, Intruder, func(ctx context.Context) error {
			_, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
			return err
		})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// intrude runs one request of the intruder, a read or a write, recorded
// like the candidates' (a write is one operation of one write attempt) in
// the intruder phase; holder is the holder a write writes ("" for a
// delete).
func (r *election) intrude(ctx context.Context, slot int, kind, holder string, do func(context.Context) error) error {
	e, err := send(ctx, r.env.Spec.OpTimeout.Duration, nil, kind, do)
	e.Phase, e.ID, e.Holder = phaseIntruder, Intruder, holder
	_ = r.observe(slot, e)
	return err
}
