package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Backoff is a retry schedule in the shape of client-go's wait.Backoff. It
// is parsed once, when a profile, a flag or a result is read, and written
// back the way it was given ("default-retry" or "10,5ms,1.5,0.1").
type Backoff struct {
	// Name is "default-retry" or "default-backoff" for client-go's named
	// schedules, "" for one given as numbers.
	Name     string
	Steps    int
	Duration time.Duration
	Factor   float64
	Jitter   float64
}

// Named backoffs.
var (
	// DefaultRetry is client-go's retry.DefaultRetry: 5 steps, 10ms, factor 1, jitter 0.1.
	DefaultRetry = Backoff{Name: "default-retry", Steps: 5, Duration: 10 * time.Millisecond, Factor: 1, Jitter: 0.1}
	// DefaultBackoff is client-go's retry.DefaultBackoff: 4 steps, 10ms, factor 5, jitter 0.1.
	DefaultBackoff = Backoff{Name: "default-backoff", Steps: 4, Duration: 10 * time.Millisecond, Factor: 5, Jitter: 0.1}
)

// ParseBackoff reads "default-retry", "default-backoff" or
// "STEPS,DURATION,FACTOR,JITTER" such as "10,5ms,1.5,0.1".
func ParseBackoff(s string) (Backoff, error) {
	switch s {
	case DefaultRetry.Name:
		return DefaultRetry, nil
	case DefaultBackoff.Name:
		return DefaultBackoff, nil
	}
	usage := fmt.Sprintf("%q is not a backoff: use default-retry, default-backoff or STEPS,DURATION,FACTOR,JITTER such as 10,5ms,1.5,0.1", s)
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

// String returns the backoff the way ParseBackoff reads it.
func (b Backoff) String() string {
	if b.Name != "" {
		return b.Name
	}
	return fmt.Sprintf("%d,%s,%g,%g", b.Steps, b.Duration, b.Factor, b.Jitter)
}

// MarshalText writes the backoff as String does.
func (b Backoff) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses the backoff with ParseBackoff.
func (b *Backoff) UnmarshalText(text []byte) error {
	v, err := ParseBackoff(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}
