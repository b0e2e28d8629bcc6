package transport

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A client whose apiserver refuses connections (it died) sends the same
// request, body and all, to the next living one, and every request after
// it too; the move and what each apiserver answered are counted.
func TestFailoverMovesRefusedRequests(t *testing.T) {
	var got []string
	alive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+string(b))
		w.WriteHeader(http.StatusOK)
	}))
	defer alive.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // its port now refuses connections
	s, err := NewServers([]string{dead.URL, alive.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: s.Wrap(0, 0)(http.DefaultTransport)}
	for range 2 {
		req, err := http.NewRequest(http.MethodPut, dead.URL+"/api/v1/namespaces/ns/configmaps/a", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("want the request moved to the living apiserver, got %v", err)
		}
		resp.Body.Close()
	}
	moves, first := s.Failovers()
	answered := s.Answered()
	if len(got) != 2 || got[0] != "PUT body" || moves != 1 || len(first) != 1 || s.Down(0).IsZero() || !s.Down(1).IsZero() {
		t.Errorf("living apiserver got %q; %d moves, first %v, down %v %v", got, moves, first, s.Down(0), s.Down(1))
	}
	var n int64
	for k, v := range answered[1] {
		if k.Verb != "PUT" || k.Code != "200" {
			t.Errorf("answered %v", k)
		}
		n += v
	}
	if n != 2 || len(answered[0]) != 0 {
		t.Errorf("answered by each apiserver: %v", answered)
	}
}
