package ssh

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// With MaxSessions 1, a command asked for while another holds the one
// session channel waits for it to end, then runs; the shortage hook is
// asked first to let idle sessions go.
func TestSessionWaitsForTheOneChannel(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.WithMaxSessions(1))
	c, err := Dial(context.Background(), targetFor(t, s), DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inR, inW := io.Pipe()
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- c.Stream(context.Background(), "echo up; cat >/dev/null; echo first", inR, writerFunc(func(p []byte) (int, error) {
			if strings.Contains(string(p), "up") {
				close(started)
			}
			return len(p), nil
		}), io.Discard)
	}()
	<-started
	asked := make(chan struct{})
	c.OnSessionShortage(func() {
		select {
		case <-asked:
		default:
			close(asked)
			inW.Close() // the holder lets go of its session
		}
	})
	out, _, err := c.Run(context.Background(), "echo second", nil)
	if err != nil || strings.TrimSpace(string(out)) != "second" {
		t.Fatalf("second command: %q, %v", out, err)
	}
	select {
	case <-asked:
	default:
		t.Fatal("the second command ran without the server refusing it: the fixture allows more than one session")
	}
	if err := <-first; err != nil {
		t.Fatalf("first command: %v", err)
	}
}
