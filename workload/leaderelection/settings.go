package leaderelection

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kb-bench/kb-bench/internal/words"
	"github.com/kb-bench/kb-bench/spec"
)

// Settings are the leader-election scenario's own settings: client-go's
// LeaderElectionConfig timings, and how the scenario stops leaders. Each
// field's help tag, its flag's help, says what it is.
type Settings struct {
	LeaseDuration   spec.Duration `json:"leaseDuration" flag:"lease-duration" help:"how long the Lease is valid without a renewal (the Lease records whole seconds)"`
	RenewDeadline   spec.Duration `json:"renewDeadline" flag:"renew-deadline" help:"how long the leader retries a renewal before it gives up leading"`
	RetryPeriod     spec.Duration `json:"retryPeriod" flag:"retry-period" help:"how often candidates try to acquire or renew the Lease"`
	FailoverEvery   spec.Duration `json:"failoverEvery,omitzero" flag:"failover-every" help:"stop the leader this often and restart it as a candidate, or inject --fault this often (0: never)"`
	ReleaseOnCancel bool          `json:"releaseOnCancel,omitempty" flag:"release-on-cancel" help:"a stopped leader releases the Lease, so a follower takes over at once"`

	Lock          string        `json:"lock,omitempty" flag:"lock" help:"the lock implementation: client-go (tools/leaderelection) or watch (a raw Lease lock that watches the Lease and steps down when another holder appears)"`
	Fault         string        `json:"fault,omitempty" flag:"fault" help:"the fault injected instead of stopping the leader: none, pause (SIGSTOP of the leader's process), partition (its requests held), skew, delete, edit"`
	FaultAt       spec.Duration `json:"faultAt,omitzero" flag:"fault-at" help:"inject the fault once, this long into the measured window (0: every --failover-every)"`
	FaultDuration spec.Duration `json:"faultDuration,omitzero" flag:"fault-duration" help:"pause: how long the leader is frozen; partition: how long its requests are held; skew: the skewed candidate's lease duration"`
	LeaderWrites  spec.Duration `json:"leaderWrites,omitzero" flag:"leader-writes" help:"how often a leader writes the fenced ConfigMap kb-bench-fenced with its fencing token (0: never; 100ms with a fault)"`
}

// The lock implementations.
const (
	LockClientGo = "client-go"
	LockWatch    = "watch"
)

// The faults.
const (
	FaultNone      = "none"
	FaultPartition = "partition"
	FaultSkew      = "skew"
	FaultDelete    = "delete"
	FaultEdit      = "edit"
	FaultPause     = "pause"
)

// fault is the fault to inject, "" for none.
func (c *Settings) fault() string {
	if c.Fault == FaultNone {
		return ""
	}
	return c.Fault
}

// Default fills the zero timings with client-go-like defaults, shortened
// so that a run of seconds sees failovers.
func (c *Settings) Default(*spec.Spec) {
	c.LeaseDuration = cmp.Or(c.LeaseDuration, spec.D(4*time.Second))
	c.RenewDeadline = cmp.Or(c.RenewDeadline, spec.D(3*time.Second))
	c.RetryPeriod = cmp.Or(c.RetryPeriod, spec.D(500*time.Millisecond))
	c.Lock = cmp.Or(c.Lock, LockClientGo)
	if c.fault() != "" && c.LeaderWrites.Duration == 0 {
		c.LeaderWrites = spec.D(100 * time.Millisecond)
	}
}

// Validate checks client-go's rules for the timings (NewLeaderElector's),
// and one of the Lease's: it records the lease duration in whole seconds,
// and followers wait that long.
func (c *Settings) Validate(s *spec.Spec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	recorded := c.LeaseDuration.Truncate(time.Second)
	switch {
	case c.LeaseDuration.Duration < time.Second:
		errs = append(errs, field.Invalid(p.Child("leaseDuration"), c.LeaseDuration.String(),
			"the Lease records whole seconds: use at least 1s (--lease-duration)"))
	case recorded <= c.RenewDeadline.Duration:
		errs = append(errs, field.Invalid(p.Child("leaseDuration"), c.LeaseDuration.String(),
			fmt.Sprintf("is recorded as %s in the Lease, which is not longer than renewDeadline %s: raise --lease-duration or lower --renew-deadline", recorded, c.RenewDeadline)))
	}
	// The retry period's rules stand apart from the lease's: a bad one is
	// named beside a bad lease, not after it is fixed.
	switch {
	case c.RetryPeriod.Duration <= 0:
		errs = append(errs, field.Invalid(p.Child("retryPeriod"), c.RetryPeriod.String(), "use a positive duration, e.g. 500ms (--retry-period)"))
	case float64(c.RenewDeadline.Duration) <= leaderelection.JitterFactor*float64(c.RetryPeriod.Duration):
		errs = append(errs, field.Invalid(p.Child("renewDeadline"), c.RenewDeadline.String(),
			fmt.Sprintf("must be longer than %g x retryPeriod %s (client-go's rule): lower --retry-period or raise --renew-deadline", leaderelection.JitterFactor, c.RetryPeriod)))
	}
	if c.FailoverEvery.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("failoverEvery"), c.FailoverEvery.String(), "use 0 (never) or a positive duration (--failover-every)"))
	}
	if c.LeaderWrites.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("leaderWrites"), c.LeaderWrites.String(), "use 0 (never) or a positive interval, e.g. 100ms (--leader-writes)"))
	}
	if c.FaultAt.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("faultAt"), c.FaultAt.String(), "use a positive offset from the start of the measured window, e.g. 2s (--fault-at)"))
	}
	if c.FaultDuration.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("faultDuration"), c.FaultDuration.String(), "use a positive duration (--fault-duration)"))
	}
	if !slices.Contains([]string{"", LockClientGo, LockWatch}, c.Lock) { // "" is client-go before Default
		errs = append(errs, field.NotSupported(p.Child("lock"), c.Lock, []string{LockClientGo, LockWatch}))
	}
	errs = append(errs, c.validateFault(s, p)...)
	return errs
}

// validateFault checks that the fault can do what it is for with these
// settings, and says what to use when it cannot.
func (c *Settings) validateFault(s *spec.Spec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	fault := c.fault()
	recorded := c.LeaseDuration.Truncate(time.Second)
	switch fault {
	case "":
		if c.FaultAt.Duration != 0 || c.FaultDuration.Duration != 0 {
			errs = append(errs, field.Forbidden(p.Child("fault"), "--fault-at and --fault-duration need a fault: use --fault partition, skew, delete or edit"))
		}
		return errs
	case FaultPartition, FaultPause, FaultSkew, FaultDelete, FaultEdit:
	default:
		return append(errs, field.NotSupported(p.Child("fault"), c.Fault, []string{FaultNone, FaultPause, FaultPartition, FaultSkew, FaultDelete, FaultEdit}))
	}
	if s != nil && s.Writers < 2 {
		errs = append(errs, field.Invalid(field.NewPath("writers"), s.Writers, "a fault needs another candidate to take over: use at least 2 (--writers)"))
	}
	switch fault {
	case FaultPartition, FaultPause:
		if c.FaultDuration.Duration <= recorded {
			errs = append(errs, field.Invalid(p.Child("faultDuration"), c.FaultDuration.String(),
				fmt.Sprintf("a %s must outlast the lease (%s as the Lease records it) for another candidate to take it: use at least %s (--fault-duration)", fault, recorded, recorded+c.RetryPeriod.Duration)))
		}
	case FaultSkew:
		d := c.FaultDuration.Duration
		switch {
		case d < time.Second || d%time.Second != 0:
			errs = append(errs, field.Invalid(p.Child("faultDuration"), c.FaultDuration.String(),
				"skew runs one candidate with this lease duration, which the Lease records in whole seconds: use e.g. 1s (--fault-duration)"))
		case d >= recorded:
			errs = append(errs, field.Invalid(p.Child("faultDuration"), c.FaultDuration.String(),
				fmt.Sprintf("the skewed candidate's lease must be shorter than the others' %s: use e.g. %s (--fault-duration)", recorded, recorded-time.Second)))
		case d <= c.RenewDeadline.Duration:
			errs = append(errs, field.Invalid(p.Child("faultDuration"), c.FaultDuration.String(),
				fmt.Sprintf("the skewed candidate's lease must be longer than renewDeadline %s (client-go's rule): lower --renew-deadline", c.RenewDeadline)))
		}
	default:
		if c.FaultDuration.Duration != 0 {
			errs = append(errs, field.Forbidden(p.Child("faultDuration"), fault+" is instantaneous: drop --fault-duration"))
		}
	}
	if fault != FaultSkew && c.FaultAt.Duration == 0 && c.FailoverEvery.Duration == 0 {
		errs = append(errs, field.Required(p.Child("faultAt"), "say when to inject the fault: --fault-at (once) or --failover-every (repeatedly)"))
	}
	// A fault is injected only when its end and the Lease changing hands
	// after it fall in the measured window (failoverLoop): one asked for
	// at a time that leaves no room would silently not happen.
	if need := c.FaultAt.Duration + c.seenAfterFault(); fault != FaultSkew && c.FaultAt.Duration > 0 && s != nil && s.Duration.Duration > 0 && need > s.Duration.Duration {
		what := fmt.Sprintf("the %s at %s", fault, c.FaultAt)
		if c.FaultDuration.Duration > 0 {
			what += ", its " + c.FaultDuration.String()
		}
		errs = append(errs, field.Invalid(p.Child("faultAt"), c.FaultAt.String(),
			fmt.Sprintf("%s and a lease of %s after it must fit in the %s measured window, or it is not injected: use --duration %s or more, or an earlier --fault-at", what, c.LeaseDuration, s.Duration, need)))
	}
	if (fault == FaultPartition || fault == FaultPause) && c.FaultAt.Duration == 0 && c.FailoverEvery.Duration > 0 && c.FailoverEvery.Duration <= c.FaultDuration.Duration {
		errs = append(errs, field.Invalid(p.Child("failoverEvery"), c.FailoverEvery.String(),
			fmt.Sprintf("a %s repeats only after the previous one ended: use more than --fault-duration %s", fault, c.FaultDuration)))
	}
	return errs
}

// seenAfterFault is how much of the measured window a fault needs after
// it starts for what follows it to be seen: its own end, and the Lease
// changing hands a lease later. failoverLoop injects no fault with less
// left; Validate refuses a --fault-at that leaves less.
func (c *Settings) seenAfterFault() time.Duration {
	return c.FaultDuration.Duration + c.LeaseDuration.Duration
}

// Describe is the run in a few words, e.g. "3 candidates on one Lease,
// lease 4s, renew 3s, retry 500ms".
func (c *Settings) Describe(s *spec.Spec) string {
	d := fmt.Sprintf("%s on one Lease, lease %s, renew %s, retry %s",
		words.Plural(s.Writers, "candidate"), c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	fault := c.fault()
	if c.FailoverEvery.Duration > 0 && (fault == "" || fault == FaultSkew) {
		d += ", leader stopped every " + c.FailoverEvery.String()
	}
	if c.ReleaseOnCancel {
		d += ", release on cancel"
	}
	if c.Lock == LockWatch {
		d += ", watch lock"
	}
	switch fault {
	case "":
	case FaultSkew:
		d += fmt.Sprintf(", fault skew (one candidate with lease %s)", c.FaultDuration)
	default:
		d += ", fault " + fault
		if c.FaultDuration.Duration > 0 {
			d += " for " + c.FaultDuration.String()
		}
		if c.FaultAt.Duration > 0 {
			d += " at " + c.FaultAt.String()
		} else {
			d += " every " + c.FailoverEvery.String()
		}
	}
	return d
}

// leaseSeconds is the lease duration as the Lease records it: whole
// seconds (Validate has checked that it is at least one).
func (c *Settings) leaseSeconds() int { return int(c.LeaseDuration.Duration / time.Second) }
