package ssh

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// waitOutput waits until out holds want (10 s at most).
func waitOutput(t *testing.T, out *sshtest.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output: %q", want, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The command gets a terminal of the type and size asked for, a later
// size reaches it (SIGWINCH on the host), and its exit status comes back.
func TestStreamPTY(t *testing.T) {
	s := sshtest.NewServer(t)
	c, err := Dial(context.Background(), targetFor(t, s), DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resize := make(chan WindowSize, 1)
	stdin, typing := io.Pipe()
	defer typing.Close()
	out := &sshtest.Buffer{}
	script := `trap 'stty size; exit 4' WINCH
printf 'tty=%s term=%s size=%s\n' "$(tty)" "$TERM" "$(stty size)"
while :; do sleep 0.1; done`
	done := make(chan error, 1)
	go func() {
		done <- c.StreamPTY(context.Background(), script, PTY{Term: "vt220", Size: WindowSize{Width: 101, Height: 33}, Resize: resize}, stdin, out)
	}()
	waitOutput(t, out, "size=33 101")
	if !regexp.MustCompile(`tty=/dev/pts/[0-9]+ term=vt220 `).MatchString(out.String()) {
		t.Fatalf("the command has no terminal of the type asked for: %q", out.String())
	}
	resize <- WindowSize{Width: 120, Height: 40}
	err = <-done
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 4 {
		t.Fatalf("want exit 4 after the resize, got %v (output %q)", err, out.String())
	}
	if !strings.Contains(out.String(), "40 120") {
		t.Fatalf("the new size did not reach the host: %q", out.String())
	}
}

// Without a PTY the same command has no terminal.
func TestStreamHasNoTerminal(t *testing.T) {
	s := sshtest.NewServer(t)
	c, err := Dial(context.Background(), targetFor(t, s), DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, _, err := c.Run(context.Background(), "tty || true", nil)
	if err != nil || strings.TrimSpace(string(out)) != "not a tty" {
		t.Fatalf("tty without a PTY: %q, %v", out, err)
	}
}
