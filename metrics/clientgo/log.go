package clientgo

import (
	"fmt"
	"sort"
	"sync"

	"github.com/go-logr/logr"
)

// maxLogMessages bounds the distinct messages a Log keeps between drains.
const maxLogMessages = 20

// Log collects what client-go logs through klog (errors and V(0) lines,
// such as "Unexpected error when reading response body"), deduplicated
// with a count each, so that they become a run's warnings instead of raw
// lines on stderr between kb-bench's own. Install it with
// klog.SetLogger(logr.New(log)).
type Log struct {
	mu      sync.Mutex
	counts  map[string]int
	order   []string
	dropped int
}

var _ logr.LogSink = (*Log)(nil)

// NewLog returns an empty Log.
func NewLog() *Log { return &Log{counts: map[string]int{}} }

// Drain returns what was logged since the last drain, one line per
// distinct message with its count, and forgets it.
func (l *Log) Drain() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, msg := range l.order {
		line := "client-go logged: " + msg
		if n := l.counts[msg]; n > 1 {
			line = fmt.Sprintf("client-go logged %d times: %s", n, msg)
		}
		out = append(out, line)
	}
	if l.dropped > 0 {
		out = append(out, fmt.Sprintf("client-go logged %d more lines (other messages)", l.dropped))
	}
	l.counts, l.order, l.dropped = map[string]int{}, nil, 0
	return out
}

func (l *Log) add(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, seen := l.counts[msg]; !seen {
		if len(l.order) >= maxLogMessages {
			l.dropped++
			return
		}
		l.order = append(l.order, msg)
	}
	l.counts[msg]++
}

// withValues formats a message with its key/value pairs, sorted by key.
func withValues(msg string, kv []any) string {
	type pair struct{ k, v string }
	var pairs []pair
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, pair{fmt.Sprint(kv[i]), fmt.Sprint(kv[i+1])})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].k < pairs[j].k })
	for _, p := range pairs {
		msg += fmt.Sprintf(" %s=%s", p.k, p.v)
	}
	return msg
}

// Init is part of logr.LogSink.
func (l *Log) Init(logr.RuntimeInfo) {}

// Enabled keeps what klog logs by default (V(0)); verbose lines are off.
func (l *Log) Enabled(level int) bool { return level == 0 }

// Info records an informational line.
func (l *Log) Info(_ int, msg string, kv ...any) { l.add(withValues(msg, kv)) }

// Error records an error line.
func (l *Log) Error(err error, msg string, kv ...any) {
	if err != nil {
		msg += ": " + err.Error()
	}
	l.add(withValues(msg, kv))
}

// WithValues is part of logr.LogSink; values are kept out of the key.
func (l *Log) WithValues(...any) logr.LogSink { return l }

// WithName is part of logr.LogSink.
func (l *Log) WithName(string) logr.LogSink { return l }
