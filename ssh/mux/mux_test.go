package mux

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// target is the fixture server, resolved without any ssh config.
func target(t *testing.T, s *sshtest.Server) *sshconfig.Target {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	ov := sshconfig.Overrides{Port: s.Port(), User: s.User(), IdentityFiles: []string{s.UserKeyPath}, IdentitiesOnly: true}
	tg, err := sshconfig.Resolve(context.Background(), "127.0.0.1", ov, sshconfig.ResolveOptions{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// served is a master serving s's connection at sock, and where Serve's
// verdict arrives.
type served struct {
	sock  string
	ended chan error
	tg    *sshconfig.Target
}

func serve(t *testing.T, s *sshtest.Server, persist time.Duration) *served {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mux")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tg := target(t, s)
	sv := &served{sock: Socket(dir, "prod", tg.Addr()), ended: make(chan error, 1), tg: tg}
	l, err := Listen(sv.sock)
	if err != nil {
		t.Fatal(err)
	}
	up, err := ssh.Dial(context.Background(), tg, ssh.DialOptions{Mode: ssh.Record})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	go func() { sv.ended <- l.Serve(context.Background(), up, persist) }()
	t.Cleanup(func() {
		if _, err := Exit(context.Background(), sv.sock, 5*time.Second); err != nil {
			t.Errorf("ending the master: %v", err)
		}
		sv.verdict(t)
	})
	return sv
}

// verdict is why the master ended, waited for at most a minute.
func (sv *served) verdict(t *testing.T) error {
	t.Helper()
	select {
	case err := <-sv.ended:
		sv.ended <- err // for the cleanup
		return err
	case <-time.After(time.Minute):
		t.Fatal("the master did not end")
		return nil
	}
}

func (sv *served) client(t *testing.T) *ssh.Client {
	t.Helper()
	c, err := Dial(context.Background(), sv.sock, sv.tg, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func logins(s *sshtest.Server) int { return strings.Count(s.Log(), "Accepted publickey") }

// Commands through the master run on its one connection: stdin reaches
// the host, stdout, stderr and the exit status come back, and the server
// saw one login for all of them.
func TestMasterRelaysCommands(t *testing.T) {
	s := sshtest.NewServer(t)
	sv := serve(t, s, 0)
	for i := 0; i < 3; i++ {
		c := sv.client(t)
		out, errOut, err := c.Run(context.Background(), "cat; echo to-stderr >&2; exit 3", strings.NewReader("from-stdin\n"))
		var ee *ssh.ExitError
		if !errors.As(err, &ee) || ee.Code != 3 {
			t.Fatalf("command %d: %v, want exit 3", i, err)
		}
		if string(out) != "from-stdin\n" || string(errOut) != "to-stderr\n" {
			t.Fatalf("command %d: stdout %q, stderr %q", i, out, errOut)
		}
		c.Close()
	}
	if n := logins(s); n != 1 {
		t.Fatalf("%d logins in the server's log for three commands through one master, want 1", n)
	}
	// A keepalive reaches the host and its answer comes back.
	c := sv.client(t)
	if _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
		t.Fatalf("keepalive through the master: %v", err)
	}
}

// With no client for ControlPersist, the master ends and removes its
// socket; a client still connected keeps it alive meanwhile.
func TestMasterEndsWhenIdle(t *testing.T) {
	s := sshtest.NewServer(t)
	sv := serve(t, s, 300*time.Millisecond)
	c := sv.client(t)
	if _, _, err := c.Run(context.Background(), "true", nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := sv.verdict(t); err == nil || !strings.Contains(err.Error(), "ControlPersist") {
		t.Fatalf("the master ended with %v, want idle past ControlPersist", err)
	}
	if _, err := os.Lstat(sv.sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket is left behind: %v", err)
	}
	if _, err := Dial(context.Background(), sv.sock, sv.tg, time.Second); !IsStale(err) {
		t.Fatalf("dialling an ended master: %v, want a stale socket", err)
	}
}

// Exit ends the master, and the clients still connected lose it.
func TestExitEndsTheMaster(t *testing.T) {
	s := sshtest.NewServer(t)
	sv := serve(t, s, 0)
	c := sv.client(t)
	ended, err := Exit(context.Background(), sv.sock, 5*time.Second)
	if err != nil || !ended {
		t.Fatalf("Exit = %v, %v", ended, err)
	}
	if err := sv.verdict(t); !strings.Contains(err.Error(), "asked to exit") {
		t.Fatalf("the master ended with %v", err)
	}
	c.Wait()
	if ended, err := Exit(context.Background(), sv.sock, time.Second); ended || err != nil {
		t.Fatalf("Exit of an ended master = %v, %v, want nothing to end", ended, err)
	}
}

// A second master for the same socket does not take it over while the
// first lives.
func TestListenRefusesALiveMaster(t *testing.T) {
	s := sshtest.NewServer(t)
	sv := serve(t, s, 0)
	if _, err := Listen(sv.sock); !errors.Is(err, ErrRunning) {
		t.Fatalf("Listen over a live master: %v, want ErrRunning", err)
	}
	sv.client(t) // and the first one still serves
}

// The server's session limit is the master's connection's, shared by
// its clients: a refused session reaches the client with the server's
// reason, as on a connection of its own.
func TestSessionLimitReachesTheClient(t *testing.T) {
	s := sshtest.NewServer(t, sshtest.WithMaxSessions(1))
	sv := serve(t, s, 0)
	a, b := sv.client(t), sv.client(t)
	held, err := a.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	direct, err := ssh.Dial(context.Background(), sv.tg, ssh.DialOptions{Mode: ssh.Record})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	first, err := direct.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	_, want := direct.NewSession()
	_, got := b.NewSession()
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Fatalf("a second session through the master: %v; on a connection of its own: %v", got, want)
	}
}
