package live

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kb-bench/kb-bench/spec"
)

// Server serves an Exporter's figures on /metrics, in Prometheus' text
// format, OpenMetrics, or protobuf (which carries the native histograms),
// whichever the scraper asks for.
type Server struct {
	// Exporter is what the server serves: add runs to it.
	Exporter *Exporter
	// URL is where it serves them (http://ADDR/metrics).
	URL string

	ln     net.Listener
	srv    *http.Server
	served chan error

	final       atomic.Bool   // every run added has finished
	scraped     chan struct{} // closed by the first scrape served after final
	scrapedOnce sync.Once
}

// Listen listens on addr and serves an empty Exporter there. An address
// without a host ("9090", ":9090") is loopback's: the endpoint is open to
// other machines only when addr names a host that is. A port already in
// use, or an address that is not one, is bad input (spec.Input): Listen
// is called before anything else starts.
func Listen(addr string) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil && !strings.Contains(addr, ":") {
		host, port, err = "", addr, nil
	}
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--metrics-addr %q is not HOST:PORT (%w): give, for example, 127.0.0.1:9464, or :9464 for loopback", addr, err))
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cmp.Or(host, "127.0.0.1"), port))
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--metrics-addr %s: %w: pick a free port, or stop what listens there", addr, err))
	}
	x := NewExporter()
	reg := prometheus.NewRegistry()
	if err := reg.Register(x); err != nil {
		ln.Close()
		return nil, fmt.Errorf("registering kb-bench's live figures: %w", err)
	}
	s := &Server{Exporter: x, URL: "http://" + ln.Addr().String() + "/metrics", ln: ln, served: make(chan error, 1), scraped: make(chan struct{})}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError})
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.counting(h))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

// counting notes each scrape served once every run finished.
func (s *Server) counting(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		final := s.final.Load()
		h.ServeHTTP(w, r)
		if final {
			s.scrapedOnce.Do(func() { close(s.scraped) })
		}
	})
}

// Close stops the server. With wait > 0 it first waits, at most that
// long or until ctx is done, for one scrape of the final figures (one
// that began after Close was called, when every run had ended), so that a
// scraper that polls every so often still gets the run's last figures. It
// says whether one came.
func (s *Server) Close(ctx context.Context, wait time.Duration) (scraped bool) {
	s.final.Store(true)
	if wait > 0 {
		select {
		case <-s.scraped:
			scraped = true
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.srv.Close()
	}
	<-s.served // http.ErrServerClosed, or why serving stopped before
	return scraped
}
