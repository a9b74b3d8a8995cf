package ssh

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// A frozen link becomes a LostError (a timeout, exit 7) instead of a hang,
// and a blocked command on it returns.
func TestKeepaliveDeclaresSilentLinkLost(t *testing.T) {
	s := sshtest.NewServer(t)
	relay := sshtest.NewRelay(t, s.Addr())
	tg := targetFor(t, s)
	tg.Port = relay.Port()
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := c.StartKeepalive(100*time.Millisecond, 600*time.Millisecond)
	defer w.Stop()

	// A healthy link stays up across several probes.
	time.Sleep(time.Second)
	if w.Err() != nil {
		t.Fatalf("healthy link declared lost: %v", w.Err())
	}
	runDone := make(chan error, 1)
	go func() {
		_, _, err := c.Run(context.Background(), "sleep 60", nil)
		runDone <- err
	}()
	time.Sleep(200 * time.Millisecond)
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
