package live_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/kb-bench/kb-bench/metrics"
	"github.com/kb-bench/kb-bench/results/live"
)

// busyRecorder is a recorder as 64 writers leave it after a while: every
// stripe holds a spread of latencies and outcomes.
func busyRecorder() *metrics.Recorder {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := metrics.NewRecorder(t0, metrics.DefaultStripes(64), false)
	for i := range 200_000 {
		s := rec.Stripe(i)
		lat := time.Duration(300+i%50_000) * time.Microsecond
		out := metrics.Success
		if i%3 == 0 {
			out = metrics.VersionConflict
		}
		s.RecordAttempt(t0, metrics.Attempt{Kind: metrics.Read, Latency: lat / 3, Outcome: metrics.Success})
		s.RecordAttempt(t0, metrics.Attempt{Kind: metrics.Write, Latency: lat / 2, Outcome: out})
		s.RecordOp(metrics.Op{Intended: t0, Start: t0, End: t0.Add(lat), Outcome: out, Attempts: 1})
	}
	return rec
}

// BenchmarkScrape is one scrape of a busy run, as Prometheus makes it
// (every 15 s by default, 1 s at the most): the recorder's totals merged,
// every series and histogram built and encoded in the text format.
func BenchmarkScrape(b *testing.B) {
	rec := busyRecorder()
	x := live.NewExporter()
	x.Add(labels).Watch(func() live.Figures { return live.Figures{Totals: rec.Totals()} })
	reg := prometheus.NewRegistry()
	reg.MustRegister(x)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		families, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range families {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRecordWhileScraped is metrics' BenchmarkRecordOpParallel (each
// writer records a write attempt and its operation) while a scraper
// collects every 10 ms, a hundred times Prometheus' fastest interval: what
// the writers pay for a scrape taking each stripe's lock in turn.
func BenchmarkRecordWhileScraped(b *testing.B) {
	for _, tc := range []struct {
		name  string
		every time.Duration
	}{{"unscraped", 0}, {"scraped-every-10ms", 10 * time.Millisecond}} {
		b.Run(tc.name, func(b *testing.B) {
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			rec := metrics.NewRecorder(t0, metrics.DefaultStripes(64), false)
			x := live.NewExporter()
			x.Add(labels).Watch(func() live.Figures { return live.Figures{Totals: rec.Totals()} })
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				if tc.every == 0 {
					return
				}
				t := time.NewTicker(tc.every)
				defer t.Stop()
				ch := make(chan prometheus.Metric, 1024)
				for {
					select {
					case <-stop:
						return
					case <-t.C:
					}
					go func() { x.Collect(ch); close(ch) }()
					for range ch {
					}
					ch = make(chan prometheus.Metric, 1024)
				}
			}()
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				s := rec.Stripe(int(next.Add(1)))
				o := metrics.Op{Intended: t0, Start: t0, Outcome: metrics.Success, Attempts: 1}
				i := 0
				for pb.Next() {
					i++
					o.End = o.Intended.Add(time.Duration(500+i%20000) * time.Microsecond)
					s.RecordAttempt(o.Intended, metrics.Attempt{Kind: metrics.Write, Latency: time.Millisecond})
					s.RecordOp(o)
				}
			})
			b.StopTimer()
			close(stop)
			<-stopped
		})
	}
}
