package results

import (
	"fmt"
	"io"
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
func WriteTable(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, a...)) }
	s := r.Summary
	m := r.Measurements

	title := fmt.Sprintf("kb-bench %s, run %s", r.Version, r.RunID)
	if r.Interrupted {
		title += " (INTERRUPTED: the figures cover what ran)"
	}
	fmt.Fprintln(tw, title)
	row("target", "%s", describeTarget(r.Target))
	row("workload", "%s", describeWorkload(r.Spec))
	row("client", "%s", describeClient(r.Spec.Client, r.Spec.Clients))

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
		row("open loop", "%s started late, %d dropped (no free slot)", plural(int(m.Late), "arrival"), m.Dropped)
	}
	limiter := duration(m.Client.RateLimiterWait) + " waiting in the client rate limiter"
	if m.Client.RateLimited > 0 {
		limiter += fmt.Sprintf(" (%s throttled)", plural(int(m.Client.RateLimited), "request"))
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
	for _, e := range m.Errors {
		row("other error", "%q", e)
	}
	if m.Clamped > 0 {
		row("warning", "%d latencies above one hour were recorded as one hour", m.Clamped)
	}
	for _, wmsg := range r.Warnings {
		row("warning", "%s", wmsg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.LeaderElection != nil {
		if err := r.LeaderElection.WriteTable(w); err != nil {
			return err
		}
	}
	if r.Quota != nil {
		return r.Quota.WriteTable(w)
	}
	return nil
}

func describeTarget(t Target) string {
	d := t.Kind
	if t.Server != "" {
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
			e += " on " + t.Storage
		}
		parts = append(parts, e)
	}
	if t.Reused {
		parts = append(parts, "reused control plane")
	}
	if len(parts) > 0 {
		d += " (" + strings.Join(parts, ", ") + ")"
	}
	return d
}

func describeWorkload(s spec.Spec) string {
	var parts []string
	switch s.Scenario {
	case spec.ScenarioLeaderElection:
		return describeLeaderElection(s)
	case spec.ScenarioQuota:
		return describeQuota(s)
	case spec.ScenarioControllerStatus:
		parts = []string{s.Scenario + ": " + describeControllers(s)}
	default:
		parts = []string{s.Scenario + ": " + describeCounter(s)}
	}
	loop, length := describeLoad(s)
	return strings.Join(append(parts, "strategy "+describeStrategy(s), loop, length), ", ")
}

func describeCounter(s spec.Spec) string {
	where := fmt.Sprintf("%s on %s", plural(s.Writers, "writer"), plural(s.Objects, "object"))
	switch {
	case s.WritersPerObject > 0:
		where += fmt.Sprintf(" (%d writers per object)", s.WritersPerObject)
	case s.Objects > 1 && s.Distribution.Kind == spec.DistZipf:
		where += fmt.Sprintf(" (zipf s=%g)", s.Distribution.ZipfExponent)
	case s.Objects > 1 && s.Distribution.Kind == spec.DistHotspot:
		where += fmt.Sprintf(" (hotspot: %g%% of objects get %g%% of writes)", 100*s.Distribution.HotFraction, 100*s.Distribution.HotShare)
	case s.Objects > 1:
		where += " (" + s.Distribution.Kind + ")"
	}
	if s.Fields != "" {
		where += ", " + s.Fields + " fields"
	}
	if s.ObjectSize > 0 {
		where += fmt.Sprintf(", %d B filler", s.ObjectSize)
	}
	return where
}

func describeControllers(s spec.Spec) string {
	c := s.Controller
	if c == nil {
		return plural(s.Writers, "worker")
	}
	return fmt.Sprintf("%s x %s, %s owned each + %d shared",
		plural(c.Controllers, "controller"), plural(s.Writers, "worker"), plural(c.ObjectsPerController, "Pod"), c.SharedObjects)
}

func describeLeaderElection(s spec.Spec) string {
	d := fmt.Sprintf("%s: %s on one Lease", s.Scenario, plural(s.Writers, "candidate"))
	if le := s.LeaderElection; le != nil {
		d += fmt.Sprintf(", lease %s, renew %s, retry %s", le.LeaseDuration, le.RenewDeadline, le.RetryPeriod)
		if le.FailoverEvery.Duration > 0 {
			d += ", leader stopped every " + le.FailoverEvery.String()
			if le.ReleaseOnCancel {
				d += " (releases on cancel)"
			}
		}
	}
	_, length := describeLoad(s)
	return d + ", " + length
}

func describeQuota(s spec.Spec) string {
	d := fmt.Sprintf("%s: %s creating objects", s.Scenario, plural(s.Writers, "writer"))
	if q := s.Quota; q != nil {
		d += fmt.Sprintf(" under a ResourceQuota of %s=%d", q.Resource, q.Hard)
	}
	loop, length := describeLoad(s)
	return strings.Join([]string{d, loop, length}, ", ")
}

// describeLoad says how the load was driven (loop) and bounded (length).
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
		return "retry (backoff " + s.Backoff + ")"
	case spec.StrategyPatch:
		d := "patch " + s.PatchType
		if s.PatchPrecondition {
			d += " with resourceVersion precondition"
		}
		return d
	case spec.StrategySSA:
		d := "ssa (" + s.FieldManager + " field managers"
		if s.Force {
			d += ", force"
		}
		return d + ")"
	}
	return s.Strategy
}

func describeClient(c spec.Client, clients int) string {
	qps := "QPS unlimited"
	if c.QPS > 0 {
		qps = fmt.Sprintf("QPS %g burst %d", c.QPS, c.Burst)
	}
	return fmt.Sprintf("%s, %s, %s", qps, c.ContentType, plural(max(clients, 1), "connection"))
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
		duration(l.P50), duration(l.P90), duration(l.P99), duration(l.P999), duration(l.Max), duration(l.Mean))
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
	switch {
	case lost > 0:
		return fmt.Sprintf("LOST UPDATES: %d (%s)", lost, strings.Join(where, "; "))
	case len(checks) == 0:
		return "not checked"
	default:
		return fmt.Sprintf("none (%s passed)", plural(len(checks), "check"))
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
	counts := fmt.Sprintf("%d writes, %d conflicts on %s", c.ServerWrites, c.ServerConflicts, c.Resource)
	rows := [][2]string{}
	if c.WritesMatch && c.ConflictsMatch {
		rows = append(rows, [2]string{"server", "apiserver counted " + counts + ": same as kb-bench"})
	} else {
		rows = append(rows, [2]string{"server", "MISMATCH: " + c.Mismatch})
	}
	if c.EtcdUpdates > 0 {
		etcd := fmt.Sprintf("etcd: %d update transactions, %d lost a race", c.EtcdUpdates, c.EtcdFailedUpdates)
		if c.AbsorbedConflicts > 0 {
			etcd += fmt.Sprintf("; at least %d conflicts retried inside the apiserver (no 409 returned)", c.AbsorbedConflicts)
		}
		rows = append(rows, [2]string{"", etcd})
	}
	if c.FlowControlRejected > 0 {
		rows = append(rows, [2]string{"", fmt.Sprintf("flow control rejected %d requests (429)", c.FlowControlRejected)})
	}
	return rows
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// duration renders a latency with a precision that suits its size.
func duration(d time.Duration) string {
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
		p99 = duration(p.P99)
	}
	return fmt.Sprintf("[%s]  %.0f ops/s  %.0f conflicts/s  p99 %s", clock, ops, conflicts, p99)
}
