package netdelay

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// echo serves one line-echo server on loopback and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func TestProxyDelaysEachRoundTripAndKeepsOrder(t *testing.T) {
	const rtt = 20 * time.Millisecond
	p, err := Listen(echo(t), Delay{RTT: rtt, Jitter: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	const rounds = 10
	for i := range rounds {
		start := time.Now()
		fmt.Fprintf(c, "ping %d\n", i)
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line != fmt.Sprintf("ping %d\n", i) {
			t.Fatalf("round %d got %q", i, line)
		}
		// A lower bound only: the jitter takes at most 10ms off a round
		// trip; a busy machine may add any amount.
		if got := time.Since(start); got < rtt-10*time.Millisecond {
			t.Errorf("round trip %d took %s, less than the %s the proxy must add (jitter 10ms)", i, got, rtt-10*time.Millisecond)
		}
	}
	// Jitter never reorders a stream: many chunks written at once come
	// back in order.
	go func() {
		for i := range 200 {
			fmt.Fprintf(c, "burst %d\n", i)
		}
	}()
	for i := range 200 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line != fmt.Sprintf("burst %d\n", i) {
			t.Fatalf("line %d of the burst came back as %q: the proxy reordered the stream", i, line)
		}
	}
	o := p.Observed()
	if o.Count < rounds || o.Mean.Duration < rtt-10*time.Millisecond {
		t.Errorf("observed %+v: want at least %d chunks and a mean round trip of at least %s", o, rounds, rtt-10*time.Millisecond)
	}
}

func TestProxyCloseEndsConnections(t *testing.T) {
	before := runtime.NumGoroutine()
	p, err := Listen(echo(t), Delay{RTT: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "x\n")
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// The client sees its connection end.
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the connection still works after Close")
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Error("the proxy still accepts after Close")
	}
	// Close waited for the proxy's goroutines (the echo server's end on
	// their own): none of the proxy's is left.
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, fn := range []string{"netdelay.(*Proxy).pipe", "netdelay.(*Proxy).serve", "netdelay.(*Proxy).accept"} {
		if contains(stacks, fn) {
			t.Errorf("%s still runs after Close (goroutines before %d)", fn, before)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestDelayOneWay(t *testing.T) {
	d := Delay{RTT: 10 * time.Millisecond, Jitter: 4 * time.Millisecond}
	for range 1000 {
		if w := d.OneWay(); w < 3*time.Millisecond || w > 7*time.Millisecond {
			t.Fatalf("one way %s outside 5ms±2ms", w)
		}
	}
	if w := (Delay{}).OneWay(); w != 0 {
		t.Errorf("no delay drew %s", w)
	}
}
