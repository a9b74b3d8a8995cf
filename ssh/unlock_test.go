package ssh

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// lockedTarget is a server reached only with a new key protected by the
// passphrase s3cret, at path locked.
func lockedTarget(t *testing.T) (tg *sshconfig.Target, locked string) {
	t.Helper()
	s := sshtest.NewServer(t)
	tg = targetFor(t, s)
	locked, pub := s.NewUserKey(t, "s3cret")
	s.AuthorizeKey(pub)
	tg.IdentityFiles = []string{locked}
	return tg, locked
}

// answers is a Prompt that gives the passphrases in turn and notes each
// prompt it was shown.
type answers struct {
	mu    sync.Mutex
	given []string
	shown []string
}

func (a *answers) prompt(p string) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.shown = append(a.shown, p)
	if len(a.given) == 0 {
		return nil, errors.New("no more answers")
	}
	pass := a.given[0]
	a.given = a.given[1:]
	return []byte(pass), nil
}

// A passphrase-protected key is unlocked by asking, as OpenSSH asks: once
// for every dial of the command, again after a wrong answer, and never for
// a key the server would not take.
func TestPassphraseAsked(t *testing.T) {
	s := sshtest.NewServer(t)
	tg := targetFor(t, s)
	locked, pub := s.NewUserKey(t, "s3cret")
	tg.IdentityFiles = []string{locked}

	a := &answers{given: []string{"wrong", "s3cret"}}
	u := &Unlocker{Prompt: a.prompt}
	if _, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Unlocker: u}); err == nil {
		t.Fatal("an unauthorized key logged in")
	}
	if len(a.shown) != 0 {
		t.Fatalf("asked %q for a key the server does not take", a.shown)
	}
	s.AuthorizeKey(pub)
	for range 2 {
		c, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Unlocker: u})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	want := []string{"Enter passphrase for key '" + locked + "': ", "Bad passphrase, try again for " + locked + ": "}
	if strings.Join(a.shown, "|") != strings.Join(want, "|") {
		t.Fatalf("prompts %q, want %q", a.shown, want)
	}

	a = &answers{given: []string{"a", "b", "c", "d"}}
	_, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Unlocker: &Unlocker{Prompt: a.prompt}})
	var e *Error
	var pp *PassphraseKeyError
	if !errors.As(err, &e) || e.Class != ClassAuth || !errors.As(err, &pp) || !pp.Wrong || len(a.shown) != passphraseTries {
		t.Fatalf("three wrong passphrases: %v (asked %d times)", err, len(a.shown))
	}
}

// Without a terminal a locked key is an auth failure that says why the
// agent did not offer it, once: no agent, a socket nobody answers on, a
// locked agent.
func TestPassphraseKeyNamesTheAgent(t *testing.T) {
	tg, locked := lockedTarget(t)
	dir, err := os.MkdirTemp("", "ke-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	agentd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agentd.Start(); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	t.Cleanup(func() { agentd.Process.Kill(); agentd.Wait() })
	lockAgent(t, sock, locked)

	for _, c := range []struct{ sock, want string }{
		{"", "no ssh-agent is running (SSH_AUTH_SOCK is not set)"},
		{filepath.Join(dir, "gone"), "SSH_AUTH_SOCK names " + filepath.Join(dir, "gone") + ", where no ssh-agent answers"},
		{sock, "the ssh-agent at " + sock + " lists no keys: it is locked (`ssh-add -X` unlocks it) or empty"},
	} {
		t.Setenv("SSH_AUTH_SOCK", c.sock)
		_, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
		var e *Error
		if !errors.As(err, &e) || e.Class != ClassAuth || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SSH_AUTH_SOCK=%q: %v, want it to say %q", c.sock, err, c.want)
			continue
		}
		if n := strings.Count(err.Error(), "protected by a passphrase"); n != 1 {
			t.Errorf("the passphrase sentence appears %d times: %v", n, err)
		}
		if !strings.Contains(e.Hint, "ssh-add "+locked) {
			t.Errorf("hint %q", e.Hint)
		}
	}
}

// lockAgent adds the key at path (asking its passphrase through
// SSH_ASKPASS) to the agent at sock, then locks the agent.
func lockAgent(t *testing.T, sock, path string) {
	t.Helper()
	ask := filepath.Join(t.TempDir(), "ask")
	if err := os.WriteFile(ask, []byte("#!/bin/sh\necho s3cret\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "ssh-agent listening", func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	for _, args := range [][]string{{path}, {"-x"}} {
		cmd := exec.Command("ssh-add", args...)
		cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock, "SSH_ASKPASS="+ask, "SSH_ASKPASS_REQUIRE=force")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add %v: %v: %s", args, err, out)
		}
	}
}

// The connect timeout does not run while a person types the passphrase.
func TestPassphrasePromptStopsTheClock(t *testing.T) {
	tg, _ := lockedTarget(t)
	slow := func(string) ([]byte, error) {
		time.Sleep(time.Second) // a person typing, for longer than the whole timeout
		return []byte("s3cret"), nil
	}
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Timeout: 500 * time.Millisecond, Unlocker: &Unlocker{Prompt: slow}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
