package spec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDefaultIsValid(t *testing.T) {
	s := Default()
	if err := s.Validate(); err != nil {
		t.Fatalf("default spec is invalid: %v", err)
	}
	if s.Writers != DefaultWriters || s.Strategy != StrategyUpdate || s.Target.Kind != TargetLocal || s.Client.QPS != -1 {
		t.Fatalf("unexpected defaults: %+v", s)
	}
}

func TestDefaultsKeepSetValues(t *testing.T) {
	s := Spec{Writers: 3, Strategy: StrategyRetry, Backoff: "default-backoff", Duration: D(time.Second)}
	s.Defaults()
	if s.Writers != 3 || s.Backoff != "default-backoff" || s.Duration.Duration != time.Second {
		t.Fatalf("Defaults overrode set values: %+v", s)
	}
}

func TestValidate(t *testing.T) {
	lease := func(lease, renew, retry time.Duration) func(*Spec) {
		return func(s *Spec) {
			s.Scenario = ScenarioLeaderElection
			s.LeaderElection = &LeaderElection{LeaseDuration: D(lease), RenewDeadline: D(renew), RetryPeriod: D(retry)}
		}
	}
	cases := []struct {
		name string
		edit func(*Spec)
		want string // substring of the error; "" means valid
	}{
		{"default", func(*Spec) {}, ""},
		{"zero writers", func(s *Spec) { s.Writers = -1 }, "writers is -1 (--writers): it must be at least 1"},
		{"unknown strategy", func(s *Spec) { s.Strategy = "put" }, `strategy "put" is not known (--strategy): use one of update, retry, patch, ssa`},
		{"zipf exponent", func(s *Spec) { s.Distribution = Distribution{Kind: DistZipf, ZipfExponent: 1} }, "must be greater than 1"},
		{"rate with think time", func(s *Spec) { s.Rate = 10; s.MaxInFlight = 1; s.ThinkTime = D(time.Millisecond) }, "rate and thinkTime both set"},
		{"unconditional patch", func(s *Spec) { s.Strategy = StrategyPatch; s.PatchType = PatchMerge; s.Unconditional = true }, "unconditional applies only to strategy update"},
		{"json patch precondition", func(s *Spec) { s.Strategy = StrategyPatch; s.PatchType = PatchJSON; s.PatchPrecondition = true }, "a json patch already carries a test op"},
		{"bad backoff", func(s *Spec) { s.Strategy = StrategyRetry; s.Backoff = "3,x,1,0" }, "DURATION must be a duration"},
		{"qps without burst", func(s *Spec) { s.Client.QPS = 5 }, "needs --burst of at least 1"},
		{"kubeconfig unnamed", func(s *Spec) { s.Target = Target{Kind: TargetKubeconfig} }, "pass --kubeconfig PATH"},
		{"context only", func(s *Spec) { s.Target = Target{Kind: TargetKubeconfig, Context: "staging"} }, ""},
		{"more clients than writers", func(s *Spec) { s.Clients = 9 }, "clients is 9 (--clients)"},
		{"no bound", func(s *Spec) { s.Duration = Duration{} }, "the run has no bound"},
		{"lease under a second", lease(900*time.Millisecond, 600*time.Millisecond, 100*time.Millisecond), "use at least 1s"},
		{"lease truncated below renew", lease(1500*time.Millisecond, 1200*time.Millisecond, 200*time.Millisecond), "recorded as 1s in the Lease"},
		{"lease truncated but safe", lease(2500*time.Millisecond, 1200*time.Millisecond, 200*time.Millisecond), ""},
		{"retry too close to renew", lease(2*time.Second, 1100*time.Millisecond, time.Second), "1.2 x retryPeriod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Default()
			c.edit(&s)
			err := s.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("want error containing %q, got none", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestParseBackoff(t *testing.T) {
	cases := []struct {
		in      string
		want    Backoff
		wantErr bool
	}{
		{"default-retry", Backoff{5, 10 * time.Millisecond, 1, 0.1}, false},
		{"default-backoff", Backoff{4, 10 * time.Millisecond, 5, 0.1}, false},
		{"10,5ms,1.5,0.2", Backoff{10, 5 * time.Millisecond, 1.5, 0.2}, false},
		{" 3 , 1s , 2 , 0 ", Backoff{3, time.Second, 2, 0}, false},
		{"0,5ms,1,0", Backoff{}, true},
		{"3,5ms,1", Backoff{}, true},
		{"fast", Backoff{}, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseBackoff(c.in)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, c.wantErr)
			}
			if err == nil && got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(struct{ D Duration }{D(1500 * time.Millisecond)})
	if err != nil || string(b) != `{"D":"1.5s"}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var v struct{ D Duration }
	if err := json.Unmarshal([]byte(`{"D":"2m"}`), &v); err != nil || v.D.Duration != 2*time.Minute {
		t.Fatalf("unmarshal: %v %v", v.D, err)
	}
	if err := json.Unmarshal([]byte(`{"D":"soon"}`), &v); err == nil {
		t.Fatal("want an error for an invalid duration")
	}
}

func TestInputError(t *testing.T) {
	if IsInput(nil) || Input(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	err := Input(errFake("bad flag"))
	if !IsInput(err) || err.Error() != "bad flag" {
		t.Fatalf("got %v", err)
	}
}

type errFake string

func (e errFake) Error() string { return string(e) }
