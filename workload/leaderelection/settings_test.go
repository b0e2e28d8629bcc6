package leaderelection

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kb-bench/kb-bench/spec"
	"github.com/kb-bench/kb-bench/workload/scenario"
)

func TestSettingsDefault(t *testing.T) {
	var c Settings
	c.Default(&spec.Spec{})
	want := Settings{LeaseDuration: spec.D(4 * time.Second), RenewDeadline: spec.D(3 * time.Second), RetryPeriod: spec.D(500 * time.Millisecond), Lock: LockClientGo}
	if c != want {
		t.Errorf("defaults %+v, want %+v", c, want)
	}
	if errs := c.Validate(&spec.Spec{}, field.NewPath("settings")); len(errs) > 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
}

func TestSettingsValidate(t *testing.T) {
	timings := func(lease, renew, retry time.Duration) Settings {
		return Settings{LeaseDuration: spec.D(lease), RenewDeadline: spec.D(renew), RetryPeriod: spec.D(retry)}
	}
	tests := []struct {
		name string
		set  Settings
		// field and message parts of the one error; "" for none.
		field, says string
	}{
		{"short but valid", timings(2*time.Second, time.Second, 200*time.Millisecond), "", ""},
		{"fractional lease, truncated but still longer than the renew deadline", timings(2500*time.Millisecond, 1200*time.Millisecond, 200*time.Millisecond), "", ""},
		{"lease under a second", timings(500*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond), "settings.leaseDuration", "--lease-duration"},
		{"lease recorded as no longer than the renew deadline", timings(2500*time.Millisecond, 2*time.Second, 200*time.Millisecond), "settings.leaseDuration", "recorded as 2s"},
		{"lease equal to the renew deadline", timings(3*time.Second, 3*time.Second, 200*time.Millisecond), "settings.leaseDuration", "--renew-deadline"},
		{"renew deadline within client-go's jitter of the retry period", timings(4*time.Second, time.Second, 900*time.Millisecond), "settings.renewDeadline", "1.2 x retryPeriod"},
		{"negative retry period", timings(4*time.Second, time.Second, -time.Second), "settings.retryPeriod", "--retry-period"},
		{"negative failover interval", Settings{LeaseDuration: spec.D(4 * time.Second), RenewDeadline: spec.D(3 * time.Second), RetryPeriod: spec.D(500 * time.Millisecond), FailoverEvery: spec.D(-time.Second)}, "settings.failoverEvery", "--failover-every"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOneError(t, tt.set.Validate(&spec.Spec{}, field.NewPath("settings")), tt.field, tt.says)
		})
	}
}

// A bad lease and a bad retry period are named together, so that a user
// fixes both at once rather than meeting the second on the next try.
func TestSettingsValidateNamesLeaseAndRetryTogether(t *testing.T) {
	set := Settings{LeaseDuration: spec.D(500 * time.Millisecond), RenewDeadline: spec.D(300 * time.Millisecond), RetryPeriod: spec.D(-time.Second)}
	errs := set.Validate(&spec.Spec{}, field.NewPath("settings"))
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if want := []string{"settings.leaseDuration", "settings.retryPeriod"}; !slices.Equal(fields, want) {
		t.Errorf("errors on %v (%v), want on %v", fields, errs, want)
	}
}

// wantOneError wants no error when path is "", else exactly one, on path,
// whose message holds says.
func wantOneError(t *testing.T, errs field.ErrorList, path, says string) {
	t.Helper()
	if path == "" {
		if len(errs) > 0 {
			t.Errorf("errors %v, want none", errs)
		}
		return
	}
	if len(errs) != 1 || errs[0].Field != path || !strings.Contains(errs[0].Error(), says) {
		t.Errorf("errors %v, want one on %s saying %q", errs, path, says)
	}
}

func TestFractionalLeaseWarns(t *testing.T) {
	tests := []struct {
		lease   time.Duration
		secs    int
		warning string // a substring; "" for none
	}{
		{4 * time.Second, 4, ""},
		{2500 * time.Millisecond, 2, "recorded in the Lease as 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.lease.String(), func(t *testing.T) {
			var warnings []string
			env := &scenario.Env{Spec: spec.Spec{Writers: 2}, Warn: func(format string, a ...any) {
				warnings = append(warnings, fmt.Sprintf(format, a...))
			}}
			set := &Settings{LeaseDuration: spec.D(tt.lease)}
			set.Default(&env.Spec)
			r := newElection(env, set)
			if r.set.leaseSeconds() != tt.secs {
				t.Errorf("lease recorded as %ds, want %ds", r.set.leaseSeconds(), tt.secs)
			}
			switch {
			case tt.warning == "" && len(warnings) > 0:
				t.Errorf("warnings %q, want none", warnings)
			case tt.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tt.warning)):
				t.Errorf("warnings %q, want one saying %q", warnings, tt.warning)
			}
		})
	}
}

func TestSettingsDescribe(t *testing.T) {
	c := Settings{LeaseDuration: spec.D(2 * time.Second), RenewDeadline: spec.D(time.Second), RetryPeriod: spec.D(200 * time.Millisecond),
		FailoverEvery: spec.D(time.Second), ReleaseOnCancel: true}
	want := "3 candidates on one Lease, lease 2s, renew 1s, retry 200ms, leader stopped every 1s, release on cancel"
	if got := c.Describe(&spec.Spec{Writers: 3}); got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	// A repeated fault replaces stopping the leader; skew does not.
	c.ReleaseOnCancel, c.Fault, c.FaultDuration = false, FaultPause, spec.D(4*time.Second)
	want = "3 candidates on one Lease, lease 2s, renew 1s, retry 200ms, fault pause for 4s every 1s"
	if got := c.Describe(&spec.Spec{Writers: 3}); got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	c.Fault, c.FaultDuration = FaultSkew, spec.D(time.Second)
	want = "3 candidates on one Lease, lease 2s, renew 1s, retry 200ms, leader stopped every 1s, fault skew (one candidate with lease 1s)"
	if got := c.Describe(&spec.Spec{Writers: 3}); got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}
