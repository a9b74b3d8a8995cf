package sshtest

import (
	"net"
	"sync"
	"testing"
)

// Stall is a server on 127.0.0.1 that accepts every connection and never
// answers, so a client (a git fetch, say) waits on it until Let drops the
// connections; it is closed when the test ends.
type Stall struct {
	ln     net.Listener
	asked  chan struct{}
	once   sync.Once
	mu     sync.Mutex
	held   []net.Conn
	closed bool // Let ran
}

// NewStall starts a Stall.
func NewStall(t testing.TB) *Stall {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshtest: stall listen: %v", err)
	}
	s := &Stall{ln: ln, asked: make(chan struct{})}
	go s.accept()
	t.Cleanup(s.Let)
	return s
}

func (s *Stall) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.hold(c)
	}
}

// hold keeps c until Let; one accepted while Let ran (it waited for mu)
// is closed at once.
func (s *Stall) hold(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held = append(s.held, c); len(s.held) == 1 {
		close(s.asked)
	}
	if s.closed {
		c.Close()
	}
}

// Addr returns "127.0.0.1:port".
func (s *Stall) Addr() string { return s.ln.Addr().String() }

// Asked is closed at the first connection.
func (s *Stall) Asked() <-chan struct{} { return s.asked }

// Let closes the listener and every connection, so whoever waits fails.
func (s *Stall) Let() {
	s.once.Do(func() {
		s.ln.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		for _, c := range s.held {
			c.Close()
		}
	})
}
