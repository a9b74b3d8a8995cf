package executor

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh"
)

// twoCommandsLogInOnce runs two commands through prod's master, each
// with its output and exit status, and checks srv saw one login for both.
func (f *reuseFixture) twoCommandsLogInOnce(t *testing.T, srv *sshtest.Server) {
	t.Helper()
	mark := serverLogins(srv)
	for i := 0; i < 2; i++ {
		out, err := f.command(t, "echo hello; exit 4")
		var ee *ssh.ExitError
		if !errors.As(err, &ee) || ee.Code != 4 || out != "hello\n" {
			t.Fatalf("command %d: %q, %v; want hello and exit 4", i, out, err)
		}
	}
	if n := serverLogins(srv) - mark; n != 1 {
		t.Fatalf("%d logins for two commands with ControlPersist, want 1", n)
	}
	if f.masterPID(t) == 0 {
		t.Fatal("no master is left for the next command")
	}
}

// Dropbear serves the master's connection as OpenSSH does.
func TestReuseOnDropbear(t *testing.T) {
	srv := sshtest.NewDropbear(t)
	f := newReuseFixtureOn(t, srv, "Host prod\n"+reuseOn, "")
	f.twoCommandsLogInOnce(t, srv)
}

// Behind a ProxyJump bastion the master holds the whole chain: the
// target and the bastion each see one login for two commands.
func TestReuseThroughBastion(t *testing.T) {
	bastion, target := sshtest.NewServer(t), sshtest.NewServer(t)
	config := fmt.Sprintf("Host bastion\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\nHost prod\n%s",
		bastion.Port(), bastion.User(), bastion.UserKeyPath, reuseOn)
	f := newReuseFixtureOn(t, target, config, "bastion")
	mark := serverLogins(bastion)
	f.twoCommandsLogInOnce(t, target)
	if n := serverLogins(bastion) - mark; n != 1 {
		t.Fatalf("the bastion saw %d logins for two commands, want 1", n)
	}
}
