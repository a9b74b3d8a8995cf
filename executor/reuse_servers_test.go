package executor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/records"
)

// Dropbear serves the master's connection as OpenSSH does.
func TestReuseOnDropbear(t *testing.T) {
	srv := sshtest.NewDropbear(t)
	f := newReuseFixtureOn(t, srv, "Host prod\n"+reuseOn, "")
	f.commandsLogInOnce(t, srv, 2)
}

// Behind a ProxyJump bastion the master holds the whole chain: the
// target and the bastion each see one login for two commands.
func TestReuseThroughBastion(t *testing.T) {
	bastion, target := sshtest.NewServer(t), sshtest.NewServer(t)
	config := fmt.Sprintf("Host bastion\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\nHost prod\n%s",
		bastion.Port(), bastion.User(), bastion.UserKeyPath, reuseOn)
	f := newReuseFixtureOn(t, target, config, "bastion")
	mark := serverLogins(bastion)
	f.commandsLogInOnce(t, target, 2)
	if n := serverLogins(bastion) - mark; n != 1 {
		t.Fatalf("the bastion saw %d logins for two commands, want 1", n)
	}
}

// On a server that forwards no ports, a launch, `session logs` and
// `session stop` (each its own command) share one login through the
// master: the server's refusal of a direct-tcpip channel comes back
// through it as a refusal, so the controller is reached through the
// helper relay.
func TestReuseOnHostWithoutForwarding(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithoutTCPForwarding())
	if err := os.WriteFile(f.cfg.SSHConfig, []byte("Host prod\n"+reuseOn), 0o600); err != nil {
		t.Fatal(err)
	}
	f.cfg.MasterCommand = testMasters(f.state, f.cfg.SSHConfig)
	t.Cleanup(func() { f.open(t).CloseMasters(context.Background(), "prod") })
	ctx := context.Background()
	mark := serverLogins(f.srv)
	_, s, err := f.open(t).Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"sh", "-c", "echo first; sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	e := f.open(t)
	a, err := e.attachSession(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if st, err := e.liveness(ctx, a); err != nil || st.State != "running" {
		t.Fatalf("liveness through the relay: %+v, %v", st, err)
	}
	if a.hc.relay.refused == nil {
		t.Fatal("the controller was reached without the server refusing a channel")
	}
	var log bytes.Buffer
	if _, err := f.open(t).StreamLogs(ctx, s.ID, false, &log); err != nil || !strings.Contains(log.String(), "first") {
		t.Fatalf("session logs: %q, %v", log.String(), err)
	}
	stopped, err := f.open(t).StopSession(ctx, s.ID)
	if err != nil || stopped.State != records.SessionStopped {
		t.Fatalf("session stop through the relay: %+v, %v", stopped, err)
	}
	if n := serverLogins(f.srv) - mark; n != 1 {
		t.Fatalf("%d logins for a launch, logs and stop with ControlPersist, want 1", n)
	}
}
