package transport

import (
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kb-bench/kb-bench/metrics"
)

// Servers are the apiservers of a target that runs several, as the
// clients reach them: each client has a home apiserver and, once its home
// refuses connections (it died), fails over to the next living one, as a
// client behind a load balancer does. Only a refused connection moves a
// request: it reached no apiserver, so sending it again cannot apply it
// twice; a request whose connection broke in flight fails, and counts as
// an error. Servers also counts, by apiserver, the requests each answered,
// so that a check against the apiservers' own counts can leave out one
// whose counters died with it.
type Servers struct {
	host []string
	mu   sync.Mutex
	down []time.Time // when each first refused a connection; zero: up
	// moves are the clients' failovers: each request sent again to
	// another apiserver, and each client's first.
	moves     int64
	firstMove map[int]time.Time // by client
	answered  []map[metrics.RequestKey]int64
}

// NewServers returns the state of the apiservers at urls, all up.
func NewServers(urls []string) (*Servers, error) {
	s := &Servers{down: make([]time.Time, len(urls)), firstMove: map[int]time.Time{}}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil {
			return nil, err
		}
		s.host = append(s.host, p.Host)
		s.answered = append(s.answered, map[metrics.RequestKey]int64{})
	}
	return s, nil
}

// Down says when apiserver i first refused a connection (zero: it has not).
func (s *Servers) Down(i int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down[i]
}

// Failovers are how many requests were sent again to another apiserver
// after theirs refused the connection, and when each client that failed
// over did so first.
func (s *Servers) Failovers() (moves int64, first map[int]time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.moves, maps.Clone(s.firstMove)
}

// Answered returns, by apiserver, the requests it answered so far, by
// endpoint and code (read them at the window's edges, as Read).
func (s *Servers) Answered() []map[metrics.RequestKey]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[metrics.RequestKey]int64, len(s.answered))
	for i, m := range s.answered {
		out[i] = maps.Clone(m)
	}
	return out
}

// pick is the apiserver a client homed at home sends to: home, or the
// next one up after it.
func (s *Servers) pick(home int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.down {
		if i := (home + k) % len(s.down); s.down[i].IsZero() {
			return i
		}
	}
	return home // all down: its own, to fail as it will
}

// refused marks apiserver i down (at its first refusal) and says whether
// another is up.
func (s *Servers) refused(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down[i].IsZero() {
		s.down[i] = time.Now()
	}
	return slices.ContainsFunc(s.down, time.Time.IsZero)
}

func (s *Servers) moved(client int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moves++
	if _, ok := s.firstMove[client]; !ok {
		s.firstMove[client] = time.Now()
	}
}

func (s *Servers) answer(i int, r *http.Request, code int) {
	k, watch := endpointOf(r)
	if watch {
		return
	}
	k.Code = strconv.Itoa(code)
	s.mu.Lock()
	s.answered[i][k]++
	s.mu.Unlock()
}

// Wrap returns the transport wrapper of client number client (-1: one
// that is not a writer's, such as the engine's own), homed at apiserver
// home.
func (s *Servers) Wrap(client, home int) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &failover{next: next, s: s, client: client, home: home}
	}
}

// failover sends a client's requests to its home apiserver, or the next
// living one (see Servers).
type failover struct {
	next         http.RoundTripper
	s            *Servers
	client, home int
}

func (f *failover) RoundTrip(r *http.Request) (*http.Response, error) {
	req := r
	for tries := 0; ; tries++ {
		i := f.s.pick(f.home)
		if host := f.s.host[i]; req.URL.Host != host {
			req = req.Clone(req.Context())
			req.URL.Host, req.Host = host, ""
		}
		resp, err := f.next.RoundTrip(req)
		if err == nil {
			if f.client >= 0 { // a writer's, as the meter counts them
				f.s.answer(i, req, resp.StatusCode)
			}
			return resp, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || !f.s.refused(i) || tries >= len(f.s.host) {
			return nil, err
		}
		// The refused request reached no apiserver: send it again,
		// with its body anew.
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, berr := req.GetBody()
			if berr != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		if f.client >= 0 {
			f.s.moved(f.client)
		}
	}
}

// WrappedRoundTripper lets the metered transport find the HTTP transport
// below.
func (f *failover) WrappedRoundTripper() http.RoundTripper { return f.next }
