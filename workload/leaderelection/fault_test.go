package leaderelection

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

func TestPartitionGate(t *testing.T) {
	var nilGate *partition
	if err := nilGate.wait(t.Context()); err != nil {
		t.Errorf("a nil partition held a request: %v", err)
	}
	p := &partition{}
	if err := p.wait(t.Context()); err != nil {
		t.Errorf("an unpartitioned slot held a request: %v", err)
	}
	heal := p.cut()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a request whose context ended while partitioned: %v, want context.Canceled", err)
	}
	released := make(chan error)
	go func() { released <- p.wait(t.Context()) }()
	heal()
	if err := <-released; err != nil {
		t.Errorf("a held request failed at the heal: %v", err)
	}
	heal() // healing twice is harmless
	if err := p.wait(t.Context()); err != nil {
		t.Errorf("a healed slot held a request: %v", err)
	}
}

func TestCoverage(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ms := time.Millisecond
	tests := []struct {
		name                string
		ls                  []leadership
		from, to            int
		leaderless, overlap time.Duration
	}{
		{"nobody", nil, 0, 100, 100 * ms, 0},
		{"one throughout", []leadership{{"a", at(0), at(200)}}, 50, 100, 0, 0},
		{"gap", []leadership{{"a", at(0), at(30)}, {"b", at(70), time.Time{}}}, 0, 100, 40 * ms, 0},
		{"overlap", []leadership{{"a", at(0), at(60)}, {"b", at(40), time.Time{}}}, 0, 100, 0, 20 * ms},
		{"touching is neither", []leadership{{"a", at(0), at(50)}, {"b", at(50), at(100)}}, 0, 100, 0, 0},
		{"window cuts spans", []leadership{{"a", at(0), at(60)}, {"b", at(40), at(80)}}, 50, 90, 10 * ms, 10 * ms},
		{"before the window", []leadership{{"a", at(0), at(10)}}, 20, 40, 20 * ms, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			none, two := coverage(tt.ls, at(tt.from), at(tt.to))
			if none != tt.leaderless || two != tt.overlap {
				t.Errorf("coverage = leaderless %s, overlap %s; want %s, %s", none, two, tt.leaderless, tt.overlap)
			}
		})
	}
}

func TestThefts(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ls := []leadership{
		{"a", at(0), at(500)},   // b takes over at 300, a steps down at 500
		{"b", at(300), at(900)}, // c starts at 900: a clean handover
		{"c", at(900), time.Time{}},
		{"d", at(1000), time.Time{}}, // d takes over; c never steps down
	}
	got := thefts(ls, base, at(1200))
	want := []Theft{
		{At: 300 * time.Millisecond, Victim: "a", Thief: "b", Detection: 200 * time.Millisecond},
		{At: time.Second, Victim: "c", Thief: "d", Detection: 200 * time.Millisecond, Ongoing: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("thefts = %+v, want %+v", got, want)
	}
}

func TestFencing(t *testing.T) {
	history := []leaseEvent{
		{rv: 10, holder: "a"},
		{rv: 12, holder: "a"}, // a renews
		{rv: 20, holder: "b"}, // b takes over
		{rv: 22, holder: "b"},
		{rv: 30, deleted: true}, // someone deletes it
		{rv: 31, holder: "b"},   // b re-creates it
	}
	tests := []struct {
		name             string
		w                event
		deposed, refused bool
	}{
		{"leader's own write", event{ID: "a", Token: 10, RV: 11}, false, false},
		{"after its renewal", event{ID: "a", Token: 12, RV: 15}, false, false},
		{"after the takeover", event{ID: "a", Token: 12, RV: 21}, true, true},
		{"new leader's write", event{ID: "b", Token: 22, RV: 25}, false, false},
		{"while deleted", event{ID: "b", Token: 22, RV: 30}, false, false},
		{"after the delete", event{ID: "b", Token: 22, RV: 31}, true, true},
		{"on the re-created Lease, old token", event{ID: "b", Token: 22, RV: 40}, false, true},
		{"on the re-created Lease, new token", event{ID: "b", Token: 31, RV: 40}, false, false},
		{"before any Lease", event{ID: "a", Token: 0, RV: 5}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deposed, refused := fencing(history, tt.w)
			if deposed != tt.deposed || refused != tt.refused {
				t.Errorf("fencing = deposed %t, refused %t; want %t, %t", deposed, refused, tt.deposed, tt.refused)
			}
		})
	}
}

func TestFaultReports(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ms := time.Millisecond
	ls := []leadership{
		{"a", at(0), at(2100)},
		{"b", at(2000), at(5000)},
		{"c", at(5200), time.Time{}},
	}
	faults := []faultEvent{
		{kind: FaultPartition, at: at(1000), victim: "a", healed: at(4000)},
		{kind: FaultEdit, at: at(4500), victim: "b"},
	}
	log := []event{
		{End: at(900), ID: "a", Holder: "a", Outcome: metrics.Success},
		{End: at(1500), ID: "c", Holder: "c", Outcome: metrics.VersionConflict},
		{End: at(2000), ID: "b", Holder: "b", Outcome: metrics.Success},
		{End: at(4500), ID: Intruder, Holder: Intruder, Outcome: metrics.Success},
		{End: at(5200), ID: "c", Holder: "c", Outcome: metrics.Success},
	}
	fenced := []classified{
		{id: "a", end: at(1900)},
		{id: "a", end: at(2050), deposed: true, refused: true},
		{id: "a", end: at(4100), deposed: true, refused: true}, // held by the partition
		{id: "b", end: at(4400)},
		{id: "b", end: at(4700), deposed: true, refused: true},
		{id: "a", end: at(4600), deposed: true, refused: true}, // not in a's window
	}
	got := faultReports(faults, ls, log, fenced, base, at(6000))
	want := []FaultReport{
		{Kind: FaultPartition, At: time.Second, Victim: "a", Duration: 3 * time.Second,
			Taken: true, TakenBy: "b", TakenAfter: time.Second, NextHolder: "b", NextHolderAfter: time.Second,
			VictimStopped: true, StoppedAfter: 1100 * ms, Detection: 100 * ms,
			Overlap: 100 * ms, LeaseWrites: 2, LeaseConflicts: 1, DeposedWrites: 2, WouldBeFenced: 2},
		{Kind: FaultEdit, At: 4500 * ms, Victim: "b",
			Taken: true, TakenBy: Intruder, NextHolder: Intruder,
			VictimStopped: true, StoppedAfter: 500 * ms, Detection: 500 * ms,
			Leaderless: 200 * ms, LeaseWrites: 2, DeposedWrites: 1, WouldBeFenced: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("faultReports =\n%+v\nwant\n%+v", got, want)
	}

	// A victim that steps down only after the next fault did not step
	// down in its own window: it went on believing to the window's end.
	faults[1].at = at(1500)
	got = faultReports(faults[:2], ls, log, nil, base, at(6000))
	if f := got[0]; f.VictimStopped || f.Taken {
		t.Errorf("first fault %+v, want the victim still leading and the Lease not taken in its window", f)
	}
}

func TestSettingsValidateFaults(t *testing.T) {
	base := func(fault string, d, at, every time.Duration) Settings {
		s := Settings{LeaseDuration: spec.D(2 * time.Second), RenewDeadline: spec.D(time.Second), RetryPeriod: spec.D(200 * time.Millisecond),
			Fault: fault, FaultDuration: spec.D(d), FaultAt: spec.D(at), FailoverEvery: spec.D(every)}
		s.Default(&spec.Spec{})
		return s
	}
	tests := []struct {
		name    string
		set     Settings
		writers int
		// field and message parts of the one error; "" for none.
		field, says string
	}{
		{"partition", base(FaultPartition, 3*time.Second, time.Second, 0), 3, "", ""},
		{"repeated partition", base(FaultPartition, 3*time.Second, 0, 5*time.Second), 3, "", ""},
		{"partition within the lease", base(FaultPartition, 2*time.Second, time.Second, 0), 3, "settings.faultDuration", "use at least 2.2s"},
		{"partitions overlapping", base(FaultPartition, 3*time.Second, 0, 3*time.Second), 3, "settings.failoverEvery", "--fault-duration"},
		{"fault without a time", base(FaultEdit, 0, 0, 0), 3, "settings.faultAt", "--failover-every"},
		{"edit with a duration", base(FaultEdit, time.Second, time.Second, 0), 3, "settings.faultDuration", "instantaneous"},
		{"delete", base(FaultDelete, 0, time.Second, 0), 3, "", ""},
		{"delete alone", base(FaultDelete, 0, time.Second, 0), 1, "writers", "--writers"},
		{"skew", func() Settings {
			s := base(FaultSkew, time.Second, 0, 0)
			s.LeaseDuration, s.RenewDeadline = spec.D(3*time.Second), spec.D(500*time.Millisecond)
			return s
		}(), 3, "", ""},
		{"skew not shorter", base(FaultSkew, 2*time.Second, 0, 0), 3, "settings.faultDuration", "shorter than the others'"},
		{"skew within the renew deadline", base(FaultSkew, time.Second, 0, 0), 3, "settings.faultDuration", "--renew-deadline"},
		{"pause", base(FaultPause, 3*time.Second, time.Second, 0), 3, "", ""},
		{"pause within the lease", base(FaultPause, time.Second, time.Second, 0), 3, "settings.faultDuration", "a pause must outlast the lease"},
		{"pauses overlapping", base(FaultPause, 3*time.Second, 0, 2*time.Second), 3, "settings.failoverEvery", "a pause repeats only"},
		{"unknown fault", base("crash", 0, time.Second, 0), 3, "settings.fault", "partition"},
		{"duration without a fault", base("", time.Second, 0, 0), 3, "settings.fault", "--fault"},
		{"unknown lock", func() Settings { s := base("", 0, 0, 0); s.Lock = "etcd"; return s }(), 3, "settings.lock", "watch"},
		{"negative leader writes", func() Settings { s := base("", 0, 0, 0); s.LeaderWrites = spec.D(-time.Second); return s }(), 3, "settings.leaderWrites", "--leader-writes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOneError(t, tt.set.Validate(&spec.Spec{Writers: tt.writers}, field.NewPath("settings")), tt.field, tt.says)
		})
	}
}

func TestFaultDefaults(t *testing.T) {
	s := Settings{Fault: FaultEdit}
	s.Default(&spec.Spec{})
	if s.LeaderWrites.Duration != 100*time.Millisecond || s.Lock != LockClientGo {
		t.Errorf("defaults with a fault: leader writes %s, lock %q; want 100ms, client-go", s.LeaderWrites, s.Lock)
	}
	s = Settings{}
	s.Default(&spec.Spec{})
	if s.LeaderWrites.Duration != 0 {
		t.Errorf("leader writes %s without a fault, want none", s.LeaderWrites)
	}
}

func TestFaultChecks(t *testing.T) {
	r := Report{Fault: FaultPartition, Overlaps: []Overlap{{Duration: time.Second}}, LeaderWrites: &LeaderWrites{Deposed: 2, WouldBeFenced: 3}}
	checks := r.Checks()
	if len(checks) != 1 || checks[0].Name != CheckFencing || !checks[0].Passed {
		t.Errorf("checks under a fault %+v, want only the fencing one, passed (overlap is expected)", checks)
	}
	r.LeaderWrites.Unfenced = 1
	if checks := r.Checks(); checks[0].Passed || !strings.Contains(checks[0].Detail, "1 of the 2") {
		t.Errorf("checks %+v, want the fencing one failed", checks)
	}
	r = Report{LeaderWrites: &LeaderWrites{Unclassified: true}}
	if checks := r.Checks(); len(checks) != 1 || checks[0].Name != CheckOneLeader {
		t.Errorf("checks %+v, want only the one-leader check when writes could not be told apart", checks)
	}
}

// A fault asked for too late to be seen is refused up front: the run
// would skip it (failoverLoop) and report no injection.
func TestSettingsValidateFaultFitsTheWindow(t *testing.T) {
	set := Settings{Fault: FaultPause, FaultAt: spec.D(2 * time.Second), FaultDuration: spec.D(5 * time.Second)}
	set.Default(&spec.Spec{})
	for _, tt := range []struct {
		window      time.Duration
		field, says string
	}{
		{11 * time.Second, "", ""},
		{10 * time.Second, "settings.faultAt", "use --duration 11s or more"},
	} {
		s := &spec.Spec{Writers: 3, Duration: spec.D(tt.window)}
		wantOneError(t, set.Validate(s, field.NewPath("settings")), tt.field, tt.says)
	}
}
