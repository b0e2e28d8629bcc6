package workload

import (
	"context"
	"testing"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// figure is the run's figure of key; the test fails when it is missing.
func figure(t *testing.T, res *results.Result, key string) float64 {
	t.Helper()
	f, ok := res.FigureNamed(key)
	if !ok {
		t.Fatalf("no figure %s among %d", key, len(res.Figures))
	}
	return f.Value
}

// Every 409 has one cause, and the causes add up to the 409s: a live GET
// is never stale; one writer reading its informer conflicts only with
// itself, every 409 a stale read (Kubernetes issue 16134); informer
// writers and plain watchers report watch delay, and the server check
// still matches (their watches are outside it, their lists inside).
func TestReadSourcesTellEvery409ByItsCause(t *testing.T) {
	cfg := local.Config(t)
	ctx := context.Background()
	tests := []struct {
		name                string
		s                   spec.Spec
		staleZero, overZero bool
		watchers            []string
	}{
		{"get: never stale", spec.Spec{Writers: 8, Read: spec.ReadGet}, true, false, nil},
		{"informer, one writer: every 409 is stale", spec.Spec{Writers: 1, Read: spec.ReadInformer}, false, true, []string{"informer"}},
		{"informer and watchers", spec.Spec{Writers: 8, Read: spec.ReadInformer, Watchers: 3, Clients: 2}, false, false, []string{"informer", "plain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Duration = spec.D(short)
			res := runOn(ctx, t, cfg, tt.s)
			conflicts := count(res.Measurements.WriteOutcomes, metrics.VersionConflict)
			stale, over := figure(t, res, `conflictsByCause{cause="staleRead"}`), figure(t, res, `conflictsByCause{cause="overtaken"}`)
			t.Logf("%d 409s: %g stale at read, %g overtaken", conflicts, stale, over)
			if conflicts == 0 {
				t.Fatalf("no 409s to classify")
			}
			if int64(stale+over) != conflicts {
				t.Errorf("stale %g + overtaken %g = %g, want the %d 409s", stale, over, stale+over, conflicts)
			}
			if (stale == 0) != tt.staleZero || (over == 0) != tt.overZero {
				t.Errorf("stale %g, overtaken %g: want stale zero %v, overtaken zero %v", stale, over, tt.staleZero, tt.overZero)
			}
			for _, w := range tt.watchers {
				timed := figure(t, res, `watchEventsTimed{watcher="`+w+`"}`)
				missed := figure(t, res, `watchEventsMissed{watcher="`+w+`"}`)
				p99 := figure(t, res, `watchDelay{quantile="0.99",watcher="`+w+`"}`)
				t.Logf("%s watchers: %g timed, %g missed, p99 %s", w, timed, missed, results.UnitDuration.Format(p99))
				if timed == 0 || missed != 0 {
					t.Errorf("%s watchers timed %g writes and missed %g: want every write seen", w, timed, missed)
				}
			}
			assertNoLostUpdates(t, res)
			assertServerMatch(t, res)
		})
	}
}
