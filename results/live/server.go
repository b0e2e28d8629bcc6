package live

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
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
	// URL is where it serves them (http://ADDR/metrics), an address a
	// scraper on this machine can use (loopback's, when it listens on
	// every interface).
	URL string
	// Beyond says it listens beyond loopback: other machines can read the
	// figures too; Listening is the address it listens on.
	Beyond    bool
	Listening string

	ln     net.Listener
	srv    *http.Server
	served chan error

	// finalGen is the Exporter's gen that the latest scrape of final
	// figures read (-1: none yet); scraped is told of each such scrape.
	finalGen atomic.Int64
	scraped  chan struct{}
	// closing: Close was called, no run will be added and what the runs
	// show is all they will (one that failed never finishes).
	closing atomic.Bool
}

// Listen listens on addr and serves an empty Exporter there. An address
// without a host (":9090") is loopback's. A port in use, or an address
// that is not one, is bad input: Listen is called before anything starts.
func Listen(addr string) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil && !strings.Contains(addr, ":") {
		host, port, err = "", addr, nil
	}
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--metrics-addr %q is not HOST:PORT (%w): give, for example, 127.0.0.1:9464, or :9464 for loopback", addr, err))
	}
	host = cmp.Or(host, "127.0.0.1")
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, spec.Input(fmt.Errorf("--metrics-addr %s: %w: pick a free port, or stop what listens there", addr, err))
	}
	x := NewExporter()
	reg := prometheus.NewRegistry()
	if err := reg.Register(x); err != nil {
		ln.Close()
		return nil, fmt.Errorf("registering kb-bench's live figures: %w", err)
	}
	at := ln.Addr().(*net.TCPAddr)
	bound := strconv.Itoa(at.Port)
	s := &Server{Exporter: x, ln: ln, served: make(chan error, 1), scraped: make(chan struct{}, 1),
		Listening: net.JoinHostPort(host, bound), Beyond: !at.IP.IsLoopback()}
	s.finalGen.Store(-1)
	scrape := host
	if at.IP.IsUnspecified() { // 0.0.0.0 or ::, no address to scrape: loopback's
		scrape = "127.0.0.1"
		if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
			scrape = "::1"
		}
	}
	s.URL = "http://" + net.JoinHostPort(scrape, bound) + "/metrics"
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError})
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.counting(h))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

// counting notes each scrape served that read final figures: every run
// added had finished when it began.
func (s *Server) counting(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gen, finished := s.Exporter.state()
		final := finished || s.closing.Load()
		h.ServeHTTP(w, r)
		if !final {
			return
		}
		for old := s.finalGen.Load(); old < gen && !s.finalGen.CompareAndSwap(old, gen); old = s.finalGen.Load() {
		}
		select {
		case s.scraped <- struct{}{}:
		default:
		}
	})
}

// FinalScraped says whether a scrape already read the final figures:
// every run added had finished, and none was added or finished since.
func (s *Server) FinalScraped() bool {
	gen, _ := s.Exporter.state()
	return s.finalGen.Load() == gen // recorded only for final figures
}

// Close stops the server. With wait > 0 it first waits, at most that
// long or until ctx is done, for one scrape of the final figures (before
// Close too), so that a scraper that polls every so often still gets the
// run's last figures. It says whether one came, and how long it waited.
func (s *Server) Close(ctx context.Context, wait time.Duration) (scraped bool, waited time.Duration) {
	start := time.Now()
	s.closing.Store(true)
	scraped = s.FinalScraped()
	if wait > 0 && !scraped {
		timeout := time.After(wait)
	loop:
		for !scraped {
			select {
			case <-s.scraped:
				scraped = s.FinalScraped()
			case <-timeout:
				break loop
			case <-ctx.Done():
				break loop
			}
		}
		waited = time.Since(start)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.srv.Close()
	}
	<-s.served // http.ErrServerClosed, or why serving stopped before
	return scraped, waited
}
