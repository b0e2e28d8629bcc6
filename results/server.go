package results

// ServerCheck compares kb-bench's own counts with the apiserver's /metrics
// for the same run.
type ServerCheck struct {
	// Available is false when /metrics could not be read (forbidden, ...).
	Available bool `json:"available"`
}
