// Package words renders numbers for people: counts with their noun,
// shares as percentages, durations at a precision that suits their size.
package words

import (
	"fmt"
	"strings"
	"time"
)

// Percent is a share (0.123) as a percentage: "12.3%".
func Percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// Plural is "1 writer" or "n writers"; a word that ends in s ("series")
// is its own plural.
func Plural(n int, what string) string {
	if n == 1 || strings.HasSuffix(what, "s") {
		return fmt.Sprintf("%d %s", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Duration renders a latency with a precision that suits its size.
func Duration(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "0s"
	case d > -time.Microsecond && d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d > -100*time.Microsecond && d < 100*time.Microsecond:
		// In ms these would show as 0.00ms: the unit that shows them.
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
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
