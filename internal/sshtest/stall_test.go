package sshtest

import (
	"io"
	"net"
	"testing"
	"time"
)

// A connection the stall accepted while Let ran (it waited for the lock
// Let held) is closed too, never held open past Let.
func TestStallClosesAConnectionAcceptedDuringLet(t *testing.T) {
	s := NewStall(t)
	s.Let()
	ours, theirs := net.Pipe()
	defer theirs.Close()
	s.hold(ours)
	theirs.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on the wait: closed, it ends at once
	if _, err := theirs.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read from a connection held after Let = %v, want EOF (closed)", err)
	}
}
