package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh"
)

// reuseFixture is a trusted host "prod" on a real sshd, with the ssh
// config's reuse settings given (none: no reuse).
type reuseFixture struct {
	srv   *sshtest.Server
	cfg   Config
	state string
	mark  int // logins before the commands under test
}

func newReuseFixture(t *testing.T, control string) *reuseFixture {
	t.Helper()
	return newReuseFixtureOn(t, sshtest.NewServer(t), "Host prod\n"+control, "")
}

// newReuseFixtureOn is the fixture on srv, with the ssh config given
// (its Host prod block asks for reuse or not) and prod reached through
// the jump host given ("": directly).
func newReuseFixtureOn(t *testing.T, srv *sshtest.Server, config, jump string) *reuseFixture {
	t.Helper()
	t.Setenv("SSH_AUTH_SOCK", "")
	f := &reuseFixture{srv: srv, state: filepath.Join(t.TempDir(), "state")}
	sshConfig := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(sshConfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	f.cfg = Config{SSHConfig: sshConfig, MasterCommand: testMasters(f.state, sshConfig)}
	e := f.open(t)
	ctx := context.Background()
	if _, _, err := e.AddHost(ctx, AddHostOptions{Name: "prod", HostName: "127.0.0.1", Port: f.srv.Port(), User: f.srv.User(),
		IdentityFiles: []string{f.srv.UserKeyPath}, IdentitiesOnly: true, ProxyJump: jump}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.TrustHost(ctx, TrustOptions{Name: "prod", AcceptNew: true}); err != nil {
		t.Fatal(err)
	}
	f.mark = f.logins()
	t.Cleanup(func() { e.CloseMasters(context.Background(), "prod") })
	return f
}

// reuseOn asks for reuse for longer than any wait of these tests: a
// master that ends did not end idle.
const reuseOn = "  ControlMaster auto\n  ControlPath ~/.ssh/cm-%C\n  ControlPersist 600\n"

// open is another kandev-exec command on the same state dir.
func (f *reuseFixture) open(t *testing.T) *Executor {
	t.Helper()
	return (&launchFixture{cfg: f.cfg, state: f.state}).open(t)
}

// logins counts the logins in the server's log: OpenSSH's words or
// Dropbear's.
func (f *reuseFixture) logins() int { return serverLogins(f.srv) }

func serverLogins(s *sshtest.Server) int {
	log := s.Log()
	return strings.Count(log, "Accepted publickey") + strings.Count(log, "Pubkey auth succeeded")
}

// command is one kandev-exec command running script on prod.
func (f *reuseFixture) command(t *testing.T, script string) (string, error) {
	t.Helper()
	e := f.open(t)
	ctx := context.Background()
	h, _, err := e.getHost(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	hc, err := e.connect(ctx, h)
	if err != nil {
		return "", err
	}
	defer hc.Close()
	out, _, err := hc.c.Run(ctx, script, nil)
	return string(out), err
}

// masterPID is the pid of prod's live master, from the note beside its
// lock (0: none).
func (f *reuseFixture) masterPID(t *testing.T) int {
	t.Helper()
	socks, _ := filepath.Glob(filepath.Join(f.state, "mux", "*.sock"))
	if len(socks) != 1 {
		return 0
	}
	h := fsx.ReadHolder(socks[0] + ".lock")
	if h == nil {
		return 0
	}
	return h.PID
}

// waitMasterGone waits, at most half a minute, for process pid to end.
func waitMasterGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("master pid %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With ControlMaster, ControlPath and ControlPersist set, three commands
// in a row log in once, and each gets its output and exit status.
func TestThreeCommandsLogInOnce(t *testing.T) {
	f := newReuseFixture(t, reuseOn)
	f.commandsLogInOnce(t, f.srv, 3)
}

// commandsLogInOnce runs n commands through prod's master, each with its
// output and exit status, and checks srv saw one login for them all.
func (f *reuseFixture) commandsLogInOnce(t *testing.T, srv *sshtest.Server, n int) {
	t.Helper()
	mark := serverLogins(srv)
	for i := 0; i < n; i++ {
		out, err := f.command(t, "echo hello; exit 4")
		var ee *ssh.ExitError
		if !errors.As(err, &ee) || ee.Code != 4 || out != "hello\n" {
			t.Fatalf("command %d: %q, %v; want hello and exit 4", i, out, err)
		}
	}
	if logins := serverLogins(srv) - mark; logins != 1 {
		t.Fatalf("%d logins for %d commands with ControlPersist, want 1", logins, n)
	}
	if f.masterPID(t) == 0 {
		t.Fatal("no master is left for the next command")
	}
}

// Without them, each command logs in, and no master is started.
func TestWithoutReuseEachCommandLogsIn(t *testing.T) {
	for name, control := range map[string]string{
		"unset":          "",
		"no persist":     "  ControlMaster auto\n  ControlPath ~/.ssh/cm-%C\n",
		"no path":        "  ControlMaster auto\n  ControlPersist 60\n",
		"master refused": "  ControlMaster no\n  ControlPath ~/.ssh/cm-%C\n  ControlPersist 60\n",
	} {
		t.Run(name, func(t *testing.T) {
			f := newReuseFixture(t, control)
			for i := 0; i < 3; i++ {
				if out, err := f.command(t, "echo hello"); err != nil || out != "hello\n" {
					t.Fatalf("command %d: %q, %v", i, out, err)
				}
			}
			if n := f.logins() - f.mark; n != 3 {
				t.Fatalf("%d logins for three commands, want 3", n)
			}
			if pid := f.masterPID(t); pid != 0 {
				t.Fatalf("a master (pid %d) was started", pid)
			}
		})
	}
}

// A master idle past ControlPersist ends, and the next command starts
// another.
func TestMasterEndsIdlePastControlPersist(t *testing.T) {
	f := newReuseFixture(t, "  ControlMaster auto\n  ControlPath ~/.ssh/cm-%C\n  ControlPersist 1\n")
	if _, err := f.command(t, "true"); err != nil {
		t.Fatal(err)
	}
	pid := f.masterPID(t)
	if pid == 0 {
		t.Fatal("no master was started")
	}
	waitMasterGone(t, pid)
	if _, err := f.command(t, "true"); err != nil {
		t.Fatal(err)
	}
	if n := f.logins() - f.mark; n != 2 {
		t.Fatalf("%d logins, want 2: one per master", n)
	}
}

// `host trust --replace`, `host set` and `host rm` close the host's
// master: the next command dials under the new settings.
func TestTrustSetAndRemoveCloseTheMaster(t *testing.T) {
	f := newReuseFixture(t, reuseOn)
	ctx := context.Background()
	root := "/srv/other"
	for _, c := range []struct {
		name   string
		change func(e *Executor) error
	}{
		{"trust --replace", func(e *Executor) error {
			_, err := e.TrustHost(ctx, TrustOptions{Name: "prod", Replace: true, AcceptNew: true})
			return err
		}},
		{"set", func(e *Executor) error {
			_, err := e.SetHost(ctx, "prod", HostChanges{WorkdirRoot: &root})
			return err
		}},
	} {
		if _, err := f.command(t, "true"); err != nil {
			t.Fatal(err)
		}
		pid := f.masterPID(t)
		if err := c.change(f.open(t)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if pid == 0 {
			t.Fatalf("%s: no master to close", c.name)
		}
		waitMasterGone(t, pid)
	}
	if _, err := f.command(t, "true"); err != nil {
		t.Fatal(err)
	}
	pid := f.masterPID(t)
	if err := f.open(t).RemoveHost(ctx, "prod", false); err != nil {
		t.Fatal(err)
	}
	if pid == 0 {
		t.Fatal("rm: no master to close")
	}
	waitMasterGone(t, pid)
}

// The master dials with every pin checked: after the host's key changed
// it does not start, and the command, dialling directly, fails as
// without reuse: the key changed (exit 5).
func TestMasterChecksThePins(t *testing.T) {
	f := newReuseFixture(t, reuseOn)
	f.srv.RotateHostKey()
	_, err := f.command(t, "true")
	var de *ssh.Error
	if !errors.As(err, &de) || de.Class != ssh.ClassHostKey {
		t.Fatalf("command after the key changed: %v, want a host key error", err)
	}
	if pid := f.masterPID(t); pid != 0 {
		t.Fatalf("a master (pid %d) serves a host whose key changed", pid)
	}
	log, _ := os.ReadFile(filepath.Join(f.state, "logs", "master-prod.log"))
	if !strings.Contains(string(log), "host key") {
		t.Fatalf("the master's log does not say why it did not start:\n%s", log)
	}
}
