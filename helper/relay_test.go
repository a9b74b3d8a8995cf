package helper

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/helper/protocol"
)

// A relay answers once connected, then carries the rest of stdin to the
// port (bytes sent with the request included) and the port's answer to
// stdout, ending when the far end closes.
func TestRelayCarriesBothWays(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
		io.WriteString(c, "pong:"+line)
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	in := append(request(t, protocol.OpRelay, protocol.RelayRequest{Port: port}), []byte("\nping\n")...)
	out := serve(t, in)
	if line := <-got; line != "ping\n" {
		t.Fatalf("the port got %q", line)
	}
	answer, rest, _ := bytes.Cut(out, []byte("\n"))
	if err := protocol.ReadAnswer(bytes.NewReader(answer), nil, nil); err != nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	if string(rest) != "pong:ping\n" {
		t.Fatalf("relayed back %q", rest)
	}
}

// Nothing listening: the relay fails as an answer, and nothing follows.
func TestRelayRefusedIsAnAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	for _, p := range []int{port, 0, 70000} {
		out := serve(t, request(t, protocol.OpRelay, protocol.RelayRequest{Port: p}))
		var pe *protocol.Error
		err := protocol.ReadAnswer(bytes.NewReader(out), nil, nil)
		if !errors.As(err, &pe) || !strings.Contains(pe.Message, "relay") || bytes.Count(out, []byte("\n")) != 1 {
			t.Fatalf("port %d: %q, %v", p, out, err)
		}
	}
}
