package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Backoff is a retry schedule in the shape of client-go's wait.Backoff.
type Backoff struct {
	Steps    int           `json:"steps"`
	Duration time.Duration `json:"duration"`
	Factor   float64       `json:"factor"`
	Jitter   float64       `json:"jitter"`
}

// ParseBackoff reads "default-retry" (client-go retry.DefaultRetry: 5 steps,
// 10ms, factor 1, jitter 0.1), "default-backoff" (retry.DefaultBackoff: 4
// steps, 10ms, factor 5, jitter 0.1) or "STEPS,DURATION,FACTOR,JITTER" such
// as "10,5ms,1.5,0.1".
func ParseBackoff(s string) (Backoff, error) {
	switch s {
	case "default-retry", "":
		return Backoff{Steps: 5, Duration: 10 * time.Millisecond, Factor: 1, Jitter: 0.1}, nil
	case "default-backoff":
		return Backoff{Steps: 4, Duration: 10 * time.Millisecond, Factor: 5, Jitter: 0.1}, nil
	}
	usage := fmt.Sprintf("backoff %q (--backoff) is not valid: use default-retry, default-backoff or STEPS,DURATION,FACTOR,JITTER such as 10,5ms,1.5,0.1", s)
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return Backoff{}, fmt.Errorf("%s", usage)
	}
	steps, err := strconv.Atoi(strings.TrimSpace(parts[0]))
	if err != nil || steps < 1 {
		return Backoff{}, fmt.Errorf("%s (STEPS must be a whole number >= 1)", usage)
	}
	d, err := time.ParseDuration(strings.TrimSpace(parts[1]))
	if err != nil || d < 0 {
		return Backoff{}, fmt.Errorf("%s (DURATION must be a duration such as 10ms)", usage)
	}
	factor, err := strconv.ParseFloat(strings.TrimSpace(parts[2]), 64)
	if err != nil || !(factor >= 0) || math.IsInf(factor, 0) {
		return Backoff{}, fmt.Errorf("%s (FACTOR must be a number >= 0)", usage)
	}
	jitter, err := strconv.ParseFloat(strings.TrimSpace(parts[3]), 64)
	if err != nil || !(jitter >= 0) || math.IsInf(jitter, 0) {
		return Backoff{}, fmt.Errorf("%s (JITTER must be a number >= 0)", usage)
	}
	return Backoff{Steps: steps, Duration: d, Factor: factor, Jitter: jitter}, nil
}
