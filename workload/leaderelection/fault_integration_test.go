package leaderelection_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kb-bench/kb-bench/results/render/text"
	"github.com/kb-bench/kb-bench/results/resultstest"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload"
	"github.com/kb-bench/kb-bench/workload/leaderelection"
)

// The faults' runs share these timings: a 2s lease, a 1s renew deadline,
// a 200ms retry period (500ms for delete and edit), leader-only writes
// every 100ms; the fault is
// injected once, 1s into the measured window (away from its start, where
// the engine holds requests while it reads the apiserver's /metrics), on
// whoever leads then.
const (
	faultLease = 2 * time.Second
	faultRenew = time.Second
	faultRetry = 200 * time.Millisecond
	// slowRetry is the delete and edit tests' retry period: the watch
	// lock must detect within it, whatever else the machine runs.
	slowRetry = 500 * time.Millisecond
	faultAt   = time.Second
)

func faultSettings(lock, fault string, extra map[string]any) map[string]any {
	m := map[string]any{
		"leaseDuration": faultLease.String(), "renewDeadline": faultRenew.String(), "retryPeriod": faultRetry.String(),
		"lock": lock, "fault": fault, "faultAt": faultAt.String(), "leaderWrites": "100ms",
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// runFault runs 3 candidates under one fault for d after a 500ms warm-up
// and checks what holds under every fault: the server counted exactly
// what kb-bench sent (Lease requests that a partition held until their
// deadline were never sent, so neither side counts them), every measured
// write is a Lease write or a leader-only write, and the fencing token
// refuses exactly the writes accepted from deposed leaders.
func runFault(t *testing.T, settings map[string]any, d time.Duration) *leaderelection.Report {
	t.Helper()
	return runFaultWith(t, spec.Spec{Duration: spec.D(d), Settings: settings}, workload.Options{})
}

// leaderlessStart is the measured window each fault's run is given beyond
// what its fault needs. The window's first edge holds every request for
// a second or more (two scrapes and the apiserver's idle interval; more
// on a loaded machine), past the tests' 1s renew deadline: the leader can
// step down there, and the window then opens leaderless until another
// candidate finds the Lease expired and takes it. The fault is injected
// on that leader, later than --fault-at, and a window sized for the fault
// alone could end before what follows it is seen (the fault is then not
// injected at all, as a pause fault's run beside two CPU-bound
// processes once showed).
const leaderlessStart = 2 * faultLease

// runFaultWith is runFault with the spec's other fields and the engine's
// options given.
func runFaultWith(t *testing.T, s spec.Spec, o workload.Options) *leaderelection.Report {
	t.Helper()
	s.Writers, s.Clients, s.Warmup = 3, 3, spec.D(500*time.Millisecond)
	s.Duration.Duration += leaderlessStart
	out, r := runScenario(t.Context(), t, local.Config(t), s, o)
	res := out.Result
	var b strings.Builder
	if err := text.WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	if err := resultstest.ServerAgrees(res.Server); err != nil {
		t.Errorf("server cross-check: %v, want every count to match the apiserver's", err)
	}
	if r.FirstLeader == "" {
		t.Fatalf("no candidate was elected")
	}
	w := r.LeaderWrites
	if w == nil || w.Accepted == 0 || w.Unclassified {
		t.Fatalf("leader-only writes %+v, want some, told apart", w)
	}
	if got, want := res.Summary.Ops, leaseWrites(res)+w.Measured; got != want {
		t.Errorf("the recorder measured %d operations, want the %d Lease writes and %d leader-only writes", got, leaseWrites(res), w.Measured)
	}
	if w.Unfenced != 0 || w.WouldBeFenced < w.Deposed {
		t.Errorf("%d writes accepted from deposed leaders, fencing would refuse %d and let %d through: want every one refused", w.Deposed, w.WouldBeFenced, w.Unfenced)
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
	return r
}

// oneFault returns the report's one fault.
func oneFault(t *testing.T, r *leaderelection.Report) leaderelection.FaultReport {
	t.Helper()
	if len(r.Faults) != 1 || r.Faults[0].Failed != "" {
		t.Fatalf("faults %+v, want one injected", r.Faults)
	}
	return r.Faults[0]
}

// assertTheftsAgree checks that the fault's detection, when the Lease was
// taken by a candidate while the victim still believed it led, is the
// theft's: the two are measured apart (Lease writes, leaderships).
func assertTheftsAgree(t *testing.T, r *leaderelection.Report, f leaderelection.FaultReport) {
	t.Helper()
	if !f.Taken || f.Detection <= 0 || f.TakenBy == leaderelection.Intruder {
		return
	}
	for _, th := range r.Thefts {
		if th.Victim == f.Victim {
			if f.Overlap <= 0 {
				t.Errorf("the victim went on leading %s after the taking, but the window has no overlap", f.Detection)
			}
			return
		}
	}
	t.Errorf("the victim went on leading %s after the taking, but no theft from it was found: %+v", f.Detection, r.Thefts)
}

// TestFaultCountsFromTheWindowsStart holds the measured window's first
// edge (every request held) 4s longer than usual, as a slow /metrics
// scrape on a loaded machine does, with 3s operation timeouts. A fault
// timed from the end of the warm-up fires inside that edge, and its
// delete waits there until its timeout ends it unsent; timed from the
// window's start, as --fault-at says, it is sent faultAt into the window.
func TestFaultCountsFromTheWindowsStart(t *testing.T) {
	const slowEdge = 4 * time.Second
	s := spec.Spec{
		Duration: spec.D(faultAt + 3*faultLease), OpTimeout: spec.D(3 * time.Second),
		Settings: faultSettings(leaderelection.LockWatch, leaderelection.FaultDelete, map[string]any{"retryPeriod": slowRetry.String()}),
	}
	r := runFaultWith(t, s, workload.Options{OnEdge: func(edge int, done bool) {
		if edge == 1 && !done {
			time.Sleep(slowEdge) // the slow scrape itself: the fault under test
		}
	}})
	f := oneFault(t, r)
	if f.At < faultAt {
		t.Errorf("the fault was injected %s into the measured window, want from %s (--fault-at)", f.At, faultAt)
	}
	if f.NextHolder == "" {
		t.Errorf("fault %+v: no one took the Lease after it was deleted", f)
	}
}

// TestFaultNotInjectedIsSaid gives the Lease to a holder of the test's
// own for an hour as the window's first edge begins, through a client the
// edge does not hold: the leader steps down. Then either no candidate
// leads in the window, or, renewed for 3s as the edge ends, the Lease is
// found expired and taken 3s or more into a 6.9s window, too late for a
// delete fault at 1s and the candidates' 4s lease after it to be seen
// (the follower dates its sight of the change from when its Get returns,
// not from when the edge held it). Either way
// --fault-at's one fault is not injected, and a run that asked for it
// says so, and why, rather than reporting "faults 0" alone.
func TestFaultNotInjectedIsSaid(t *testing.T) {
	cfg := local.Config(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, tt := range []struct {
		name   string
		lease  time.Duration // the Lease's as the window opens
		window time.Duration
		own    time.Duration // the candidates' lease
		want   string
	}{
		{"no leader", time.Hour, faultAt + faultLease, faultLease, "the delete fault was not injected: no candidate led from 1s into the measured window to its end (3s)"},
		{"a late leader", 3 * time.Second, 6900 * time.Millisecond, 4 * time.Second, "the delete fault was not injected: it was due 1s into the measured window, but the leader to inject it on was found only "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// runScenario names the run's namespace from the next run number.
			ns := fmt.Sprintf("kb-bench-le-%d-%d", os.Getpid(), runSeq.Load()+1)
			hold := func(d time.Duration) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					l, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), leaderelection.LeaseName, metav1.GetOptions{})
					if err != nil {
						return err
					}
					holder, secs, now := "kb-bench-test-holder", int32(d/time.Second), metav1.NewMicroTime(time.Now())
					l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &secs, &now
					_, err = cs.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{})
					return err
				})
			}
			var holdErr error
			s := spec.Spec{
				Writers: 3, Clients: 3, Warmup: spec.D(500 * time.Millisecond), Duration: spec.D(tt.window),
				Settings: faultSettings(leaderelection.LockWatch, leaderelection.FaultDelete, map[string]any{"retryPeriod": slowRetry.String(), "leaseDuration": tt.own.String()}),
			}
			out, r := runScenario(t.Context(), t, cfg, s, workload.Options{OnEdge: func(edge int, done bool) {
				switch {
				case edge != 1 || holdErr != nil:
				case !done:
					holdErr = hold(time.Hour)
				case tt.lease < time.Hour:
					holdErr = hold(tt.lease)
				}
			}})
			if holdErr != nil {
				t.Fatalf("taking the Lease at the window's edge: %v", holdErr)
			}
			if len(r.Faults) != 0 {
				t.Fatalf("faults %+v, want none", r.Faults)
			}
			for _, w := range out.Result.Warnings {
				if strings.Contains(w, tt.want) {
					return
				}
			}
			t.Errorf("warnings %q, want one saying %q", out.Result.Warnings, tt.want)
		})
	}
}

// TestPartitionOnLocalControlPlane holds the leader's requests for 4s,
// twice the lease: another candidate takes the Lease during the
// partition. Each lock steps down when no renewal succeeds within the
// renew deadline (its renewals are held). The leader-only write the
// partition held is delivered when it heals, after the taking: a write
// from a deposed leader, which the fencing token would refuse.
func TestPartitionOnLocalControlPlane(t *testing.T) {
	const partition = 4 * time.Second
	for _, lock := range []string{leaderelection.LockClientGo, leaderelection.LockWatch} {
		t.Run(lock, func(t *testing.T) {
			r := runFault(t, faultSettings(lock, leaderelection.FaultPartition, map[string]any{"faultDuration": partition.String()}),
				faultAt+partition+2*faultLease)
			f := oneFault(t, r)
			if !f.Taken || !f.VictimStopped {
				t.Fatalf("fault %+v: want the Lease taken and the victim stepped down", f)
			}
			if f.Duration < partition {
				t.Errorf("the partition lasted %s, want %s", f.Duration, partition)
			}
			// The victim's renewals wait at the partition and fail at the
			// renew deadline: it steps down without a word from the
			// apiserver, before the partition heals.
			if f.StoppedAfter >= f.Duration {
				t.Errorf("the victim stepped down %s after the partition, want before it healed (%s): at its renew deadline", f.StoppedAfter, f.Duration)
			}
			// Taken while partitioned, a leader-only write the partition
			// held lands at the heal, after the taking: a deposed write.
			// That there is one is not guaranteed (on a loaded machine the
			// victim's renewals can fail before the cut, and it stops
			// writing before the partition holds one), so it is shown, and
			// what is guaranteed is asserted: fencing refuses every one.
			if f.TakenAfter < f.Duration {
				t.Logf("the Lease was taken %s into a %s partition; %d writes of the victim's were accepted after", f.TakenAfter, f.Duration, f.DeposedWrites)
			}
			if f.WouldBeFenced < f.DeposedWrites {
				t.Errorf("victim's deposed writes %d, fencing refuses %d: want every one refused", f.DeposedWrites, f.WouldBeFenced)
			}
			assertTheftsAgree(t, r, f)
		})
	}
}

// TestPauseOnLocalControlPlane freezes the leader's process (SIGSTOP, the
// candidates then run as processes of their own) for 6s, three times the
// lease: another candidate takes the Lease during the pause while the
// frozen leader still believes it leads. Whatever its lock, a frozen
// leader cannot step down before it is continued, so the overlap lasts at
// least from the taking to the end of the pause, and no longer than the
// victim's detection. Once continued, the watch lock steps down within a
// retry period: the watch event and its renewal's 409 are waiting for it.
func TestPauseOnLocalControlPlane(t *testing.T) {
	const pause = 6 * time.Second
	for _, lock := range []string{leaderelection.LockClientGo, leaderelection.LockWatch} {
		t.Run(lock, func(t *testing.T) {
			r := runFault(t, faultSettings(lock, leaderelection.FaultPause, map[string]any{"faultDuration": pause.String(), "retryPeriod": slowRetry.String()}),
				faultAt+pause+2*faultLease)
			f := oneFault(t, r)
			if !f.Taken || !f.VictimStopped {
				t.Fatalf("fault %+v: want the Lease taken and the victim stepped down", f)
			}
			if f.Duration < pause {
				t.Errorf("the pause lasted %s, want %s", f.Duration, pause)
			}
			if f.StoppedAfter < f.Duration {
				// The fault's time is taken before SIGSTOP is sent, so a
				// leader whose renewal failed on its own just then (a
				// loaded machine) steps down before it freezes: before
				// anyone took the Lease. Stepping down after the taking,
				// within the pause, only a process still running can do.
				if f.Taken && f.Detection < 0 {
					t.Logf("the victim stepped down %s after the pause was ordered, %s before the Lease was taken: it lost the Lease on its own before it froze, so there is no frozen leader to measure", f.StoppedAfter, -f.Detection)
					return
				}
				t.Errorf("the victim stepped down %s into a %s pause, after the Lease was taken: a frozen process cannot", f.StoppedAfter, f.Duration)
			}
			if lock == leaderelection.LockWatch {
				if after := f.StoppedAfter - f.Duration; after >= slowRetry {
					t.Errorf("the watch lock stepped down %s after the pause ended, want within a retry period %s", after, slowRetry)
				}
			}
			if f.TakenAfter >= f.Duration {
				t.Logf("the Lease was taken only %s into a %s pause: no theft from a frozen leader to measure", f.TakenAfter, f.Duration)
				return
			}
			// Taken while the victim was frozen: a theft, and an overlap
			// from the thief's start to at least the end of the pause.
			var theft *leaderelection.Theft
			for i, th := range r.Thefts {
				if th.Victim == f.Victim {
					theft = &r.Thefts[i]
				}
			}
			if theft == nil {
				t.Fatalf("the Lease was taken %s into the pause of %s, but no theft from it was found: %+v", f.TakenAfter, f.Victim, r.Thefts)
			}
			frozen := f.At + f.Duration - theft.At
			if theft.Detection < frozen {
				t.Errorf("the victim went on believing %s after the theft, want at least the %s it stayed frozen", theft.Detection, frozen)
			}
			if f.Overlap < frozen || f.Overlap > theft.Detection {
				t.Errorf("overlap %s, want between the %s the victim stayed frozen after the theft and its detection %s", f.Overlap, frozen, theft.Detection)
			}
			if f.WouldBeFenced < f.DeposedWrites {
				t.Errorf("victim's deposed writes %d, fencing refuses %d: want every one refused", f.DeposedWrites, f.WouldBeFenced)
			}
		})
	}
}

// TestEditOnLocalControlPlane overwrites the Lease's holder with an
// intruder. client-go's leader finds out at its next renewal and retries
// until its renew deadline, believing it leads all the while; the watch
// lock steps down on the watch event, within a retry period.
func TestEditOnLocalControlPlane(t *testing.T) {
	for _, lock := range []string{leaderelection.LockClientGo, leaderelection.LockWatch} {
		t.Run(lock, func(t *testing.T) {
			r := runFault(t, faultSettings(lock, leaderelection.FaultEdit, map[string]any{"retryPeriod": slowRetry.String()}), faultAt+3*faultLease)
			f := oneFault(t, r)
			if !f.Taken || f.TakenBy != leaderelection.Intruder {
				t.Fatalf("fault %+v: want the Lease taken by %s at the fault", f, leaderelection.Intruder)
			}
			if !f.VictimStopped {
				t.Fatalf("fault %+v: the victim never stepped down", f)
			}
			switch lock {
			case leaderelection.LockClientGo:
				// It has no way to hear of the edit but its renewals, and
				// gives up at the end of a renewal round: not before the
				// fault. (How soon after depends on where its round was:
				// on a loaded machine a round may already be running out.)
				if f.StoppedAfter < 0 {
					t.Errorf("client-go's leader stepped down %s before the edit", -f.StoppedAfter)
				}
			case leaderelection.LockWatch:
				// Negative when the watch event came before the intruder's
				// answer.
				if f.Detection >= slowRetry {
					t.Errorf("the watch lock detected the edit after %s, want within a retry period %s", f.Detection, slowRetry)
				}
			}
			// The intruder is nobody's candidate: after its lease runs
			// out a candidate takes over.
			if f.Leaderless <= 0 {
				t.Errorf("no leaderless time after the edit: %+v", f)
			}
			if r.Intruder.Writes < 1 || r.Intruder.Reads < 1 {
				t.Errorf("intruder requests %+v, want its read and its write", r.Intruder)
			}
		})
	}
}

// TestDeleteOnLocalControlPlane deletes the Lease: a leader appears on a
// re-created Lease (client-go's leader often re-creates it itself, and
// never noticed; the watch lock steps down on the delete event).
func TestDeleteOnLocalControlPlane(t *testing.T) {
	for _, lock := range []string{leaderelection.LockClientGo, leaderelection.LockWatch} {
		t.Run(lock, func(t *testing.T) {
			r := runFault(t, faultSettings(lock, leaderelection.FaultDelete, map[string]any{"retryPeriod": slowRetry.String()}), faultAt+3*faultLease)
			f := oneFault(t, r)
			if f.NextHolder == "" {
				t.Fatalf("fault %+v: no one took the Lease after it was deleted", f)
			}
			if r.Intruder.Writes != 1 || r.Intruder.Conflicts != 0 {
				t.Errorf("intruder writes %+v, want its one delete", r.Intruder)
			}
			if lock == leaderelection.LockWatch {
				if !f.VictimStopped {
					t.Fatalf("fault %+v: the watch lock's leader never stepped down", f)
				}
				if f.Taken && f.Detection >= slowRetry {
					t.Errorf("the watch lock stepped down %s after another took the Lease, want within a retry period %s", f.Detection, slowRetry)
				}
			}
			assertTheftsAgree(t, r, f)
		})
	}
}

// TestSkewOnLocalControlPlane runs the last candidate with a 2s lease
// against the others' 3s, and stops the leader every 1.5s so that the
// skewed candidate competes with every other. Expiry is judged from the
// holder's recorded lease duration on the follower's own clock from when
// it saw the Lease change, by both locks: a leader that renews is never
// robbed, whatever the others' settings.
func TestSkewOnLocalControlPlane(t *testing.T) {
	for _, lock := range []string{leaderelection.LockClientGo, leaderelection.LockWatch} {
		t.Run(lock, func(t *testing.T) {
			set := faultSettings(lock, leaderelection.FaultSkew, map[string]any{"faultDuration": "2s", "failoverEvery": "1500ms"})
			set["leaseDuration"] = "3s"
			delete(set, "faultAt")
			r := runFault(t, set, 4*time.Second)
			if r.SkewedLeaseSeconds != 2 {
				t.Errorf("skewed lease %ds, want 2s", r.SkewedLeaseSeconds)
			}
			if len(r.Thefts) != 0 || len(r.Overlaps) != 0 {
				t.Errorf("thefts %+v, overlaps %+v: want none", r.Thefts, r.Overlaps)
			}
			if r.LeaderWrites.Deposed != 0 {
				t.Errorf("%d writes accepted from deposed leaders, want none", r.LeaderWrites.Deposed)
			}
		})
	}
}
