package workload

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kb-bench/kb-bench/results/live"
)

// Two overlapping scrapes of a distributed run's live endpoint (two
// Prometheus replicas): the first scrape's reading of a shard comes back
// after the second's, and older. The coordinator keeps the second's, so
// what it exports never steps back, which Prometheus would read as a
// counter reset.
func TestOverlappingLiveScrapesKeepTheLaterReading(t *testing.T) {
	var window atomic.Int64 // the shard's window, as it grows
	run := live.NewExporter().Add(live.Labels{})
	run.Watch(func() live.Figures { return live.Figures{Window: time.Duration(window.Load())} })
	shard := live.ShardHandler(run)

	var requests atomic.Int32
	firstIn, releaseFirst := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch requests.Add(1) {
		case 1: // read now, answered once the second scrape is done
			window.Store(int64(time.Second))
			old := httptest.NewRecorder()
			shard.ServeHTTP(old, r)
			close(firstIn)
			<-releaseFirst
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(old.Body.Bytes())
		case 2:
			window.Store(int64(2 * time.Second))
			shard.ServeHTTP(w, r)
		default: // the shard is gone: its last reading counts
			http.Error(w, "gone", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	release := sync.OnceFunc(func() { close(releaseFirst) })
	defer release() // before Close, which waits for the held request

	c := &coordinator{}
	c.live.Store(&shardsLive{urls: []string{srv.URL + "/"}, last: make([]shardReading, 1)})
	first := make(chan time.Duration)
	go func() { first <- c.liveFigures().Window }()
	<-firstIn
	if got := c.liveFigures().Window; got != 2*time.Second {
		t.Fatalf("second scrape: window %v, want the shard's 2s", got)
	}
	release()
	if got := <-first; got != 2*time.Second {
		t.Errorf("first scrape, answered last: window %v, want 2s (the later reading it must not replace)", got)
	}
	if got := c.liveFigures().Window; got != 2*time.Second {
		t.Errorf("a scrape after both, with the shard gone: window %v, want the later reading's 2s", got)
	}
}
