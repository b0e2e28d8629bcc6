package leaderelection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

// CandidateEnv, set in a process's environment, makes the process a
// candidate of a leader-election run with the pause fault: kb-bench's main
// (and this package's tests) look for it first and then call RunCandidate
// instead of doing anything else.
const CandidateEnv = "KB_BENCH_LEADER_ELECTION_CANDIDATE"

// The headers between the run's proxy and its candidate processes.
const (
	// sentHeader is when the proxied request left the run's client for
	// the apiserver, in Unix nanoseconds.
	sentHeader = "Kb-Bench-Sent"
	// errorHeader marks a proxied request that got no answer from the
	// apiserver; it says why: not-sent, timeout or other.
	errorHeader = "Kb-Bench-Error"
)

// candidateConfig is what the run tells a candidate process on its stdin
// when the campaign starts.
type candidateConfig struct {
	Slot      int           `json:"slot"`
	Namespace string        `json:"namespace"`
	RunID     string        `json:"runID"`
	Settings  Settings      `json:"settings"`
	Lease     time.Duration `json:"lease"`
	Timeout   time.Duration `json:"timeout"`
	Client    spec.Client   `json:"client"`
	// Server is the run's proxy for the candidate's slot.
	Server string `json:"server"`
}

// event is one line of a candidate process's output: one thing the
// candidate did, for the run to observe. Times are Unix nanoseconds (0:
// none); candidate and run read the same clock.
type event struct {
	Kind     string          `json:"kind"`
	Phase    phase           `json:"phase,omitempty"`
	Start    int64           `json:"start,omitempty"`
	Sent     int64           `json:"sent,omitempty"`
	End      int64           `json:"end,omitempty"`
	At       int64           `json:"at,omitempty"`
	Outcome  metrics.Outcome `json:"outcome,omitempty"`
	Err      string          `json:"err,omitempty"`
	ID       string          `json:"id,omitempty"`
	Holder   string          `json:"holder,omitempty"`
	Token    uint64          `json:"token,omitempty"`
	RV       uint64          `json:"rv,omitempty"`
	OK       bool            `json:"ok,omitempty"`
	Conflict bool            `json:"conflict,omitempty"`
}

// The kinds of event.
const (
	evHello  = "hello" // the process started (before its configuration)
	evRead   = "read"
	evWrite  = "write"
	evFenced = "fenced"
	evBegan  = "began"
	evEnded  = "ended"
	evLost   = "lost"
	evFailed = "failed"
)

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func unixNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (e *event) setTimes(t sendTimes) {
	e.Start, e.Sent, e.End = nanos(t.start), nanos(t.sent), nanos(t.end)
}

func (e *event) times() sendTimes {
	return sendTimes{start: unixNanos(e.Start), sent: unixNanos(e.Sent), end: unixNanos(e.End)}
}

func (e *event) err() error {
	if e.Err == "" {
		return nil
	}
	return errors.New(e.Err)
}

// observe hands one event of slot's candidate process to the run.
func (r *run) observe(slot int, e *event) error {
	switch e.Kind {
	case evRead:
		r.leaseRead(slot, e.Phase, e.times(), e.Outcome)
	case evWrite:
		r.leaseWrite(slot, e.Phase, e.times(), e.Outcome, e.err(),
			leaseWrite{at: unixNanos(e.End), writer: e.ID, holder: e.Holder, ok: e.OK, conflict: e.Conflict})
	case evFenced:
		r.fencedWrite(slot, e.times(), e.Outcome, e.err(), fencedWrite{id: e.ID, token: e.Token, rv: e.RV, ok: e.OK})
	case evBegan:
		r.began(slot, e.ID, unixNanos(e.At))
	case evEnded:
		r.ended(slot, unixNanos(e.At))
	case evLost:
		r.lost(slot)
	case evFailed:
		r.failed(e.err())
	default:
		return fmt.Errorf("unknown event %q", e.Kind)
	}
	return nil
}

// wire is a candidate process's observer: it writes each event as a line
// of JSON, at once, for the run to read. When the run stops reading, the
// candidate stops.
type wire struct {
	mu   sync.Mutex
	enc  *json.Encoder
	err  error
	stop context.CancelFunc
}

var _ observer = (*wire)(nil)

func (w *wire) send(e event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if w.err = w.enc.Encode(e); w.err != nil && w.stop != nil {
		w.stop()
	}
}

func (w *wire) leaseRead(_ int, p phase, t sendTimes, out metrics.Outcome) {
	e := event{Kind: evRead, Phase: p, Outcome: out}
	e.setTimes(t)
	w.send(e)
}

func (w *wire) leaseWrite(_ int, p phase, t sendTimes, out metrics.Outcome, err error, lw leaseWrite) {
	e := event{Kind: evWrite, Phase: p, Outcome: out, Err: errText(err), ID: lw.writer, Holder: lw.holder, OK: lw.ok, Conflict: lw.conflict}
	e.setTimes(t)
	w.send(e)
}

func (w *wire) fencedWrite(_ int, t sendTimes, out metrics.Outcome, err error, fw fencedWrite) {
	e := event{Kind: evFenced, Outcome: out, Err: errText(err), ID: fw.id, Token: fw.token, RV: fw.rv, OK: fw.ok}
	e.setTimes(t)
	w.send(e)
}

func (w *wire) began(_ int, id string, at time.Time) {
	w.send(event{Kind: evBegan, ID: id, At: nanos(at)})
}

func (w *wire) ended(_ int, at time.Time) { w.send(event{Kind: evEnded, At: nanos(at)}) }

func (w *wire) lost(int) { w.send(event{Kind: evLost}) }

func (w *wire) failed(err error) { w.send(event{Kind: evFailed, Err: errText(err)}) }

// CandidateMain runs this process as a candidate process when CandidateEnv
// is set, on its stdin and stdout, and returns its exit status; it reports
// false when the process is not a candidate.
func CandidateMain() (status int, isCandidate bool) {
	if os.Getenv(CandidateEnv) == "" {
		return 0, false
	}
	if err := RunCandidate(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "kb-bench leader-election candidate: %v\n", err)
		return 1, true
	}
	return 0, true
}

// RunCandidate is a candidate process of a run with the pause fault (see
// CandidateEnv): it says hello on out, reads its configuration from in,
// campaigns for the Lease through the run's proxy, writing each thing it
// does on out as a line of JSON, and returns once in ends (the run's stop:
// a leader that releases on cancel releases first).
func RunCandidate(in io.Reader, out io.Writer) error {
	w := &wire{enc: json.NewEncoder(out)}
	w.send(event{Kind: evHello})
	dec := json.NewDecoder(in)
	var cfg candidateConfig
	if err := dec.Decode(&cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // the run stopped before the campaign began
		}
		return fmt.Errorf("reading the candidate's configuration: %w", err)
	}
	// client-go's leader election logs through klog: quiet, as in a run.
	ctx, stop := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer stop()
	w.mu.Lock()
	w.stop = stop
	w.mu.Unlock()
	go func() {
		_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), in))
		stop()
	}()
	rc := scenario.ClientConfig(&rest.Config{Host: cfg.Server}, cfg.Client, "")
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return fromProxy{rt} }
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("candidate %d: a client of the run's proxy %s: %w", cfg.Slot, cfg.Server, err)
	}
	var writers sync.WaitGroup
	c := &candidate{
		slot: cfg.Slot, set: &cfg.Settings, lease: cfg.Lease,
		client: client, namespace: cfg.Namespace, runID: cfg.RunID,
		timeout: cfg.Timeout, ops: context.Background(), obs: w, writers: &writers,
	}
	c.campaign(ctx)
	writers.Wait()
	return nil
}

// fromProxy gives a candidate process's requests back what the run's
// proxy says of them: when they left the run's client (for the recorder's
// window), and, when the apiserver did not answer, the error the run's
// client met, so that a request held at a window's edge until its
// deadline is never sent, and a timeout a timeout, as in one process.
type fromProxy struct{ next http.RoundTripper }

func (p fromProxy) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if ns, perr := strconv.ParseInt(resp.Header.Get(sentHeader), 10, 64); perr == nil && ns > 0 {
		if sent, ok := req.Context().Value(sentKey{}).(*atomic.Pointer[time.Time]); ok {
			t := time.Unix(0, ns)
			sent.Store(&t)
		}
	}
	kind := resp.Header.Get(errorHeader)
	if kind == "" {
		return resp, nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	e := &proxiedError{msg: string(msg)}
	switch kind {
	case "not-sent":
		e.is = []error{scenario.ErrNotSent, context.DeadlineExceeded}
	case "timeout":
		e.is = []error{context.DeadlineExceeded}
	}
	return nil, e
}

// proxiedError is the error the run's client met for a candidate
// process's request.
type proxiedError struct {
	msg string
	is  []error
}

func (e *proxiedError) Error() string   { return e.msg }
func (e *proxiedError) Unwrap() []error { return e.is }
