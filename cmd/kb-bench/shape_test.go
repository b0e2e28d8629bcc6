package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/internal/await"
	"github.com/kb-bench/kb-bench/results/resultstest"
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
	r, err := store.Read(t.Context(), out)
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
	if err := resultstest.ServerAgrees(c); err != nil {
		t.Fatalf("server cross-check: %v: want it available and matching", err)
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
			err := await.Recv(t, fmt.Sprintf("kb-bench to stop after %s", sig), done)
			var exit *exec.ExitError
			if sig == syscall.SIGINT && (!errors.As(err, &exit) || exit.ExitCode() != 130) {
				t.Errorf("kb-bench after SIGINT: %v, want exit status 130 (interrupted)", err)
			}
			waitClean(t, tmp)
		})
	}
}

// comparison is what `kb-bench compare --format json` prints, as far as
// these tests read it.
type comparison struct {
	Rows []struct {
		Metric string `json:"metric"`
		Cells  []struct {
			Median      float64 `json:"median"`
			Delta       float64 `json:"delta"`
			P           float64 `json:"p"`
			Significant bool    `json:"significant"`
		} `json:"cells"`
	} `json:"rows"`
}

// rose says whether metric rose significantly from the first side to the
// second, and how.
func (c comparison) rose(metric string) (bool, string) {
	for _, r := range c.Rows {
		if r.Metric == metric && len(r.Cells) == 2 {
			a, b := r.Cells[0], r.Cells[1]
			return b.Significant && b.Delta > 0, fmt.Sprintf("%s %.4g -> %.4g (p=%.3f)", metric, a.Median, b.Median, b.P)
		}
	}
	return false, metric + " not compared"
}

// etcdMean is the apiserver's mean etcd request duration for operation
// on configmaps in the result in dir.
func etcdMean(t *testing.T, dir, operation string) time.Duration {
	t.Helper()
	r, err := store.Read(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Server == nil {
		t.Fatalf("%s: no server cross-check", dir)
	}
	for _, e := range r.Server.Etcd {
		if e.Resource == "configmaps" && e.Operation == operation {
			return e.Mean
		}
	}
	t.Fatalf("%s: the apiserver counted no etcd %s on configmaps: %+v", dir, operation, r.Server.Etcd)
	return 0
}

// With 5ms between the apiserver and etcd, the apiserver's own etcd
// request durations rise by about that much, and the update strategy's
// conflict rate and median latency rise significantly against the same
// load without it: an interleaved A/B run of 7 samples a side, each on
// a control plane of its own, judged by compare's Mann-Whitney U. The
// load is an open loop that leaves the apiserver slack, so that a longer
// read-to-write window shows as more 409s (a closed loop on one object
// already loses nearly every race).
func TestEtcdLatencyRaisesConflicts(t *testing.T) {
	bin, cpBin := binary(t)
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "ab")
	// 200 operations/s: on a quiet machine 100/s left so much slack that
	// 5ms took the conflict rate only from 2% to 7% (p=0.056). 7 samples
	// a side: on shared cores one sample in five can stall, and its
	// backlog moves an open loop's latencies by far more than 5ms.
	cmd, stdout, _ := start(t, bin, cpBin, tmp, out, "--writers", "8", "--rate", "200", "--duration", "3s", "--count", "7",
		"--etcd-latency", "5ms", "--baseline-with", "etcd-latency=0s")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kb-bench run: %v\n%s", err, stdout)
	}
	samples := func(side string) []string {
		m, _ := filepath.Glob(filepath.Join(out, side, "*", store.ResultFile))
		if len(m) != 7 {
			t.Fatalf("%s: %d samples, want 7", side, len(m))
		}
		for i := range m {
			m[i] = filepath.Dir(m[i])
		}
		return m
	}
	// Per side, the median over its samples of the apiserver's mean etcd
	// request duration: a busy machine moves one sample's by milliseconds.
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	means := map[string][]time.Duration{}
	for _, side := range []string{"baseline", "candidate"} {
		for _, dir := range samples(side) {
			r, err := store.Read(t.Context(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if side == "candidate" {
				if r.Spec.Target.EtcdLatency.Duration != 5*time.Millisecond || r.Target.EtcdProxy == nil {
					t.Fatalf("%s does not record the etcd latency and what its proxy added: %+v", dir, r.Target)
				}
				// A lower bound only: a busy machine adds any amount.
				if o := r.Target.EtcdProxy; o.Count == 0 || o.Mean.Duration < 4500*time.Microsecond {
					t.Errorf("%s: the proxy observed %+v, want a mean round trip of about 5ms", dir, o)
				}
			}
			for _, op := range []string{"get", "update"} {
				means[side+" "+op] = append(means[side+" "+op], etcdMean(t, dir, op))
			}
		}
	}
	for _, op := range []string{"get", "update"} {
		without, with := median(means["baseline "+op]), median(means["candidate "+op])
		t.Logf("the apiserver's etcd %s: median of the samples' means %s without, %s with 5ms (samples %v, %v)", op, without, with, means["baseline "+op], means["candidate "+op])
		if with-without < 4*time.Millisecond {
			t.Errorf("the apiserver's etcd %s mean rose from %s to %s, want about 5ms more", op, without, with)
		}
	}
	b, err := exec.Command(bin, "compare", filepath.Join(out, "baseline"), filepath.Join(out, "candidate"), "--format", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var c comparison
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	// The tail is logged, not asserted: on 2 busy cores the p99 of a
	// 3s sample is the machine's stalls (tens of milliseconds), which a
	// 5ms shift does not always clear at n=5.
	_, tail := c.rose("latency p99")
	t.Log(tail)
	keptUp := baselineKeptUp(t, out, 5*time.Millisecond) // 200/s
	for _, metric := range []string{"conflict rate", "latency p50"} {
		ok, how := c.rose(metric)
		t.Log(how)
		if !ok && !keptUp {
			t.Logf("not asserted: a baseline sample's p50 reached the arrivals' spacing, so the machine, not the latency, set the baseline's races")
			continue
		}
		if !ok {
			t.Errorf("with 5ms to etcd: %s, want a significant rise", how)
		}
	}
	waitClean(t, tmp)
}

// --client-latency delays kb-bench's own requests: every operation
// (a GET and a PUT) takes at least two round trips longer, the result
// says what was added, and the update strategy's conflict rate and
// median latency rise significantly.
func TestClientLatencyRaisesConflicts(t *testing.T) {
	bin, cpBin := binary(t)
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "ab")
	// The pacer spaces arrivals evenly: a write conflicts only when the
	// next arrival's write lands inside this one's read-to-write window.
	// 300 operations/s (3.3ms apart) puts the window 5ms opens past the
	// spacing, while loopback's (about 1ms) stays inside it; at 100/s
	// (10ms apart) a quiet machine shows no conflicts either way.
	cmd, stdout, _ := start(t, bin, cpBin, tmp, out, "--writers", "8", "--rate", "300", "--duration", "3s", "--count", "7",
		"--client-latency", "5ms", "--baseline-with", "client-latency=0s")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kb-bench run: %v\n%s", err, stdout)
	}
	m, _ := filepath.Glob(filepath.Join(out, "candidate", "*", store.ResultFile))
	for _, f := range m {
		r, err := store.Read(t.Context(), filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		cs := r.Measurements.Client
		if cs.Delayed == 0 || cs.AddedLatency/time.Duration(cs.Delayed) < 5*time.Millisecond {
			t.Errorf("%s: %d requests delayed by %s in all: want every request delayed by 5ms or more", f, cs.Delayed, cs.AddedLatency)
		}
		if r.Summary.Latency.P50 < 10*time.Millisecond {
			t.Errorf("%s: p50 %s: an operation is a GET and a PUT, each 5ms longer", f, r.Summary.Latency.P50)
		}
	}
	b, err := exec.Command(bin, "compare", filepath.Join(out, "baseline"), filepath.Join(out, "candidate"), "--format", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var c comparison
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	_, tail := c.rose("latency p99")
	t.Log(tail)
	keptUp := baselineKeptUp(t, out, 3300*time.Microsecond) // 300/s
	for _, metric := range []string{"conflict rate", "latency p50"} {
		ok, how := c.rose(metric)
		t.Log(how)
		if !ok && !keptUp {
			t.Logf("not asserted: a baseline sample's p50 reached the arrivals' spacing, so the machine, not the latency, set the baseline's races")
			continue
		}
		if !ok {
			t.Errorf("with 5ms between the clients and the apiserver: %s, want a significant rise", how)
		}
	}
	waitClean(t, tmp)
}

// baselineKeptUp reports whether every baseline sample of the A/B run in
// out had a median latency under spacing, the open loop's time between
// arrivals: then the baseline's read-to-write windows mostly fit between
// arrivals and a few milliseconds more must show as more 409s and a
// higher median. On a loaded machine the baseline alone can pass that,
// and a rise is then what a fast machine shows, not what the run
// guarantees.
func baselineKeptUp(t *testing.T, out string, spacing time.Duration) bool {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(out, "baseline", "*", store.ResultFile))
	for _, f := range m {
		r, err := store.Read(t.Context(), filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		if r.Summary.Latency.P50 >= spacing {
			t.Logf("%s: p50 %s, not under the arrivals' spacing %s", f, r.Summary.Latency.P50, spacing)
			return false
		}
	}
	return len(m) > 0
}
