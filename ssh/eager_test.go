package ssh

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// StreamEager sends stdin with the command: none of it is lost, and the
// exit status, a signal, stderr and cancellation read as with Stream.
func TestStreamEager(t *testing.T) {
	s := sshtest.NewServer(t)
	c, err := Dial(context.Background(), targetFor(t, s), DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	input := strings.Repeat("in'put\n", 50000) // several channel windows' worth
	var out, errb bytes.Buffer
	err = c.StreamEager(ctx, "echo started; cat; echo oops >&2; exit 3", strings.NewReader(input), &out, &errb, 10*time.Second)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 || ee.Signal != "" {
		t.Fatalf("want exit 3, got %v", err)
	}
	if out.String() != "started\n"+input || strings.TrimSpace(errb.String()) != "oops" {
		t.Fatalf("stdout %d bytes (want %d), stderr %q", out.Len(), len("started\n"+input), errb.String())
	}

	out.Reset()
	if err := c.StreamEager(ctx, "echo ok", nil, &out, nil, 10*time.Second); err != nil || out.String() != "ok\n" {
		t.Fatalf("no stdin: %q, %v", out.String(), err)
	}

	err = c.StreamEager(ctx, "echo x; kill -TERM $$", nil, nil, nil, 10*time.Second)
	if !errors.As(err, &ee) || ee.Signal != "TERM" || ee.Code != 128+15 {
		t.Fatalf("want killed by TERM, got %v", err)
	}

	// Silence past the bound reads as a command the host never started.
	err = c.StreamEager(ctx, "sleep 30", nil, nil, nil, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "nothing came back within 300ms") {
		t.Fatalf("silent command: %v", err)
	}

	// Once it spoke, only the context bounds it: cancelled a whole bound
	// after its first output, so past the bound however soon it spoke. The
	// bound leaves a loaded host room to start the command.
	const bound = 3 * time.Second
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	spoke := writerFunc(func(p []byte) (int, error) {
		time.AfterFunc(bound, cancel)
		return len(p), nil
	})
	err = c.StreamEager(cctx, "echo hi; sleep 30", nil, spoke, nil, bound)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled command must return the context error, got %v", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
