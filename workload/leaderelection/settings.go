package leaderelection

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kb-bench/kb-bench/results"
	"github.com/kb-bench/kb-bench/spec"
)

// Settings are the leader-election scenario's own settings: client-go's
// LeaderElectionConfig timings, and how the scenario stops leaders.
type Settings struct {
	// LeaseDuration is how long a Lease is valid without renewal. The
	// Lease records it in whole seconds, and followers wait that long.
	LeaseDuration spec.Duration `json:"leaseDuration" flag:"lease-duration" help:"how long the Lease is valid without a renewal (the Lease records whole seconds)"`
	// RenewDeadline is how long the leader retries a renewal before it
	// gives up leading.
	RenewDeadline spec.Duration `json:"renewDeadline" flag:"renew-deadline" help:"how long the leader retries a renewal before it gives up leading"`
	// RetryPeriod is how often candidates try to acquire or renew.
	RetryPeriod spec.Duration `json:"retryPeriod" flag:"retry-period" help:"how often candidates try to acquire or renew the Lease"`
	// FailoverEvery, when set, stops the leader this often after the
	// warm-up; it rejoins as a new candidate. Zero never stops it.
	FailoverEvery spec.Duration `json:"failoverEvery,omitzero" flag:"failover-every" help:"stop the leader this often and restart it as a candidate (0: never)"`
	// ReleaseOnCancel makes a stopped leader release the Lease.
	ReleaseOnCancel bool `json:"releaseOnCancel,omitempty" flag:"release-on-cancel" help:"a stopped leader releases the Lease, so a follower takes over at once"`
}

// Default fills the zero timings with client-go-like defaults, shortened
// so that a run of seconds sees failovers.
func (c *Settings) Default(*spec.Spec) {
	if c.LeaseDuration.Duration == 0 {
		c.LeaseDuration = spec.D(4 * time.Second)
	}
	if c.RenewDeadline.Duration == 0 {
		c.RenewDeadline = spec.D(3 * time.Second)
	}
	if c.RetryPeriod.Duration == 0 {
		c.RetryPeriod = spec.D(500 * time.Millisecond)
	}
}

// Validate checks client-go's rules for the timings (NewLeaderElector's),
// and one of the Lease's: it records the lease duration in whole seconds,
// and followers wait that long.
func (c *Settings) Validate(_ *spec.Spec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	recorded := c.LeaseDuration.Truncate(time.Second)
	switch {
	case c.LeaseDuration.Duration < time.Second:
		errs = append(errs, field.Invalid(p.Child("leaseDuration"), c.LeaseDuration.String(),
			"the Lease records whole seconds: use at least 1s (--lease-duration)"))
	case recorded <= c.RenewDeadline.Duration:
		errs = append(errs, field.Invalid(p.Child("leaseDuration"), c.LeaseDuration.String(),
			fmt.Sprintf("is recorded as %s in the Lease, which is not longer than renewDeadline %s: raise --lease-duration or lower --renew-deadline", recorded, c.RenewDeadline)))
	case c.RetryPeriod.Duration <= 0:
		errs = append(errs, field.Invalid(p.Child("retryPeriod"), c.RetryPeriod.String(), "use a positive duration, e.g. 500ms (--retry-period)"))
	case float64(c.RenewDeadline.Duration) <= leaderelection.JitterFactor*float64(c.RetryPeriod.Duration):
		errs = append(errs, field.Invalid(p.Child("renewDeadline"), c.RenewDeadline.String(),
			fmt.Sprintf("must be longer than %g x retryPeriod %s (client-go's rule): lower --retry-period or raise --renew-deadline", leaderelection.JitterFactor, c.RetryPeriod)))
	}
	if c.FailoverEvery.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("failoverEvery"), c.FailoverEvery.String(), "use 0 (never) or a positive duration (--failover-every)"))
	}
	return errs
}

// Describe is the run in a few words, e.g. "3 candidates on one Lease,
// lease 4s, renew 3s, retry 500ms".
func (c *Settings) Describe(s *spec.Spec) string {
	d := fmt.Sprintf("%s on one Lease, lease %s, renew %s, retry %s",
		results.Plural(s.Writers, "candidate"), c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	if c.FailoverEvery.Duration > 0 {
		d += ", leader stopped every " + c.FailoverEvery.String()
	}
	if c.ReleaseOnCancel {
		d += ", release on cancel"
	}
	return d
}

// leaseSeconds is the lease duration as the Lease records it: whole
// seconds (Validate has checked that it is at least one).
func (c *Settings) leaseSeconds() int { return int(c.LeaseDuration.Duration / time.Second) }
