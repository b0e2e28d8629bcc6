// Package text renders results as kb-bench prints them: a run's summary
// table and one-line figures, the live progress line, a comparison of
// sides, a gate's verdicts and a sweep's tables, in text, markdown, CSV,
// JSON or JUnit XML as each allows. A run prints through it live, and
// 'kb-bench show' prints the same from the saved documents.
package text

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/results/analysis"
	"github.com/kb-bench/kb-bench/spec"
)

// WriteTable writes the compact end-of-run summary.
func WriteTable(w io.Writer, r *results.Result) error {
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
	for _, f := range r.Faults {
		row("FAULT", "%s", DescribeFault(f))
	}
	row("target", "%s", results.DescribeTarget(r.Target, true))
	row("workload", "%s", r.Workload)
	// At least one connection per shard.
	row("client", "%s", describeClient(r.Spec.Client, max(r.Spec.Clients, r.Spec.Shards), m.Client))
	if len(r.Shards) > 0 {
		row("shards", "%s", describeShards(r.Shards))
	}

	row("throughput", "%.1f ops/s, %.1f successful writes/s (%d ops in %.1fs)", s.Throughput, s.WriteThroughput, s.Ops, s.Seconds)
	if m.WarmupOps > 0 {
		row("", "%d warm-up ops excluded", m.WarmupOps)
	}
	row("success", "%s (%d of %d ops)", words.Percent(s.SuccessRatio), s.Successes, s.Ops)
	row("outcomes", "%s", describeOutcomes(s.Outcomes))
	version, fieldManager := m.Conflicts()
	if s.WriteAttempts == 0 {
		row("conflicts", "no write attempts")
	} else {
		row("conflicts", "%d of %d write attempts (%s): version %d, field-manager %d",
			s.Conflicts, s.WriteAttempts, words.Percent(s.ConflictRate), version, fieldManager)
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
	if note := analysis.WeaklySupported(s.Ops); note != "" && s.Latency != (results.Latency{}) {
		row("", "%s", note)
	}
	if m.Late > 0 || m.Dropped > 0 {
		row("open loop", "%s started late, %d dropped (no free slot)", words.Plural(int(m.Late), "arrival"), m.Dropped)
	}
	limiter := words.Duration(m.Client.RateLimiterWait) + " waiting in the client rate limiter"
	if m.Client.RateLimited > 0 {
		limiter += fmt.Sprintf(" (%s throttled)", words.Plural(int(m.Client.RateLimited), "request"))
	}
	if m.Client.StreamWaited > 0 {
		limiter += fmt.Sprintf(", %s waited for a free stream of their connection, %s on average (more --clients, more connections)",
			words.Plural(int(m.Client.StreamWaited), "request"), words.Duration(m.Client.StreamWait/time.Duration(m.Client.StreamWaited)))
	}
	row("client-go", "%d hidden retries, %s", m.Client.Retries, limiter)
	row("lost updates", "%s", describeLost(r.Checks))
	for _, c := range r.Checks {
		if !c.Made() {
			row("CHECK FAILED", "%s: %s", c.Name, c.Detail)
		}
	}
	for _, line := range slices.Concat(describeServer(r.Server), describeCost(r), describeTime(r), FigureRows(r)) {
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

// FigureRows are the scenario's figures of r, a row a name, the first
// row named after the scenario: "failoverTime quantile=0.5: 1.20s,
// quantile=0.99: 2.10s".
func FigureRows(r *results.Result) [][2]string {
	var rows [][2]string
	at := map[string]int{}
	for _, f := range r.Figures {
		item := f.Text()
		if len(f.Labels) > 0 {
			var labels []string
			for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
				labels = append(labels, k+"="+f.Labels[k])
			}
			item = strings.Join(labels, " ") + ": " + item
		}
		if i, ok := at[f.Name]; ok {
			rows[i][1] += ", " + item
			continue
		}
		at[f.Name] = len(rows)
		rows = append(rows, [2]string{"", f.Name + " " + item})
	}
	if len(rows) > 0 {
		rows[0][0] = cmp.Or(r.Spec.Scenario, "scenario")
	}
	return rows
}

// describeShards says how a distributed run's shards started and ran.
func describeShards(shards []results.ShardInfo) string {
	first, last := shards[0].StartLate, shards[0].StartLate
	parts := make([]string, len(shards))
	for i, sh := range shards {
		first, last = min(first, sh.StartLate), max(last, sh.StartLate)
		parts[i] = fmt.Sprintf("%d: writers %d-%d %d ops", sh.Index, sh.From, sh.To-1, sh.Ops)
	}
	return fmt.Sprintf("%d started %s apart; %s", len(shards), words.Duration(last-first), strings.Join(parts, ", "))
}

func describeClient(c spec.Client, clients int, stats results.ClientStats) string {
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
	d := fmt.Sprintf("%s, %s, %s", qps, content, words.Plural(max(clients, 1), "connection"))
	if c.Latency.Duration > 0 {
		d += ", " + words.Duration(c.Latency.Duration) + " round trip added"
		if c.Jitter.Duration > 0 {
			d += " (jitter " + words.Duration(c.Jitter.Duration) + ")"
		}
		if stats.Delayed > 0 {
			d += fmt.Sprintf(", %s on average over %d requests", words.Duration(stats.AddedLatency/time.Duration(stats.Delayed)), stats.Delayed)
		}
	}
	return d
}

// describeMedia lists content types by count, shortest names first:
// "protobuf 9773, apply-patch+yaml 12".
func describeMedia(counts map[string]int64) string {
	names := slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b)) })
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
	for o := range metrics.NumOutcomes {
		if n := outcomes[o.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	if len(parts) == 0 {
		return "no operations measured"
	}
	return strings.Join(parts, "  ")
}

func describeLatency(l results.Latency) string {
	if l == (results.Latency{}) {
		return "-"
	}
	return fmt.Sprintf("p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (mean %s)",
		words.Duration(l.P50), words.Duration(l.P90), words.Duration(l.P99), words.Duration(l.P999), words.Duration(l.Max), words.Duration(l.Mean))
}

// describeLost states lost updates plainly, naming each check that found some.
func describeLost(checks []results.Check) string {
	var lost int64
	var where []string
	for _, c := range checks {
		if c.Lost > 0 {
			lost += c.Lost
			where = append(where, fmt.Sprintf("%s: expected %d, found %d", c.Name, c.Expected, c.Observed))
		}
	}
	// "N of M checks could not be made", "" when all were.
	unknown := results.UnknownLostUpdates(checks)
	switch {
	case lost > 0 && unknown != "":
		return fmt.Sprintf("LOST UPDATES: at least %d (%s); the count is unknown: %s (see CHECK FAILED)", lost, strings.Join(where, "; "), unknown)
	case lost > 0:
		return fmt.Sprintf("LOST UPDATES: %d (%s)", lost, strings.Join(where, "; "))
	case len(checks) == 0:
		return "not checked"
	case unknown != "":
		return "unknown: " + unknown + " (see CHECK FAILED)"
	default:
		return fmt.Sprintf("none (%s passed)", words.Plural(len(checks), "check"))
	}
}

// describeServer returns the server cross-check rows (name, value).
func describeServer(c *results.ServerCheck) [][2]string {
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
	verdict := "MISMATCH: " + c.Mismatch
	switch {
	case c.Match && total == 0:
		verdict = "no requests in the measured window, and the apiserver counted none either"
	case c.Match:
		verdict = fmt.Sprintf("apiserver counted the same %d requests as kb-bench: %s", total, describeCounts(c.Requests))
	}
	rows := [][2]string{{"server", verdict}}
	if len(c.Others) > 0 {
		rows = append(rows, [2]string{"", "other clients' requests on the same resources (the cluster's own; kb-bench's all counted): " + describeCounts(c.Others)})
	}
	if len(c.Internal) > 0 {
		rows = append(rows, [2]string{"", "apiserver's own requests: " + describeCounts(c.Internal)})
	}
	if len(c.Etcd) > 0 {
		rows = append(rows, [2]string{"", "etcd requests: " + describeEtcd(c.Etcd)})
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
	if len(c.APIServers) > 0 {
		rows = append(rows, [2]string{"apiservers", describeShares(c.APIServers)})
	}
	return rows
}

// describeEtcd lists the apiserver's etcd requests with their mean
// duration as the apiserver measured it (etcd_request_duration_seconds):
// "configmaps get 1749 (mean 512µs), update 1423 (mean 3.10ms)".
func describeEtcd(rows []results.EtcdRequests) string {
	return grouped(rows, func(e results.EtcdRequests) (string, string) {
		return e.Resource, fmt.Sprintf("%s %d (mean %s)", e.Operation, e.Count, words.Duration(e.Mean))
	})
}

// grouped lists items, each said as a group and what follows it, the
// group named once before its run of items: "g1 a, b; g2 c".
func grouped[T any](items []T, say func(T) (group, item string)) string {
	var parts []string
	last := ""
	for _, it := range items {
		group, item := say(it)
		if group != last || len(parts) == 0 {
			parts = append(parts, group+" "+item)
			last = group
			continue
		}
		parts[len(parts)-1] += ", " + item
	}
	return strings.Join(parts, "; ")
}

// describeShares gives each apiserver's share of the requests counted:
// "https://127.0.0.1:1234 34% (812 writes, 2301 409s); ...".
func describeShares(shares []results.APIServerShare) string {
	var total int64
	for _, sh := range shares {
		total += sh.Requests
	}
	parts := make([]string, len(shares))
	for i, sh := range shares {
		pct := "-"
		if total > 0 {
			pct = words.Percent(float64(sh.Requests) / float64(total))
		}
		parts[i] = fmt.Sprintf("%s %s of requests (%d writes, %d 409s)", sh.Server, pct, sh.Writes, sh.Conflicts)
	}
	return strings.Join(parts, "; ")
}

// describeCost returns the cost rows (none for a result without a cost).
func describeCost(r *results.Result) [][2]string {
	c := r.Cost
	if c == nil {
		return nil
	}
	s := r.Summary
	f := c.Figures(s)
	rows := [][2]string{}
	add := func(name string, p results.ProcessCost, u results.PerUnit, writes bool) {
		if !p.Available {
			rows = append(rows, [2]string{"", fmt.Sprintf("%s %s", name, p.Reason)})
			return
		}
		line := fmt.Sprintf("%s %s CPU (%.2f cores): %s per op", name, words.Duration(u.CPU), u.Cores, words.Duration(u.PerOp))
		if writes && s.Writes > 0 {
			line += fmt.Sprintf(", %s per successful write", words.Duration(u.PerWrite))
		}
		if p.MemoryAfter > 0 {
			line += fmt.Sprintf("; memory %s -> %s", mebibytes(p.MemoryBefore), mebibytes(p.MemoryAfter))
		}
		rows = append(rows, [2]string{"", line})
	}
	apiserver := "apiserver"
	if n := len(r.Target.APIServers); n > 1 {
		apiserver = fmt.Sprintf("%d apiservers", n) // their figures added
		if r.Server != nil && len(r.Server.APIServers) > 0 && len(r.Server.APIServers) < n {
			// One died in the window, its counters with it.
			apiserver = fmt.Sprintf("%d living apiservers of %d", len(r.Server.APIServers), n)
		}
	}
	add(apiserver, c.Apiserver, f.Apiserver, true)
	if f.ApiserverNet.Has {
		line := fmt.Sprintf("%s background %.2f cores (its CPU over %.1fs with no request of the run's)", apiserver, f.Background, c.ApiserverIdle.Seconds)
		if s.Writes > 0 {
			line += fmt.Sprintf(": net of it, %s per successful write", words.Duration(f.ApiserverNet.PerWrite))
		}
		rows = append(rows, [2]string{"", line})
	}
	add("etcd", c.Etcd, f.Etcd, true)
	add("kb-bench", c.Client, f.Client, false)
	rows[0][0] = "cost"
	if f.HasSplit && s.WriteAttempts > 0 {
		// Only what was measured: the apiserver's request times have no
		// response code, so the 409s' share of them is not known (split
		// by count, it would only restate the conflict rate).
		split := fmt.Sprintf("writes took %s of the apiserver's request time", words.Percent(f.WriteShare))
		if s.Conflicts > 0 {
			split += "; what the 409s took of it is not measured (the apiserver does not time requests by response code)"
		}
		rows = append(rows, [2]string{"", split})
	}
	return rows
}

// describeTime returns the "where the time goes" rows: per verb, the
// client's latency beside the apiserver's and etcd's, then the waits.
func describeTime(r *results.Result) [][2]string {
	if r.Cost == nil || len(r.Cost.Verbs) == 0 {
		return nil
	}
	m := r.Measurements
	writeVerbs := 0
	for _, v := range r.Cost.Verbs {
		if results.IsWriteVerb(v.Verb) {
			writeVerbs++
		}
	}
	var rows [][2]string
	for _, v := range r.Cost.Verbs {
		hist := ""
		switch {
		case v.Verb == "GET":
			hist = results.HistRead
		case results.IsWriteVerb(v.Verb) && writeVerbs == 1:
			hist = results.HistWrite
		}
		rows = append(rows, [2]string{"", fmt.Sprintf("%s %s %s", v.Verb, v.Resource, describeVerbTime(r, v, hist))})
	}
	rows[0][0] = "time"
	var waits []string
	if c := r.Server; c != nil && c.Available {
		if c.FlowControlWaited > 0 {
			waits = append(waits, fmt.Sprintf("APF queued %s, %s on average", words.Plural(int(c.FlowControlWaited), "request"), words.Duration(c.FlowControlMeanWait)))
		} else {
			waits = append(waits, "APF queued none")
		}
	}
	waits = append(waits, fmt.Sprintf("the client waited %s in its rate limiter and %s for a free stream",
		words.Duration(m.Client.RateLimiterWait), words.Duration(m.Client.StreamWait)))
	rows = append(rows, [2]string{"", strings.Join(waits, "; ") + " (~: estimated from the apiserver's histogram buckets, 0-5-25-50-100 ms...)"})
	return rows
}

// describeVerbTime is one verb's "p50: client 7.4ms = apiserver ~5.9ms
// (etcd update mean 2.1ms) + network/client ~1.5ms; p99: ...", with "="
// only between figures that add up.
func describeVerbTime(r *results.Result, v results.VerbTime, hist string) string {
	var client []int64
	if hist != "" {
		if h, ok, err := r.Measurements.Histogram(hist); ok && err == nil && h.TotalCount() > 0 {
			client = metrics.Percentiles(h, 0.5, 0.99)
		}
	}
	etcd := etcdMean(r.Server, v)
	var parts []string
	for i, q := range []float64{0.5, 0.99} {
		name := []string{"p50", "p99"}[i]
		est, above, ok := v.Quantile(q)
		server := "-"
		if ok {
			server = "~" + words.Duration(est)
			if above {
				server = ">" + words.Duration(est)
			}
		}
		if i == 0 && etcd != "" {
			server += " (" + etcd + ")"
		}
		if client == nil {
			parts = append(parts, fmt.Sprintf("%s: apiserver %s", name, server))
			continue
		}
		c := time.Duration(client[i]) * time.Microsecond
		// "=" only where the figures add up: the client's time is the
		// apiserver's plus the rest. An estimate above the client's own
		// time is the coarseness of its histogram bucket, said as such.
		var line string
		switch {
		case ok && !above && c > est:
			line = fmt.Sprintf("%s: client %s = apiserver %s + network/client ~%s", name, words.Duration(c), server, words.Duration(c-est))
		case ok && !above && c < est:
			line = fmt.Sprintf("%s: client %s, apiserver %s (above the client's: a coarse bucket)", name, words.Duration(c), server)
		default:
			line = fmt.Sprintf("%s: client %s, apiserver %s", name, words.Duration(c), server)
		}
		parts = append(parts, line)
	}
	return strings.Join(parts, "; ")
}

// etcdMean is etcd's mean request duration for the operation a verb
// makes on its resource ("etcd update mean 2.1ms"; "" when unknown).
func etcdMean(c *results.ServerCheck, v results.VerbTime) string {
	if c == nil {
		return ""
	}
	op := map[string]string{"GET": "get", "PUT": "update", "PATCH": "update", "APPLY": "update", "POST": "create", "DELETE": "delete"}[v.Verb]
	resource, _, _ := strings.Cut(strings.Split(v.Resource, "/")[0], ".")
	for _, e := range c.Etcd {
		if e.Resource == resource && e.Operation == op {
			return fmt.Sprintf("etcd %s mean %s", op, words.Duration(e.Mean))
		}
	}
	return ""
}

// mebibytes is a memory size in MiB.
func mebibytes(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// describeCounts lists request counts by endpoint, the codes of each in
// parentheses: "PUT configmaps 1839 (200), 7934 (409)".
func describeCounts(rows []results.RequestCount) string {
	return grouped(rows, func(r results.RequestCount) (string, string) {
		return r.Verb + " " + r.Resource, fmt.Sprintf("%d (%s)", cmp.Or(r.Server, r.Client), r.Code)
	})
}

// FormatProgress is the live progress line: elapsed and remaining time (of
// total; 0 when the run is bounded by operations), then the last
// interval's figures (409s of every write attempt, retried ones included).
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
		conflicts = float64(p.Conflicts()) / p.Span.Seconds()
	}
	p99 := "-"
	if p.Ops > 0 {
		p99 = words.Duration(p.P99)
	}
	return fmt.Sprintf("[%s]  %.0f ops/s  %.0f conflicts/s  p99 %s", clock, ops, conflicts, p99)
}

// DescribeFault says what a fault was and what it cost.
func DescribeFault(f results.Fault) string {
	at := words.Duration(f.At)
	if f.Error != "" {
		return fmt.Sprintf("%s at %s into the window could not be done: %s", f.What, at, f.Error)
	}
	s := fmt.Sprintf("%s at %s into the window", f.What, at)
	if f.Down > 0 {
		s += fmt.Sprintf("; its clients found it gone at %s", words.Duration(f.Down))
	}
	s += fmt.Sprintf("; %d of its %d clients failed over (%d requests sent again)", f.Moved, f.Clients, f.Failovers)
	if f.FailoverTime > 0 {
		s += fmt.Sprintf(", the last %s after the kill", words.Duration(f.FailoverTime))
	}
	s += fmt.Sprintf("; %d requests unanswered", f.Unanswered)
	span := func(sp results.FaultSpan) string {
		return fmt.Sprintf("%.1f ops/s, %.1f 409s/s, worst second's p99 %s (%ds)", sp.OpsPerSec, sp.ConflictsPer, words.Duration(sp.MaxP99), sp.Seconds)
	}
	if f.Before.Seconds > 0 || f.After.Seconds > 0 {
		s += fmt.Sprintf("; before: %s; after: %s", span(f.Before), span(f.After))
	}
	return s
}
