package ssh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// A frozen link becomes a LostError (a timeout, exit 7) instead of a hang,
// and a blocked command on it returns.
func TestKeepaliveDeclaresSilentLinkLost(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.WithLogLevel("DEBUG1"))
	relay := sshtest.NewRelay(t, s.Addr())
	tg := targetFor(t, s)
	tg.Port = relay.Port()
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const interval, deadline = 100 * time.Millisecond, 600 * time.Millisecond
	w := c.StartKeepalive(interval, deadline)
	defer w.Stop()

	// A healthy link stays up across several probes. A probe goes out only
	// once the one before it was answered and an interval has passed, so
	// the probes sshd has seen span more than the deadline.
	probes := int(deadline/interval) + 2
	waitUntil(t, fmt.Sprintf("sshd answering %d keepalives", probes), func() bool {
		return strings.Count(s.Log(), "rtype keepalive@openssh.com") >= probes
	})
	if w.Err() != nil {
		t.Fatalf("healthy link declared lost: %v", w.Err())
	}
	running := filepath.Join(t.TempDir(), "running")
	runDone := make(chan error, 1)
	go func() {
		_, _, err := c.Run(context.Background(), "touch "+shquote.Quote(running)+"; exec sleep 60", nil)
		runDone <- err
	}()
	waitUntil(t, "the command running on the host", func() bool {
		_, err := os.Stat(running)
		return err == nil
	})
	relay.Freeze()
	select {
	case err := <-runDone:
		if err == nil {
			t.Fatal("command on a dead link succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("command still blocked on a dead link")
	}
	var lost *LostError
	if !errors.As(w.Err(), &lost) {
		t.Fatalf("want LostError, got %v", w.Err())
	}
	if classify("h", tg, w.Err()).Class != ClassTimeout {
		t.Errorf("a lost link must classify as timeout (exit 7)")
	}
}

// Check answers at once on a live link, names a closed one, and waits for
// the watchdog's verdict on a silent one.
func TestKeepaliveCheck(t *testing.T) {
	s := sshtest.NewServer(t)
	relay := sshtest.NewRelay(t, s.Addr())
	tg := targetFor(t, s)
	tg.Port = relay.Port()
	dial := func() (*Client, *Watchdog) {
		c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		w := c.StartKeepalive(100*time.Millisecond, 600*time.Millisecond)
		t.Cleanup(w.Stop)
		return c, w
	}
	c, w := dial()
	if err := w.Check(); err != nil {
		t.Fatalf("live link: %v", err)
	}
	c.Close()
	if err := w.Check(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed link: want ErrClosed, got %v", err)
	}
	_, w = dial()
	relay.Freeze()
	defer relay.Thaw()
	var lost *LostError
	if err := w.Check(); !errors.As(err, &lost) {
		t.Fatalf("frozen link: want LostError, got %v", err)
	}
}

// waitUntil polls cond until it holds, failing after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
	}
}
