package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// fakeRole plays a role in the sequence without a cluster: each phase can
// interrupt the run or lose its target (cancel), or fail (err), and it
// records what the sequence asked of it.
type fakeRole struct {
	e       *engine
	cancel  context.CancelCauseFunc
	at      string // the phase that acts
	cause   error  // what it cancels with; nil: it fails with err
	err     error
	phases  []string
	window  window // what figures was given
	closeOn error  // what close was given
}

func (f *fakeRole) act(phase string) error {
	f.phases = append(f.phases, phase)
	if phase != f.at {
		return nil
	}
	if f.cause != nil {
		f.cancel(f.cause)
		return nil
	}
	return f.err
}

func (f *fakeRole) ready(context.Context) error {
	f.e.record(1)
	return f.act("ready")
}
func (f *fakeRole) warmup(context.Context) error { return f.act("warmup") }
func (f *fakeRole) open(context.Context) (time.Time, time.Time, error) {
	return time.Now(), time.Time{}, f.act("open")
}
func (f *fakeRole) load(ctx context.Context, start, _ time.Time) (time.Time, bool, error) {
	return time.Now(), false, f.act("load")
}
func (f *fakeRole) figures(_ context.Context, w window) (figures, error) {
	f.window = w
	return f.e.measure(w), f.act("figures")
}
func (f *fakeRole) close(_ context.Context, err error) error {
	f.closeOn = err
	return nil
}

// fakeScenario is a Driven scenario that makes no request and reports
// figures.
type fakeScenario struct {
	finished bool
	figures  fakeReport
}

// fakeReport is a report of figures and no checks.
type fakeReport []results.Figure

func (r fakeReport) Checks() []results.Check   { return nil }
func (r fakeReport) Figures() []results.Figure { return r }

func (s *fakeScenario) Setup(context.Context) error { return nil }
func (s *fakeScenario) Finish(context.Context) (scenario.Report, error) {
	s.finished = true
	return s.figures, nil
}
func (s *fakeScenario) Workers() int            { return 1 }
func (s *fakeScenario) Do(int, time.Time)       {}
func (fakeSettings) Default(*spec.Spec)         {}
func (fakeSettings) Describe(*spec.Spec) string { return "nothing" }
func (fakeSettings) Validate(*spec.Spec, *field.Path) field.ErrorList {
	return nil
}

type fakeSettings struct{}

// The sequence handles an interrupt, a lost target and a failure each in
// one place, whatever the role: an interrupt before the window finishes a
// result without one, an interrupt in the window keeps its figures, a
// lost target (its cause) ends the run with spec.ErrTargetLost, and a failure
// reaches the role's close, which aborts a distributed run.
func TestSequenceEndsRunsInOnePlace(t *testing.T) {
	failed := errors.New("a shard failed")
	lost := fmt.Errorf("%w: no answer for 3s", spec.ErrTargetLost)
	tests := []struct {
		name       string
		at         string
		cause, err error
		wantErr    error
		// wantWindow: figures got a window with its edges read.
		wantWindow, wantInterrupted, wantFinished bool
	}{
		{"ends well", "", nil, nil, nil, true, false, true},
		{"interrupted in the warm-up", "warmup", context.Canceled, nil, nil, false, true, true},
		{"interrupted in the window", "load", context.Canceled, nil, nil, true, true, true},
		{"target lost in the window", "load", lost, nil, spec.ErrTargetLost, true, false, true},
		{"a role's step fails", "open", nil, failed, failed, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, role, sc, ctx := fakeEngine(t, tt.at, tt.cause, tt.err)
			err := e.execute(ctx)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("execute = %v, want %v", err, tt.wantErr)
			}
			if !errors.Is(role.closeOn, tt.err) {
				t.Errorf("close got %v, want the sequence's failure %v", role.closeOn, tt.err)
			}
			if got := role.window.before != nil; got != tt.wantWindow && tt.wantErr != failed {
				t.Errorf("figures got a window with edges %t, want %t (phases %v)", got, tt.wantWindow, role.phases)
			}
			if e.result.Interrupted != tt.wantInterrupted || sc.finished != tt.wantFinished {
				t.Errorf("interrupted %t, checks made %t; want %t, %t (phases %v)", e.result.Interrupted, sc.finished, tt.wantInterrupted, tt.wantFinished, role.phases)
			}
			if lost := errors.Is(tt.wantErr, spec.ErrTargetLost); lost != (e.result.TargetLost != "") {
				t.Errorf("result says target lost %q, want %t", e.result.TargetLost, lost)
			}
			if tt.at == "warmup" && (e.result.Server == nil || e.result.Server.Available) {
				t.Errorf("a run without a window has no server cross-check to make: %+v", e.result.Server)
			}
		})
	}
}

// fakeEngine is an engine of fakeScenario in a fakeRole whose phase at
// cancels ctx with cause or fails with err.
func fakeEngine(t *testing.T, at string, cause, err error) (*engine, *fakeRole, *fakeScenario, context.Context) {
	t.Helper()
	sc := &fakeScenario{}
	def := scenario.Definition{Name: "fake", NewSettings: func() scenario.Settings { return fakeSettings{} },
		Driven: func(*scenario.Env, scenario.Settings) scenario.Driven { return sc }}
	s := spec.Spec{Scenario: "fake", Writers: 1, OpTimeout: spec.D(time.Second)}
	e, nerr := newEngine(&Resolved{Spec: s, Def: def, Settings: fakeSettings{}}, Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, RunID: "t"}, 1)
	if nerr != nil {
		t.Fatal(nerr)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	role := &fakeRole{e: e, cancel: cancel, at: at, cause: cause, err: err}
	e.role = role
	return e, role, sc, ctx
}

// The Result keeps the scenario's figures that validate; each one that
// does not (a bug in the scenario) is left out with a warning that names
// it, so the rest still reach the reader.
func TestFiguresThatDoNotValidateAreLeftOutWithAWarning(t *testing.T) {
	e, _, sc, ctx := fakeEngine(t, "", nil, nil)
	count := func(name string, v float64) results.Figure {
		return results.Figure{Name: name, Value: v, Unit: results.UnitCount, Help: "a count"}
	}
	sc.figures = fakeReport{count("admitted", 5), count("Rejected", 1), count("negative", -1), count("admitted", 6), count("conflicts", 0)}
	if err := e.execute(ctx); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, f := range e.result.Figures {
		kept = append(kept, fmt.Sprintf("%s=%g", f.Key(), f.Value))
	}
	if got, want := strings.Join(kept, " "), "admitted=5 conflicts=0"; got != want {
		t.Errorf("the result keeps figures %q, want %q", got, want)
	}
	for _, bad := range []string{"Rejected", "negative", "admitted"} {
		if !slices.ContainsFunc(e.result.Warnings, func(w string) bool { return strings.Contains(w, "figure "+bad+" is left out") }) {
			t.Errorf("no warning names the figure %s left out: %q", bad, e.result.Warnings)
		}
	}
	if err := e.result.Validate(); err != nil {
		t.Errorf("the result does not validate: %v", err)
	}
}
