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

	"github.com/kb-bench/kb-bench/internal/k8s"
	"github.com/kb-bench/kb-bench/metrics"
)

// CandidateEnv, set in a process's environment, makes the process a
// candidate process of a run with the pause fault (CandidateMain).
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

// event is one thing a candidate did, for the run to observe (observe): a
// candidate goroutine hands it over as is, a candidate process writes it
// as a line of JSON on its stdout. Candidate and run read the same clock.
type event struct {
	Kind  string `json:"kind"`
	Phase phase  `json:"phase,omitempty"`
	// A request's times (reads, writes, fenced writes) as its sender saw
	// them: when it started, when it left the client for the apiserver
	// (zero when not known), when its answer came; or when a leadership
	// began (Start) or ended (End).
	Start time.Time `json:"start,omitzero"`
	Sent  time.Time `json:"sent,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// A request's outcome (Success: it was accepted) and error.
	Outcome metrics.Outcome `json:"outcome,omitempty"`
	Err     string          `json:"err,omitempty"`
	// ID is the candidate's identity (or the intruder's); Holder the
	// holder a Lease write wrote.
	ID     string `json:"id,omitempty"`
	Holder string `json:"holder,omitempty"`
	// Token is the fencing token a fenced write carried: the
	// resourceVersion of the writer's last Lease write that named it
	// holder; RV the resourceVersion the apiserver gave it (0: it failed).
	Token uint64 `json:"token,omitempty"`
	RV    uint64 `json:"rv,omitempty"`
}

// The kinds of event.
const (
	evHello  = "hello" // the process started (before its configuration)
	evRead   = "read"  // a Lease read
	evWrite  = "write" // a Lease write
	evFenced = "fenced"
	evBegan  = "began" // a leadership: from the candidate's first belief that it leads
	evEnded  = "ended" // to the moment it stops believing
	evLost   = "lost"  // a candidate that led lost the Lease on its own
	evFailed = "failed"
)

// errOf is the error an event carries.
func (e *event) errOf() error {
	if e.Err == "" {
		return nil
	}
	return errors.New(e.Err)
}

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
	// client-go's leader election logs through klog: quiet, as in a run.
	ctx, stop := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer stop()
	// Each event goes out at once; when the run stops reading, the
	// candidate stops.
	var mu sync.Mutex
	enc, broken := json.NewEncoder(out), false
	send := func(e event) {
		mu.Lock()
		defer mu.Unlock()
		if !broken && enc.Encode(e) != nil {
			broken = true
			stop()
		}
	}
	send(event{Kind: evHello})
	dec := json.NewDecoder(in)
	c := &candidate{obs: send, ops: context.Background(), writers: &sync.WaitGroup{}}
	if err := dec.Decode(&c.candidateConfig); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // the run stopped before the campaign began
		}
		return fmt.Errorf("reading the candidate's configuration: %w", err)
	}
	go func() {
		_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), in))
		stop()
	}()
	rc := k8s.ClientConfig(&rest.Config{Host: c.Server}, c.Client, "")
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return fromProxy{rt} }
	var err error
	if c.client, err = kubernetes.NewForConfig(rc); err != nil {
		return fmt.Errorf("candidate %d: a client of the run's proxy %s: %w", c.Slot, c.Server, err)
	}
	c.campaign(ctx)
	c.writers.Wait()
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
			sent.Store(new(time.Unix(0, ns)))
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
		e.is = []error{k8s.ErrNotSent, context.DeadlineExceeded}
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
