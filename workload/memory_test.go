package workload

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

// BenchmarkMemoryPerWriter runs the default counter scenario (update, one
// ConfigMap, client-go's default settings) with many writers on the local
// control plane, which cannot serve them all, so nearly every writer has a
// request in flight or queued at any moment: the case issue 13 bounds
// (10,000 writers within 400 MB RSS). It reports the run's peak resident
// set (VmHWM, reset before each run: the control plane is a child process
// and not counted), the peak of the Go runtime's own memory (heap objects
// and goroutine stacks, sampled every 20 ms), both also per writer.
//
//	go test -run='^$' -bench=MemoryPerWriter -benchtime=1x -count=3 ./workload/
//
// KB_BENCH_HEAPPROFILE=path writes a heap profile taken at the sampled peak
// (it shows what the live heap holds then, as of the last GC), sampling
// one allocation in every 4 KB allocated rather than 512 KB, so that
// small per-request objects are told apart.
func BenchmarkMemoryPerWriter(b *testing.B) {
	cfg := local.Config(b)
	if os.Getenv("KB_BENCH_HEAPPROFILE") != "" {
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 4096
	}
	for _, writers := range []int{1000, 10000} {
		b.Run("writers="+strconv.Itoa(writers), func(b *testing.B) {
			var rss, goMem, stacks, gs, ops float64
			for b.Loop() {
				runtime.GC()
				resetPeakRSS(b)
				sampler := startMemSampler(os.Getenv("KB_BENCH_HEAPPROFILE"))
				s := spec.Spec{Writers: writers, Duration: spec.D(5 * time.Second)}
				out, err := Run(context.Background(), resolved(b, s), Options{Config: cfg, RunID: runID(), Version: "test", FinalizeNamespace: true})
				sampler.stop()
				if err != nil {
					b.Fatal(err)
				}
				rss += float64(peakRSS(b))
				goMem += float64(sampler.peak)
				stacks += float64(sampler.stacks)
				gs += float64(sampler.gs)
				ops += out.Result.Summary.Throughput
			}
			n := float64(b.N)
			b.ReportMetric(rss/n/(1<<20), "peak-RSS-MB")
			b.ReportMetric(rss/n/float64(writers), "peak-RSS-B/writer")
			b.ReportMetric(goMem/n/(1<<20), "peak-go-MB")
			b.ReportMetric(goMem/n/float64(writers), "peak-go-B/writer")
			b.ReportMetric(stacks/n/(1<<20), "peak-stacks-MB")
			b.ReportMetric(gs/n, "peak-goroutines")
			b.ReportMetric(ops/n, "ops/s")
		})
	}
}

// resetPeakRSS resets the process's VmHWM to its current RSS.
func resetPeakRSS(b *testing.B) {
	b.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS (Linux only): %v", err)
	}
}

// peakRSS reads the process's VmHWM in bytes.
func peakRSS(b *testing.B) int64 {
	b.Helper()
	f, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(f))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// memSampler samples the Go runtime's heap objects and goroutine stacks
// and keeps the peak, writing a heap profile at it when asked.
type memSampler struct {
	done    chan struct{}
	wg      sync.WaitGroup
	peak    uint64 // heap objects and stacks together
	stacks  uint64 // stacks' own peak
	gs      uint64 // goroutines' peak
	profile string
}

func startMemSampler(profile string) *memSampler {
	m := &memSampler{done: make(chan struct{}), profile: profile}
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/sched/goroutines:goroutines"}}
	m.wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var lastProfile uint64
		for {
			select {
			case <-m.done:
				return
			case <-t.C:
			}
			metrics.Read(samples)
			v := samples[0].Value.Uint64() + samples[1].Value.Uint64()
			m.stacks = max(m.stacks, samples[1].Value.Uint64())
			m.gs = max(m.gs, samples[2].Value.Uint64())
			if v <= m.peak {
				continue
			}
			m.peak = v
			// A new profile only when the peak grew by a tenth: each
			// one costs a stop of the world.
			if m.profile != "" && v > lastProfile+lastProfile/10 {
				lastProfile = v
				if f, err := os.Create(m.profile); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
		}
	})
	return m
}

func (m *memSampler) stop() {
	close(m.done)
	m.wg.Wait()
}
