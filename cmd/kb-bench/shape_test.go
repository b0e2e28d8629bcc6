package main

import (
	"errors"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results/store"
)

// Three apiservers on one etcd: the clients are spread over them, the
// server cross-check adds every apiserver's counters and matches
// kb-bench's own counts exactly, and every apiserver served writes.
func TestSeveralAPIServersAddUp(t *testing.T) {
	bin, cpBin := binary(t)
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "result")
	cmd, stdout, _ := start(t, bin, cpBin, tmp, out, "--writers", "6", "--apiservers", "3", "--duration", "3s")
	if procs := controlPlaneProcs(t, tmp); len(procs) != 4 {
		t.Errorf("want etcd and 3 kube-apiservers running, found %v", procs)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kb-bench run: %v\n%s", err, stdout)
	}
	r, err := store.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Target.APIServers) != 3 || r.Spec.Clients != 3 {
		t.Fatalf("target apiservers %v, clients %d: want 3 of each (one client per apiserver by default)", r.Target.APIServers, r.Spec.Clients)
	}
	ports := map[string]bool{}
	for _, s := range r.Target.APIServers {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		ports[u.Port()] = true
	}
	if len(ports) != 3 {
		t.Errorf("apiservers %v: want 3 distinct ports", r.Target.APIServers)
	}
	c := r.Server
	if c == nil || !c.Available || !c.Match {
		t.Fatalf("server cross-check %+v: want it available and matching", c)
	}
	if len(c.APIServers) != 3 {
		t.Fatalf("shares %+v: want one per apiserver", c.APIServers)
	}
	// What the cross-check compares (the sums of the apiservers'
	// counters) is exactly kb-bench's count, and each apiserver's share
	// adds up to it.
	var puts200, puts409, shareWrites, shareConflicts, shareRequests, clientRequests int64
	for _, rc := range c.Requests {
		clientRequests += rc.Client
		if rc.Verb == "PUT" && rc.Code == "200" {
			puts200 = rc.Server
		}
		if rc.Verb == "PUT" && rc.Code == "409" {
			puts409 = rc.Server
		}
	}
	for _, sh := range c.APIServers {
		shareWrites += sh.Writes
		shareConflicts += sh.Conflicts
		shareRequests += sh.Requests
		if sh.Writes == 0 {
			t.Errorf("apiserver %s served no successful write: the clients are not spread over every apiserver (%+v)", sh.Server, c.APIServers)
		}
	}
	if puts200 != r.Summary.Successes || puts200 != shareWrites || puts409 != r.Summary.Outcomes["conflict"] || puts409 != shareConflicts || shareRequests != clientRequests {
		t.Errorf("PUT 200 %d, PUT 409 %d, requests %d counted by the apiservers; kb-bench: %d successes, %d conflicts; shares add to %d writes, %d 409s, %d requests",
			puts200, puts409, clientRequests, r.Summary.Successes, r.Summary.Outcomes["conflict"], shareWrites, shareConflicts, shareRequests)
	}
	if !strings.Contains(stdout.String(), "apiservers    https://127.0.0.1:") {
		t.Errorf("the summary does not show each apiserver's share:\n%s", stdout)
	}
	waitClean(t, tmp)
}

// Every apiserver and the delaying proxy stop with kb-bench on Ctrl-C,
// and the janitor cleans up after kill -9.
func TestSeveralAPIServersLeaveNothing(t *testing.T) {
	bin, cpBin := binary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "result")
			cmd, _, lines := start(t, bin, cpBin, tmp, out, "--writers", "3", "--apiservers", "3", "--etcd-latency", "2ms", "--duration", "5m")
			for line := range lines {
				if strings.HasPrefix(line, "[") {
					break // the measured window is under way
				}
			}
			if procs := controlPlaneProcs(t, tmp); len(procs) != 4 {
				t.Errorf("want etcd and 3 kube-apiservers running, found %v", procs)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var exit *exec.ExitError
				if sig == syscall.SIGINT && (!errors.As(err, &exit) || exit.ExitCode() != 130) {
					t.Errorf("kb-bench after SIGINT: %v, want exit status 130 (interrupted)", err)
				}
			case <-time.After(90 * time.Second):
				t.Fatalf("kb-bench did not stop within 90s of %s", sig)
			}
			waitClean(t, tmp)
		})
	}
}
