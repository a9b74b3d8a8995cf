package sshtest_test

import (
	"io"
	"net"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// Each exchange through the relay is one flight up and one down; bytes
// sent before the trace are not counted.
func TestRelayTraceFlights(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(c, c)
			c.Close()
		}
	}()
	relay := sshtest.NewRelay(t, ln.Addr().String())
	c, err := net.Dial("tcp", relay.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := func(msg string) {
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, len(msg))); err != nil {
			t.Fatal(err)
		}
	}
	echo("before")
	relay.Trace()
	echo("abc")
	echo("defgh")
	got := relay.Flights()
	want := []struct {
		up    bool
		bytes int
	}{{true, 3}, {false, 3}, {true, 5}, {false, 5}}
	if len(got) != len(want) {
		t.Fatalf("flights:\n%s", sshtest.FormatFlights(got))
	}
	for i, w := range want {
		if got[i].Up != w.up || got[i].Bytes != w.bytes {
			t.Fatalf("flight %d: %+v, want %+v\n%s", i, got[i], w, sshtest.FormatFlights(got))
		}
	}
	echo("after")
	if f := relay.Flights(); f != nil {
		t.Fatalf("flights after the trace ended: %v", f)
	}
}
