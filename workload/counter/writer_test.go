package counter

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// Each strategy sends the write the Kubernetes semantics call for.
func TestStrategiesSendTheRightWrite(t *testing.T) {
	tests := []struct {
		name        string
		spec        spec.Spec
		set         Settings
		method      string
		contentType string
		body        []string // substrings the body must hold
		notBody     []string // substrings it must not hold
		query       url.Values
	}{
		{
			name:   "update carries the read resourceVersion",
			spec:   spec.Spec{Strategy: spec.StrategyUpdate},
			method: http.MethodPut, contentType: "application/json",
			body: []string{`"resourceVersion":"100"`, `"counter":"6"`, `"filler":"xyz"`},
		},
		{
			name:   "unconditional update clears it",
			spec:   spec.Spec{Strategy: spec.StrategyUpdate, Unconditional: true},
			method: http.MethodPut, contentType: "application/json",
			body: []string{`"counter":"6"`}, notBody: []string{`resourceVersion`},
		},
		{
			name:   "merge patch sends only the field",
			spec:   spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchMerge},
			method: http.MethodPatch, contentType: "application/merge-patch+json",
			body: []string{`{"data":{"counter":"6"}}`},
		},
		{
			name:   "strategic merge patch",
			spec:   spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchStrategic},
			method: http.MethodPatch, contentType: "application/strategic-merge-patch+json",
			body: []string{`{"data":{"counter":"6"}}`},
		},
		{
			name:   "patch precondition adds the resourceVersion",
			spec:   spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchMerge, PatchPrecondition: true},
			method: http.MethodPatch, contentType: "application/merge-patch+json",
			body: []string{`{"metadata":{"resourceVersion":"100"},"data":{"counter":"6"}}`},
		},
		{
			name:   "json patch is test then replace",
			spec:   spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchJSON},
			method: http.MethodPatch, contentType: "application/json-patch+json",
			body: []string{`[{"op":"test","path":"/data/counter","value":"5"},{"op":"replace","path":"/data/counter","value":"6"}]`},
		},
		{
			name:   "apply with a per-writer manager",
			spec:   spec.Spec{Strategy: spec.StrategySSA, FieldManager: spec.ManagerPerWriter},
			method: http.MethodPatch, contentType: "application/apply-patch+yaml",
			body:  []string{`"counter":"6"`, `"name":"kb-bench-0"`, `"namespace":"kb-bench-test"`},
			query: url.Values{"fieldManager": {"kb-bench-w0"}},
		},
		{
			name:   "apply with the shared manager and force",
			spec:   spec.Spec{Strategy: spec.StrategySSA, FieldManager: spec.ManagerShared, Force: true},
			method: http.MethodPatch, contentType: "application/apply-patch+yaml",
			body:  []string{`"counter":"6"`},
			query: url.Values{"fieldManager": {"kb-bench"}, "force": {"true"}},
		},
		{
			name:   "disjoint fields write the writer's own",
			spec:   spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchMerge},
			set:    Settings{Fields: FieldsDisjoint},
			method: http.MethodPatch, contentType: "application/merge-patch+json",
			body: []string{`{"data":{"w-0":"3"}}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{
				get:   cannedConfigMap(t, "kb-bench-0", "100", map[string]string{"counter": "5", "w-0": "2", "filler": "xyz"}),
				write: always(http.StatusOK, cannedConfigMap(t, "kb-bench-0", "101", map[string]string{"counter": "6"})),
			}
			tt.spec.Writers = 1
			c, rec := fakeRun(t, tt.spec, tt.set, f, nil)
			c.writers[0].do(time.Now())
			w := f.writes()
			if len(w) != 1 {
				t.Fatalf("sent %d writes, want 1", len(w))
			}
			got := w[0]
			if got.method != tt.method || got.contentType != tt.contentType {
				t.Errorf("sent %s %s, want %s %s", got.method, got.contentType, tt.method, tt.contentType)
			}
			if got.path != "/api/v1/namespaces/kb-bench-test/configmaps/kb-bench-0" {
				t.Errorf("wrote to %s", got.path)
			}
			for _, s := range tt.body {
				if !strings.Contains(string(got.body), s) {
					t.Errorf("body %s does not hold %s", got.body, s)
				}
			}
			for _, s := range tt.notBody {
				if strings.Contains(string(got.body), s) {
					t.Errorf("body %s holds %s", got.body, s)
				}
			}
			q, _ := url.ParseQuery(got.query)
			for k, v := range tt.query {
				if q.Get(k) != v[0] {
					t.Errorf("query %s=%q, want %q", k, q.Get(k), v[0])
				}
			}
			snap := rec.Snapshot(time.Now())
			if snap.Ops != 1 || snap.Outcomes[metrics.Success] != 1 {
				t.Errorf("recorded %d ops, %d successes; want 1, 1", snap.Ops, snap.Outcomes[metrics.Success])
			}
			if snap.AttemptOutcomes[metrics.Read][metrics.Success] != 1 || snap.AttemptOutcomes[metrics.Write][metrics.Success] != 1 {
				t.Errorf("attempts recorded %v, want one read and one write", snap.AttemptOutcomes)
			}
		})
	}
}

// Each answer lands in its outcome class and in the right correctness tally.
func TestWriteOutcomes(t *testing.T) {
	fmConflict := metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: "conflict with kb-bench-w1", Field: ".data.counter"}
	tests := []struct {
		name          string
		spec          spec.Spec
		code          int
		reason        metav1.StatusReason
		causes        []metav1.StatusCause
		want          metrics.Outcome
		wantSuccesses int64
		wantUncertain int64
	}{
		{"version conflict", spec.Spec{Strategy: spec.StrategyUpdate}, 409, metav1.StatusReasonConflict, nil, metrics.VersionConflict, 0, 0},
		{"field manager conflict", spec.Spec{Strategy: spec.StrategySSA}, 409, metav1.StatusReasonConflict, []metav1.StatusCause{fmConflict}, metrics.FieldManagerConflict, 0, 0},
		{"json patch test failed", spec.Spec{Strategy: spec.StrategyPatch, PatchType: spec.PatchJSON}, 422, metav1.StatusReasonInvalid, nil, metrics.FailedPrecondition, 0, 0},
		{"throttled is certain", spec.Spec{Strategy: spec.StrategyUpdate}, 429, metav1.StatusReasonTooManyRequests, nil, metrics.Throttled, 0, 0},
		{"server timeout may have landed", spec.Spec{Strategy: spec.StrategyUpdate}, 504, metav1.StatusReasonTimeout, nil, metrics.Timeout, 0, 1},
		{"5xx may have landed", spec.Spec{Strategy: spec.StrategyUpdate}, 500, metav1.StatusReasonInternalError, nil, metrics.ServerError, 0, 1},
		{"success", spec.Spec{Strategy: spec.StrategyUpdate}, 200, "", nil, metrics.Success, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := cannedConfigMap(t, "kb-bench-0", "101", map[string]string{"counter": "6"})
			if tt.code != 200 {
				answer = statusBody(t, int32(tt.code), tt.reason, tt.causes...)
			}
			f := &fakeAPI{get: cannedConfigMap(t, "kb-bench-0", "100", map[string]string{"counter": "5"}), write: always(tt.code, answer)}
			tt.spec.Writers = 1
			// client-go retries a 5xx carrying Retry-After; these answers
			// carry none, so each is one request.
			c, rec := fakeRun(t, tt.spec, Settings{}, f, nil)
			c.writers[0].do(time.Now())
			snap := rec.Snapshot(time.Now())
			if snap.Outcomes[tt.want] != 1 {
				t.Errorf("outcomes %v, want one %s", snap.Outcomes, tt.want)
			}
			if snap.AttemptOutcomes[metrics.Write][tt.want] != 1 {
				t.Errorf("write attempt outcomes %v, want one %s", snap.AttemptOutcomes[metrics.Write], tt.want)
			}
			tally := &c.shared[0]
			if tally.successes.Load() != tt.wantSuccesses || tally.uncertain.Load() != tt.wantUncertain {
				t.Errorf("tally successes=%d uncertain=%d, want %d, %d", tally.successes.Load(), tally.uncertain.Load(), tt.wantSuccesses, tt.wantUncertain)
			}
		})
	}
}

// RetryOnConflict does not report attempts: the writer counts each one,
// the time slept between them, and an operation that ran out of steps.
func TestRetryCountsAttemptsAndBackoff(t *testing.T) {
	conflict := statusBody(t, 409, metav1.StatusReasonConflict)
	tests := []struct {
		name         string
		backoff      string
		conflicts    int // writes answered 409 before one succeeds
		wantAttempts int
		wantGaveUp   bool
		wantOutcome  metrics.Outcome
		minBackoff   time.Duration
	}{
		{"succeeds on the third attempt", "5,2ms,1,0", 2, 3, false, metrics.Success, 4 * time.Millisecond},
		{"runs out of steps", "4,1ms,2,0", 100, 4, true, metrics.VersionConflict, 7 * time.Millisecond},
		{"first attempt, no backoff", "5,2ms,1,0", 0, 1, false, metrics.Success, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := cannedConfigMap(t, "kb-bench-0", "101", map[string]string{"counter": "6"})
			f := &fakeAPI{
				get: cannedConfigMap(t, "kb-bench-0", "100", map[string]string{"counter": "5"}),
				write: func(n int) (int, []byte) {
					if n < tt.conflicts {
						return 409, conflict
					}
					return 200, ok
				},
			}
			b, err := spec.ParseBackoff(tt.backoff)
			if err != nil {
				t.Fatal(err)
			}
			c, rec := fakeRun(t, spec.Spec{Writers: 1, Strategy: spec.StrategyRetry, Backoff: &b}, Settings{}, f, nil)
			c.writers[0].do(time.Now())
			snap := rec.Snapshot(time.Now())
			if len(snap.Attempts) <= tt.wantAttempts || snap.Attempts[tt.wantAttempts] != 1 {
				t.Errorf("attempts distribution %v, want one op with %d attempts", snap.Attempts, tt.wantAttempts)
			}
			if got := snap.GaveUp == 1; got != tt.wantGaveUp {
				t.Errorf("gave up = %v, want %v", got, tt.wantGaveUp)
			}
			if snap.Outcomes[tt.wantOutcome] != 1 {
				t.Errorf("outcomes %v, want %s", snap.Outcomes, tt.wantOutcome)
			}
			if got := snap.AttemptOutcomes[metrics.Read][metrics.Success]; got != int64(tt.wantAttempts) {
				t.Errorf("%d reads, want one per attempt (%d)", got, tt.wantAttempts)
			}
			if tt.minBackoff > 0 {
				if snap.Backoff.TotalCount() != 1 || time.Duration(snap.Backoff.Max())*time.Microsecond < tt.minBackoff {
					t.Errorf("backoff recorded max %dµs over %d ops, want at least %v", snap.Backoff.Max(), snap.Backoff.TotalCount(), tt.minBackoff)
				}
			} else if snap.Backoff.TotalCount() != 0 {
				t.Errorf("backoff recorded for an operation that did not retry")
			}
		})
	}
}

// A counter that holds something other than a number is reported, not
// silently reset.
func TestCorruptCounterIsAnError(t *testing.T) {
	f := &fakeAPI{get: cannedConfigMap(t, "kb-bench-0", "100", map[string]string{"counter": "five"}), write: always(200, nil)}
	c, rec := fakeRun(t, spec.Spec{Writers: 1}, Settings{}, f, nil)
	c.writers[0].do(time.Now())
	snap := rec.Snapshot(time.Now())
	if snap.Outcomes[metrics.Other] != 1 || len(snap.Errors) != 1 || !strings.Contains(snap.Errors[0], "not a number") {
		t.Errorf("outcomes %v errors %q, want one other outcome saying the counter is not a number", snap.Outcomes, snap.Errors)
	}
	if len(f.writes()) != 0 {
		t.Errorf("wrote over a corrupt counter")
	}
}

// A write the client-side rate limiter holds back past the operation's
// deadline never leaves the client: the operation timed out, but the write
// is certain not to have landed.
func TestWriteHeldBackByTheRateLimiter(t *testing.T) {
	f := &fakeAPI{get: cannedConfigMap(t, "kb-bench-0", "100", map[string]string{"counter": "5"}), write: always(200, nil)}
	// One token: the read takes it; the write is held back as the
	// engine's limiter holds one back past its deadline.
	c, rec := fakeRun(t, spec.Spec{Writers: 1}, Settings{}, f, &oneToken{})
	c.writers[0].do(time.Now())
	snap := rec.Snapshot(time.Now())
	if len(f.writes()) != 0 {
		t.Fatalf("the write was sent: the limiter did not hold it back")
	}
	if snap.Outcomes[metrics.Timeout] != 1 || snap.AttemptOutcomes[metrics.Write][metrics.Timeout] != 1 {
		t.Errorf("outcomes %v, write attempts %v, want one timeout", snap.Outcomes, snap.AttemptOutcomes[metrics.Write])
	}
	if u := c.shared[0].uncertain.Load(); u != 0 {
		t.Errorf("%d uncertain writes, want 0: a write that was never sent cannot have landed", u)
	}
}

// oneToken is a rate limiter with one token, that then refuses as the
// engine's limiter does when no token comes before the deadline.
type oneToken struct{ used bool }

func (l *oneToken) Wait(context.Context) error {
	if !l.used {
		l.used = true
		return nil
	}
	return fmt.Errorf("%w: %w", k8s.ErrNotSent, context.DeadlineExceeded)
}
func (l *oneToken) TryAccept() bool { return false }
func (l *oneToken) Accept()         {}
func (l *oneToken) Stop()           {}
func (l *oneToken) QPS() float32    { return 1 }
