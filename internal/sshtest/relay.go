package sshtest

import (
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Relay is a TCP proxy on 127.0.0.1 in front of a target, injecting network faults on demand.
// Modes switch at runtime and are safe to change from any goroutine.
type Relay struct {
	t      testing.TB
	target string
	port   int

	mode     atomic.Int32 // relayMode applied to newly accepted connections
	delay    atomic.Int64 // time.Duration added to each chunk, each direction
	moved    atomic.Int64 // bytes written to either side since the last Bytes
	rate     atomic.Int64 // bytes per second each direction may carry; 0 = unlimited
	accepted atomic.Int64 // connections accepted since the last Accepted

	mu     sync.Mutex
	trace  *trace       // non-nil while tracing
	ln     net.Listener // nil while refusing
	conns  map[net.Conn]struct{}
	frozen chan struct{} // non-nil while frozen; closed by Thaw
	closed bool
	done   chan struct{} // closed at cleanup, releasing every goroutine
	wg     sync.WaitGroup
}

type relayMode int32

const (
	modePass relayMode = iota
	modeReset
	modeBlackhole
)

const relayChunk = 32 << 10

// NewRelay starts a relay to target in Pass mode; it is closed when the test ends.
func NewRelay(t testing.TB, target string) *Relay {
	t.Helper()
	r := &Relay{t: t, target: target, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshtest: relay listen: %v", err)
	}
	r.port = ln.Addr().(*net.TCPAddr).Port
	r.serveLocked(ln)
	t.Cleanup(r.close)
	return r
}

// Addr returns "127.0.0.1:port"; the port survives Refuse.
func (r *Relay) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// Port returns the relay's TCP port.
func (r *Relay) Port() int { return r.port }

// Bytes returns the bytes relayed, both directions, since the last call:
// what crossed the wire.
func (r *Relay) Bytes() int64 { return r.moved.Swap(0) }

// Accepted returns how many connections the relay accepted since the last
// call (how many times a client dialled through it), and resets it.
func (r *Relay) Accepted() int64 { return r.accepted.Swap(0) }

// Limit caps each direction of every connection at bytesPerSecond (0
// lifts the cap), as a slow link would: a chunk is delivered only once the
// ones before it have had their time on the wire.
func (r *Relay) Limit(bytesPerSecond int64) { r.rate.Store(bytesPerSecond) }

// Pass forwards new connections to the target without added latency.
func (r *Relay) Pass() { r.set(modePass, 0) }

// Delay forwards like Pass, but holds every chunk read from now on (on all connections, both
// directions) for d before writing it. Order is kept and throughput is not serialized by the sleep.
func (r *Relay) Delay(d time.Duration) { r.set(modePass, d) }

// Reset accepts new connections and aborts them at once with a TCP RST.
func (r *Relay) Reset() { r.set(modeReset, 0) }

// Blackhole accepts new connections, reads and discards their bytes, and never replies.
func (r *Relay) Blackhole() { r.set(modeBlackhole, 0) }

// Refuse closes the listener so new connects fail with ECONNREFUSED; live connections are kept.
// Any other mode listens again on the same port.
func (r *Relay) Refuse() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
}

// Freeze stops moving bytes on every connection, live and new, without closing any: a dead link.
// Reads stop once a small buffer fills, so senders see TCP backpressure.
func (r *Relay) Freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen == nil {
		r.frozen = make(chan struct{})
	}
}

// Thaw resumes a frozen relay, delivering held bytes in order, as TCP would after a link recovers.
func (r *Relay) Thaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen != nil {
		close(r.frozen)
		r.frozen = nil
	}
}

func (r *Relay) set(m relayMode, d time.Duration) {
	r.mode.Store(int32(m))
	r.delay.Store(int64(d))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil || r.closed {
		return
	}
	ln, err := net.Listen("tcp", r.Addr())
	if err != nil {
		r.t.Errorf("sshtest: relay relisten on %s: %v", r.Addr(), err)
		return
	}
	r.serveLocked(ln)
}

func (r *Relay) serveLocked(ln net.Listener) {
	r.ln = ln
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Refuse or cleanup
			}
			if !r.track(c) {
				return
			}
			r.accepted.Add(1)
			r.wg.Add(1)
			go r.handle(c)
		}
	}()
}

func (r *Relay) handle(c net.Conn) {
	defer r.wg.Done()
	defer r.untrack(c)
	switch relayMode(r.mode.Load()) {
	case modeReset:
		abort(c)
		return
	case modeBlackhole:
		_, _ = io.Copy(io.Discard, c)
		return
	}
	up, err := net.DialTimeout("tcp", r.target, 5*time.Second)
	if err != nil {
		abort(c)
		return
	}
	if !r.track(up) {
		return
	}
	defer r.untrack(up)

	// Any failure tears down both sides; stop unblocks the other direction.
	stop := make(chan struct{})
	var once sync.Once
	fail := func() {
		once.Do(func() {
			close(stop)
			c.Close()
			up.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.pipe(up, c, true, stop, fail)
	}()
	r.pipe(c, up, false, stop, fail)
	wg.Wait()
}

type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst. A reader stamps each chunk with its due time and a writer waits for it,
// so a delay shifts the stream in time instead of slowing it down. EOF is passed on as a half-close.
func (r *Relay) pipe(dst, src net.Conn, up bool, stop chan struct{}, fail func()) {
	chunks := make(chan chunk, 64)
	go func() {
		defer close(chunks)
		var last time.Time // when the previous chunk is delivered
		for {
			buf := make([]byte, relayChunk)
			n, err := src.Read(buf)
			if n > 0 {
				r.record(up, n)
				due := time.Now().Add(time.Duration(r.delay.Load()))
				if rate := r.rate.Load(); rate > 0 {
					if last.After(due) {
						due = last
					}
					due = due.Add(time.Duration(int64(n) * int64(time.Second) / rate))
				}
				last = due
				select {
				case chunks <- chunk{buf[:n], due}:
				case <-stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range chunks {
		if !r.waitDue(ch.due, stop) {
			fail()
			return
		}
		// Counted before the write, so a reader that has the bytes finds them counted.
		r.moved.Add(int64(len(ch.data)))
		if _, err := dst.Write(ch.data); err != nil {
			fail()
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// waitDue blocks while frozen and until due; false means the connection or relay is going away.
func (r *Relay) waitDue(due time.Time, stop chan struct{}) bool {
	for {
		r.mu.Lock()
		frozen := r.frozen
		r.mu.Unlock()
		var timer <-chan time.Time
		switch d := time.Until(due); {
		case frozen != nil:
		case d > 0:
			timer = time.After(d)
		default:
			return true
		}
		select {
		case <-frozen:
		case <-timer:
		case <-stop:
			return false
		case <-r.done:
			return false
		}
	}
}

func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

func (r *Relay) close() {
	r.mu.Lock()
	r.closed = true
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for c := range r.conns {
		c.Close()
	}
	close(r.done)
	r.mu.Unlock()
	r.wg.Wait()
}

// abort closes c with an RST rather than a FIN.
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
