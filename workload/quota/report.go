package quota

// Moved from results/scenarios.go: port to scenario.Report (Rows instead of WriteTable).

// QuotaReport holds the quota scenario's figures. Counts cover the whole run,
// warm-up included, because every admitted object counts against the quota;
// latencies cover the measured window only, like the summary.
type QuotaReport struct {
	// Resource is the quota'd resource, e.g. count/configmaps; Hard the limit H.
	Resource string `json:"resource"`
	Hard     int64  `json:"hard"`
	// Writers is the number of concurrent creators.
	Writers int `json:"writers"`
	// StatusInitialized is set when kb-bench filled status.hard/status.used
	// itself because no quota controller did.
	StatusInitialized bool `json:"statusInitialized"`
	// InitialUsed is the usage already in the namespace before the writers started.
	InitialUsed int64 `json:"initialUsed"`

	// Creates counts create requests; Admitted those that succeeded.
	Creates  int64 `json:"creates"`
	Admitted int64 `json:"admitted"`
	// Rejected counts 403 Forbidden "exceeded quota" answers.
	Rejected int64 `json:"rejected"`
	// Conflicts counts 409s that reached the client.
	Conflicts int64 `json:"conflicts"`
	// Errors counts every other failure (timeouts included).
	Errors int64 `json:"errors"`
	// FullAt is when the first rejection came, from the writers' start;
	// zero when the quota never filled.
	FullAt time.Duration `json:"fullAt,omitempty"`

	// ExistingAtEnd is the usage counted from the objects that exist at the end.
	ExistingAtEnd int64 `json:"existingAtEnd"`
	// UsedAtEnd is the quota's status.used at the end.
	UsedAtEnd int64 `json:"usedAtEnd"`

	// AdmittedLatency and RejectedLatency are create latencies of the
	// measured window split by answer: an admitted create writes to etcd
	// twice (quota status and object), a rejected one not at all.
	AdmittedLatency Latency `json:"admittedLatency"`
	RejectedLatency Latency `json:"rejectedLatency"`
}

// WriteTable writes the quota lines of the summary table.
func (r *QuotaReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	note := ""
	if r.StatusInitialized {
		note = ", status initialised by kb-bench"
	}
	scenarioRow(tw, "quota", fmt.Sprintf("%s hard %d, %d writers%s", r.Resource, r.Hard, r.Writers, note))
	scenarioRow(tw, "  creates", fmt.Sprintf("%d: admitted %d  rejected %d (exceeded quota)  conflicts %d  errors %d",
		r.Creates, r.Admitted, r.Rejected, r.Conflicts, r.Errors))
	if r.FullAt > 0 {
		scenarioRow(tw, "  full after", scenarioMillis(r.FullAt))
	}
	scenarioRow(tw, "  at the end", fmt.Sprintf("existing %d  status.used %d  (before the run: %d)", r.ExistingAtEnd, r.UsedAtEnd, r.InitialUsed))
	scenarioRow(tw, "  admitted latency", scenarioLatency(r.AdmittedLatency))
	scenarioRow(tw, "  rejected latency", scenarioLatency(r.RejectedLatency))
	return tw.Flush()
}

