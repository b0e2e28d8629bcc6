package workload

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/kb-bench/kb-bench/metrics/apiserver"
	"github.com/kb-bench/kb-bench/spec"
)

// procCPU reads a process's CPU time from /proc/PID/stat: utime + stime
// (fields 14 and 15) over the clock ticks per second.
func procCPU(t testing.TB, pid int, tick float64) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command (field 2) is in parentheses and may hold spaces.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("reading /proc/%d/stat %q: %v %v", pid, b, err1, err2)
	}
	return (utime + stime) / tick
}

// clockTicks is getconf CLK_TCK.
func clockTicks(t testing.TB) float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		t.Fatalf("getconf CLK_TCK: %v", err)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || v <= 0 {
		t.Fatalf("getconf CLK_TCK = %q", out)
	}
	return v
}

// bracket is an independent reading on each side of the engine's at one
// edge: the engine's value lies between first and last.
type bracket struct{ first, last float64 }

// The apiserver and etcd CPU a run reports for its window is what
// /proc/PID/stat and the processes' own process_cpu_seconds_total say
// over the same window: each read independently just before and just
// after each of the engine's edges, the engine's figure lies between the
// smallest and the largest window those readings allow, give or take a
// clock tick (the resolution of both).
func TestCostIsTheProcessesCPUOverTheWindow(t *testing.T) {
	cp := local.ControlPlane(t)
	cfg := local.Config(t)
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tick := clockTicks(t)
	ctx := context.Background()
	type reads struct{ stat, prom, etcdStat, etcdProm bracket }
	var edges [3]reads
	read := func() (stat, prom, etcdStat, etcdProm float64) {
		s, err := apiserver.Scrape(ctx, admin.CoreV1().RESTClient())
		if err != nil || !s.Process.Has {
			t.Errorf("scraping the apiserver's process_cpu_seconds_total: %v (has %v)", err, s.Process.Has)
		}
		e, err := apiserver.ScrapeProcess(ctx, http.DefaultClient, cp.EtcdMetrics())
		if err != nil {
			t.Errorf("scraping etcd: %v", err)
		}
		return procCPU(t, cp.State().APIServer.PID, tick), s.Process.CPUSeconds, procCPU(t, cp.State().Etcd.PID, tick), e.CPUSeconds
	}
	onEdge := func(edge int, done bool) {
		r := &edges[edge]
		if !done {
			stat, prom, etcdStat, etcdProm := read()
			r.stat.first, r.prom.first, r.etcdStat.first, r.etcdProm.first = stat, prom, etcdStat, etcdProm
			return
		}
		prom, etcdProm := 0.0, 0.0
		s, err := apiserver.Scrape(ctx, admin.CoreV1().RESTClient())
		if err != nil {
			t.Error(err)
		}
		prom = s.Process.CPUSeconds
		e, err := apiserver.ScrapeProcess(ctx, http.DefaultClient, cp.EtcdMetrics())
		if err != nil {
			t.Error(err)
		}
		etcdProm = e.CPUSeconds
		r.prom.last, r.etcdProm.last = prom, etcdProm
		r.stat.last, r.etcdStat.last = procCPU(t, cp.State().APIServer.PID, tick), procCPU(t, cp.State().Etcd.PID, tick)
	}
	res := runWith(ctx, t, spec.Spec{Writers: 8, Duration: spec.D(short)}, Options{Config: cfg, EtcdMetrics: cp.EtcdMetrics(), OnEdge: onEdge})
	c := res.Cost
	if c == nil || !c.Apiserver.Available || !c.Etcd.Available || !c.Client.Available {
		t.Fatalf("cost %+v: want the apiserver's, etcd's and kb-bench's CPU", c)
	}
	if c.Apiserver.CPUSeconds <= 0 || c.Etcd.CPUSeconds <= 0 || c.Client.CPUSeconds <= 0 {
		t.Errorf("cost %+v: a run of %d ops used no CPU?", c, res.Summary.Ops)
	}
	if c.Apiserver.MemoryBefore <= 0 || c.Apiserver.MemoryAfter <= 0 || c.Etcd.MemoryAfter <= 0 {
		t.Errorf("cost %+v: no resident memory at the edges", c)
	}
	within := func(what string, got float64, b1, b2 bracket) {
		t.Helper()
		lo, hi := b2.first-b1.last, b2.last-b1.first
		res := 1 / tick
		if got < lo-res || got > hi+res {
			t.Errorf("%s: kb-bench reports %.3fs of CPU for the window; independent readings around its edges allow %.3fs to %.3fs (give or take %.3fs)", what, got, lo, hi, res)
		} else {
			t.Logf("%s: kb-bench %.3fs, independent %.3fs to %.3fs", what, got, lo, hi)
		}
	}
	within("apiserver, /proc/PID/stat", c.Apiserver.CPUSeconds, edges[1].stat, edges[2].stat)
	within("apiserver, process_cpu_seconds_total", c.Apiserver.CPUSeconds, edges[1].prom, edges[2].prom)
	within("etcd, /proc/PID/stat", c.Etcd.CPUSeconds, edges[1].etcdStat, edges[2].etcdStat)
	within("etcd, process_cpu_seconds_total", c.Etcd.CPUSeconds, edges[1].etcdProm, edges[2].etcdProm)
	// The background: the apiserver's CPU over the idle second inside the
	// first edge, no more than the whole edge used, by /proc.
	if i := c.ApiserverIdle; i == nil || i.Seconds < idleInterval.Seconds() || i.CPUSeconds > edges[1].stat.last-edges[1].stat.first+1/tick {
		t.Errorf("apiserver background %+v: want one read over at least %s, within the %.3fs the first edge used", i, idleInterval, edges[1].stat.last-edges[1].stat.first)
	} else {
		t.Logf("apiserver background: %.3fs of CPU over %.3fs (%.3f cores)", i.CPUSeconds, i.Seconds, i.Cores())
	}
	// The split: the run's PUTs and GETs are in the apiserver's request time.
	var put, get bool
	for _, v := range c.Verbs {
		put = put || v.Verb == "PUT" && v.Requests > 0 && v.Seconds > 0 && len(v.Buckets) > 0
		get = get || v.Verb == "GET" && v.Requests > 0
	}
	if !put || !get || c.RequestSeconds <= 0 {
		t.Errorf("apiserver request time %+v (total %.3fs): want the run's GET and PUT", c.Verbs, c.RequestSeconds)
	}
	f := c.Figures(res.Summary)
	if f.Apiserver.PerWrite <= f.Apiserver.PerOp || !f.HasSplit || f.WriteShare <= 0 {
		t.Errorf("figures %+v: with conflicts, CPU per successful write is above CPU per op, and writes took some of the request time", f)
	}
}

// A target kb-bench cannot read etcd on says so.
func TestCostSaysEtcdIsNotReadable(t *testing.T) {
	cfg := local.Config(t)
	res := runWith(context.Background(), t, spec.Spec{Writers: 2, Duration: spec.D(short)}, Options{Config: cfg})
	if res.Cost == nil || res.Cost.Etcd.Available || !strings.Contains(res.Cost.Etcd.Reason, "not readable") || !res.Cost.Apiserver.Available {
		t.Errorf("cost %+v: want the apiserver read and etcd not readable", res.Cost)
	}
}
