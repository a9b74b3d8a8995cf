package ssh

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// An HTTP server on the host's loopback answers through the forward, for
// several requests, each on its own channel.
func TestForwardCarriesHTTP(t *testing.T) {
	s := sshtest.NewServer(t)
	c, err := Dial(context.Background(), targetFor(t, s), DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The "remote" service: loopback is shared with the fixture's host.
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %s %q", r.Method, body)
	})}
	svc, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(svc)
	defer srv.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Forward(ctx, ln, svc.Addr().String(), nil) }()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < 3; i++ {
		resp, err := client.Post("http://"+ln.Addr().String(), "text/plain", strings.NewReader(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("got POST %q", fmt.Sprint(i)); string(b) != want {
			t.Errorf("got %q, want %q", b, want)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Forward did not return after cancel")
	}
}

// Regression: cancelling a forward ends it even while a client keeps its
// connection open (Ctrl-C must not wait for the client).
func TestForwardCancelClosesOpenConnections(t *testing.T) {
	s := sshtest.NewServer(t)
	c, err := Dial(context.Background(), targetFor(t, s), DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	svc, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	reached := make(chan struct{}, 1)
	go func() { // a service that never closes its side
		for {
			conn, err := svc.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			if _, err := io.ReadFull(conn, make([]byte, 1)); err == nil {
				reached <- struct{}{}
			}
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Forward(ctx, ln, svc.Addr().String(), nil) }()
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.Write([]byte("x"))
	select { // the byte crossed the forward's channel to the service
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the client's byte never reached the service through the forward")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Forward still running after cancel with a connection open")
	}
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Error("the open client connection should have been closed")
	}
}
