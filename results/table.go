package results

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/spec"
)

// WriteTable writes the compact end-of-run summary: what ran and where,
// throughput, success ratio, conflicts, attempts per operation, latency
// percentiles, lost updates, the server cross-check and warnings, then the
// scenario's own lines.
func WriteTable(w io.Writer, r *Result, scenarioRows [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, a...)) }
	s := r.Summary
	m := r.Measurements

	title := fmt.Sprintf("kb-bench %s, run %s", r.Version, r.RunID)
	if r.Interrupted {
		title += " (INTERRUPTED: the figures cover what ran)"
	}
	fmt.Fprintln(tw, title)
	if r.TargetLost != "" {
		row("TARGET LOST", "%s: the run stopped there; the figures cover what ran before", r.TargetLost)
	}
	row("target", "%s", DescribeTarget(r.Target, true))
	row("workload", "%s", r.Workload)
	clients := r.Spec.Clients
	if r.Spec.Shards > clients {
		clients = r.Spec.Shards // at least one connection per shard
	}
	row("client", "%s", describeClient(r.Spec.Client, clients, m.Client))
	if len(r.Shards) > 0 {
		row("shards", "%s", describeShards(r.Shards))
	}

	row("throughput", "%.1f ops/s, %.1f successful writes/s (%d ops in %.1fs)", s.Throughput, s.WriteThroughput, s.Ops, s.Seconds)
	if m.WarmupOps > 0 {
		row("", "%d warm-up ops excluded", m.WarmupOps)
	}
	row("success", "%s (%d of %d ops)", percent(s.SuccessRatio), s.Successes, s.Ops)
	row("outcomes", "%s", describeOutcomes(s.Outcomes))
	version, fieldManager := m.Conflicts()
	if s.WriteAttempts == 0 {
		row("conflicts", "no write attempts")
	} else {
		row("conflicts", "%d of %d write attempts (%s): version %d, field-manager %d",
			s.Conflicts, s.WriteAttempts, percent(s.ConflictRate), version, fieldManager)
	}
	attempts := fmt.Sprintf("p50 %d  p99 %d  max %d", s.AttemptsP50, s.AttemptsP99, s.AttemptsMax)
	if s.GaveUp > 0 {
		attempts += fmt.Sprintf("  (%d ops gave up: retries ran out)", s.GaveUp)
	}
	row("attempts/op", "%s", attempts)
	row("latency", "%s", describeLatency(s.Latency))
	if s.RawLatency != nil {
		row("raw latency", "%s", describeLatency(*s.RawLatency))
	}
	if m.Late > 0 || m.Dropped > 0 {
		row("open loop", "%s started late, %d dropped (no free slot)", Plural(int(m.Late), "arrival"), m.Dropped)
	}
	limiter := FormatDuration(m.Client.RateLimiterWait) + " waiting in the client rate limiter"
	if m.Client.RateLimited > 0 {
		limiter += fmt.Sprintf(" (%s throttled)", Plural(int(m.Client.RateLimited), "request"))
	}
	if m.Client.StreamWaited > 0 {
		limiter += fmt.Sprintf(", %s waited for a free stream of their connection, %s on average (more --clients, more connections)",
			Plural(int(m.Client.StreamWaited), "request"), FormatDuration(m.Client.StreamWait/time.Duration(m.Client.StreamWaited)))
	}
	row("client-go", "%d hidden retries, %s", m.Client.Retries, limiter)
	row("lost updates", "%s", describeLost(r.Checks))
	for _, c := range r.Checks {
		if !c.Passed && c.Lost == 0 {
			row("CHECK FAILED", "%s: %s", c.Name, c.Detail)
		}
	}
	for _, line := range describeServer(r.Server) {
		row(line[0], "%s", line[1])
	}
	for _, line := range scenarioRows {
		row(line[0], "%s", line[1])
	}
	for _, e := range m.Errors {
		row("other error", "%q", e)
	}
	if m.Clamped > 0 {
		row("warning", "%d latencies above one hour were recorded as one hour", m.Clamped)
	}
	for _, wmsg := range r.Warnings {
		row("warning", "%s", wmsg)
	}
	return tw.Flush()
}

// DescribeTarget says which apiserver ran a result: its kind, its address
// when withServer (it means nothing once the run is over), and versions and
// storage.
func DescribeTarget(t spec.TargetInfo, withServer bool) string {
	d := string(t.Kind)
	if t.Server != "" && withServer {
		d += " " + t.Server
	}
	if t.Context != "" {
		d += ", context " + t.Context
	}
	var parts []string
	if t.ServerVersion != "" {
		parts = append(parts, "kube-apiserver "+t.ServerVersion)
	}
	if t.EtcdVersion != "" || t.Storage != "" {
		e := "etcd"
		if t.EtcdVersion != "" {
			e += " " + t.EtcdVersion
		}
		if t.Storage != "" {
			e += " on " + string(t.Storage)
		}
		parts = append(parts, e)
	}
	if t.ControllerManager {
		parts = append(parts, "kube-controller-manager")
	}
	if t.Reused {
		parts = append(parts, "reused control plane")
	}
	if t.KindConfig != "" {
		parts = append(parts, "made by kb-bench kind up")
	}
	if len(parts) > 0 {
		d += " (" + strings.Join(parts, ", ") + ")"
	}
	return d
}

// Describe is the run in words: the scenario's own description (what),
// then the strategy, the loop (for a driven scenario) and the bounds.
func Describe(s spec.Spec, what string, driven bool) string {
	parts := []string{s.Scenario + ": " + what}
	if s.Strategy != "" {
		parts = append(parts, "strategy "+describeStrategy(s))
	}
	loop, length := describeLoad(s)
	if driven {
		parts = append(parts, loop)
	}
	parts = append(parts, length)
	if s.Shards > 0 {
		parts = append(parts, fmt.Sprintf("in %s (%s runner)", Plural(s.Shards, "shard"), s.Runner))
	}
	return strings.Join(parts, ", ")
}

// describeShards says how a distributed run's shards started and what
// each ran.
func describeShards(shards []ShardInfo) string {
	first, last := shards[0].StartLate, shards[0].StartLate
	parts := make([]string, len(shards))
	for i, sh := range shards {
		first, last = min(first, sh.StartLate), max(last, sh.StartLate)
		parts[i] = fmt.Sprintf("%d: writers %d-%d %d ops", sh.Index, sh.From, sh.To-1, sh.Ops)
	}
	return fmt.Sprintf("%d started %s apart; %s", len(shards), FormatDuration(last-first), strings.Join(parts, ", "))
}

func describeLoad(s spec.Spec) (loop, length string) {
	if s.Rate > 0 {
		loop = fmt.Sprintf("open loop %g ops/s (max %d in flight)", s.Rate, s.MaxInFlight)
	} else {
		loop = "closed loop"
		if s.ThinkTime.Duration > 0 {
			loop += ", think time " + s.ThinkTime.String()
		}
	}
	var bounds []string
	if s.Duration.Duration > 0 {
		bounds = append(bounds, s.Duration.String())
	}
	if s.Operations > 0 {
		bounds = append(bounds, fmt.Sprintf("%d ops", s.Operations))
	}
	length = strings.Join(bounds, " or ")
	if s.Warmup.Duration > 0 {
		length += " after " + s.Warmup.String() + " warm-up"
	}
	return loop, length
}

func describeStrategy(s spec.Spec) string {
	switch s.Strategy {
	case spec.StrategyUpdate:
		if s.Unconditional {
			return "update without resourceVersion (last write wins)"
		}
		return "update"
	case spec.StrategyRetry:
		if s.Backoff == nil {
			return "retry"
		}
		return "retry (backoff " + s.Backoff.String() + ")"
	case spec.StrategyPatch:
		d := "patch " + string(s.PatchType)
		if s.PatchPrecondition {
			d += " with resourceVersion precondition"
		}
		return d
	case spec.StrategySSA:
		d := "ssa (" + string(s.FieldManager) + " field managers"
		if s.Force {
			d += ", force"
		}
		return d + ")"
	}
	return string(s.Strategy)
}

func describeClient(c spec.Client, clients int, stats ClientStats) string {
	qps := "QPS unlimited"
	if c.QPS > 0 {
		qps = fmt.Sprintf("QPS %g burst %d", c.QPS, c.Burst)
	}
	content := "content type " + string(c.ContentType)
	if len(stats.SentContent) > 0 {
		content += ", sent " + describeMedia(stats.SentContent)
	}
	if len(stats.ReceivedContent) > 0 {
		content += ", received " + describeMedia(stats.ReceivedContent)
	}
	return fmt.Sprintf("%s, %s, %s", qps, content, Plural(max(clients, 1), "connection"))
}

// describeMedia lists content types by count, shortest names first:
// "protobuf 9773, apply-patch+yaml 12".
func describeMedia(counts map[string]int64) string {
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return counts[names[i]] > counts[names[j]] || counts[names[i]] == counts[names[j]] && names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, k := range names {
		short := strings.TrimPrefix(strings.TrimPrefix(k, "application/"), "vnd.kubernetes.")
		parts[i] = fmt.Sprintf("%s %d", short, counts[k])
	}
	return strings.Join(parts, ", ")
}

// describeOutcomes lists non-zero outcomes in their fixed order.
func describeOutcomes(outcomes map[string]int64) string {
	var parts []string
	for o := metrics.Outcome(0); o < metrics.NumOutcomes; o++ {
		if n := outcomes[o.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	if len(parts) == 0 {
		return "no operations measured"
	}
	return strings.Join(parts, "  ")
}

func describeLatency(l Latency) string {
	if l == (Latency{}) {
		return "-"
	}
	return fmt.Sprintf("p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (mean %s)",
		FormatDuration(l.P50), FormatDuration(l.P90), FormatDuration(l.P99), FormatDuration(l.P999), FormatDuration(l.Max), FormatDuration(l.Mean))
}

// describeLost states lost updates plainly, naming each check that found some.
func describeLost(checks []Check) string {
	var lost int64
	var where []string
	for _, c := range checks {
		if c.Lost > 0 {
			lost += c.Lost
			where = append(where, fmt.Sprintf("%s: expected %d, found %d", c.Name, c.Expected, c.Observed))
		}
	}
	failed := 0
	for _, c := range checks {
		if !c.Passed && c.Lost == 0 {
			failed++
		}
	}
	switch {
	case lost > 0:
		return fmt.Sprintf("LOST UPDATES: %d (%s)", lost, strings.Join(where, "; "))
	case len(checks) == 0:
		return "not checked"
	case failed > 0:
		return fmt.Sprintf("unknown: %d of %d checks could not be made (see CHECK FAILED)", failed, len(checks))
	default:
		return fmt.Sprintf("none (%s passed)", Plural(len(checks), "check"))
	}
}

// describeServer returns the server cross-check rows (name, value).
func describeServer(c *ServerCheck) [][2]string {
	if c == nil {
		return [][2]string{{"server", "not checked"}}
	}
	if !c.Available {
		return [][2]string{{"server", "not checked: " + c.Reason}}
	}
	var total int64
	for _, r := range c.Requests {
		total += r.Client
	}
	rows := [][2]string{}
	switch {
	case c.Match && total == 0:
		rows = append(rows, [2]string{"server", "no requests in the measured window, and the apiserver counted none either"})
	case c.Match:
		rows = append(rows, [2]string{"server", fmt.Sprintf("apiserver counted the same %d requests as kb-bench: %s", total, describeCounts(c.Requests))})
	default:
		rows = append(rows, [2]string{"server", "MISMATCH: " + c.Mismatch})
	}
	if len(c.Internal) > 0 {
		rows = append(rows, [2]string{"", "apiserver's own requests: " + describeCounts(c.Internal)})
	}
	for _, e := range c.Races {
		etcd := fmt.Sprintf("etcd: %s %d update transactions, %d lost a race", e.Resource, e.Updates, e.Failed)
		if e.Absorbed > 0 {
			etcd += fmt.Sprintf("; at least %d conflicts retried inside the apiserver (no 409 returned)", e.Absorbed)
		}
		rows = append(rows, [2]string{"", etcd})
	}
	if c.FlowControlRejected > 0 {
		rows = append(rows, [2]string{"", fmt.Sprintf("flow control rejected %d requests (429)", c.FlowControlRejected)})
	}
	return rows
}

// describeCounts lists request counts by endpoint, the codes of each in
// parentheses: "PUT configmaps 1839 (200), 7934 (409)".
func describeCounts(rows []RequestCount) string {
	var parts []string
	last := ""
	for _, r := range rows {
		n := r.Server
		if n == 0 {
			n = r.Client
		}
		endpoint := r.Verb + " " + r.Resource
		if endpoint != last {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", endpoint, n, r.Code))
			last = endpoint
			continue
		}
		parts[len(parts)-1] += fmt.Sprintf(", %d (%s)", n, r.Code)
	}
	return strings.Join(parts, "; ")
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// Plural is "1 writer" or "n writers".
func Plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// FormatDuration renders a latency with a precision that suits its size.
func FormatDuration(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "0s"
	case ms >= 10000:
		return fmt.Sprintf("%.1fs", ms/1000)
	case ms >= 1000:
		return fmt.Sprintf("%.2fs", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	default:
		return fmt.Sprintf("%.2fms", ms)
	}
}

// FormatProgress is the live progress line: elapsed and remaining time (of
// total; 0 when the run is bounded by operations), then the last interval's
// operations per second, 409s per second (every write attempt, retried ones
// included) and p99 latency.
func FormatProgress(elapsed, total time.Duration, p metrics.SeriesPoint) string {
	el := elapsed.Round(time.Second)
	var clock string
	switch {
	case total <= 0:
		clock = fmt.Sprintf("%s elapsed", el)
	case elapsed >= total:
		clock = fmt.Sprintf("%s/%s, finishing", el, total.Round(time.Second))
	default:
		clock = fmt.Sprintf("%s/%s, %s left", el, total.Round(time.Second), (total - elapsed).Round(time.Second))
	}
	var ops, conflicts float64
	if p.Span > 0 {
		ops = float64(p.Ops) / p.Span.Seconds()
		conflicts = float64(pointConflicts(p)) / p.Span.Seconds()
	}
	p99 := "-"
	if p.Ops > 0 {
		p99 = FormatDuration(p.P99)
	}
	return fmt.Sprintf("[%s]  %.0f ops/s  %.0f conflicts/s  p99 %s", clock, ops, conflicts, p99)
}

// ShortLatency is "p50 1.20ms  p99 8.31ms  max 20.1ms", or "-" when nothing
// was measured.
func ShortLatency(l Latency) string {
	if l.Max == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %s  p99 %s  max %s", FormatDuration(l.P50), FormatDuration(l.P99), FormatDuration(l.Max))
}
