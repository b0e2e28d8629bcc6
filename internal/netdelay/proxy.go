package netdelay

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/kb-bench/kb-bench/spec"
)

// chunkSize is the most bytes one read takes; each chunk is held for its
// own delay.
const chunkSize = 32 << 10

// slack is how early a chunk may leave rather than sleep once more.
const slack = 200 * time.Microsecond

// queueChunks bounds the chunks held in one direction of a connection:
// a reader that gets this far ahead waits, as a sender does on a full
// window.
const queueChunks = 4096

// Proxy is a TCP proxy on loopback that forwards every connection to an
// upstream address and holds each chunk of bytes for Delay.OneWay in
// each direction. A chunk is never sent before the one read before it
// (jitter does not reorder a stream), and throughput is not limited:
// many chunks can be on their way at once, as on a real link.
type Proxy struct {
	upstream string
	delay    Delay
	ln       net.Listener
	toUp     Meter // per chunk, client to upstream
	toDown   Meter // per chunk, upstream to client

	ctx   context.Context // ended by Close, which closes every connection
	wg    sync.WaitGroup
	close func() error // once
}

// Listen starts a proxy on a free loopback port in front of upstream
// (host:port).
func Listen(upstream string, d Delay) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, delay: d, ln: ln}
	var cancel func()
	p.ctx, cancel = context.WithCancel(context.Background())
	p.close = sync.OnceValue(func() error {
		cancel()
		err := ln.Close()
		p.wg.Wait()
		return err
	})
	p.wg.Go(func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(down) })
		}
	})
	return p, nil
}

// Addr is the proxy's address, 127.0.0.1:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Observed is the delay the proxy added so far: Count chunks sent
// upstream; Mean the mean hold of a chunk upstream plus the mean hold of
// one coming back (a round trip), Max the largest of each, added.
func (p *Proxy) Observed() spec.DelayObserved {
	up, down := p.toUp.Read(), p.toDown.Read()
	return spec.DelayObserved{Count: up.Count, Mean: spec.D(up.Mean.Duration + down.Mean.Duration), Max: spec.D(up.Max.Duration + down.Max.Duration)}
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error { return p.close() }

// serve joins one client connection to a new upstream connection.
func (p *Proxy) serve(down net.Conn) {
	defer down.Close()
	dialer := net.Dialer{Timeout: 10 * time.Second} // Close cancels a dial too
	up, err := dialer.DialContext(p.ctx, "tcp", p.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	stop := context.AfterFunc(p.ctx, func() { down.Close(); up.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(up, down, &p.toUp) })
	wg.Go(func() { p.pipe(down, up, &p.toDown) })
	wg.Wait()
}

type chunk struct {
	b    []byte
	read time.Time
	due  time.Time
}

// pipe copies src to dst, holding each chunk until its due time; when
// either side ends, it closes dst's write side (or dst) so the other
// direction sees the end too.
func (p *Proxy) pipe(dst, src net.Conn, m *Meter) {
	q := make(chan chunk, queueChunks)
	go func() {
		defer close(q)
		var last time.Time
		for {
			b := make([]byte, chunkSize)
			n, err := src.Read(b)
			if n > 0 {
				now := time.Now()
				due := now.Add(p.delay.OneWay())
				if due.Before(last) {
					due = last // never overtake the chunk before
				}
				last = due
				select {
				case q <- chunk{b: b[:n], read: now, due: due}:
				case <-p.ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			dst.Close()
		}
	}()
	for c := range q {
		// A chunk due within slack goes now: sleeping again for each of
		// a burst of chunks read a few microseconds apart would add each
		// wake-up's lateness to the next (they leave in order), and on a
		// busy machine a wake-up is late by hundreds of microseconds.
		if wait := time.Until(c.due); wait > slack {
			Sleep(p.ctx.Done(), wait)
		}
		if _, err := dst.Write(c.b); err != nil {
			// The other side is gone: end the reader too.
			src.Close()
			for range q {
			}
			return
		}
		m.Add(time.Since(c.read))
	}
}
