package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/helpertest"
	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
)

// useLoggingHelper makes the helper the host runs a wrapper that appends
// the operation of each request it serves to the returned log file.
func useLoggingHelper(t *testing.T) (log string) {
	t.Helper()
	real := helpertest.Build(t)
	dir := t.TempDir()
	log = filepath.Join(dir, "ops.log")
	script := fmt.Sprintf(`#!/bin/sh
if [ "$1" = serve ]; then
	req=$(cat)
	printf '%%s\n' "$req" | sed -n 's/.*"op":"\([a-z-]*\)".*/\1/p' >>%[1]s
	printf '%%s' "$req" | %[2]s serve
	exit $?
fi
exec %[2]s "$@"
`, shquote.Quote(log), shquote.Quote(real))
	wrapper := filepath.Join(dir, helperbin.Name(localPlatform))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	helpertest.UseHelper(t, &locateHelpers, wrapper)
	return log
}

// useGatedHelper makes the helper the host runs a wrapper that passes g
// before it serves anything.
func useGatedHelper(t *testing.T, g *gate) {
	t.Helper()
	real := helpertest.Build(t)
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = serve ]; then\n%sfi\nexec %s \"$@\"\n", g.shell("$$"), shquote.Quote(real))
	wrapper := filepath.Join(t.TempDir(), helperbin.Name(localPlatform))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	helpertest.UseHelper(t, &locateHelpers, wrapper)
}

// loggedOps reads the operations served since the log was last emptied,
// handshakes left out, and empties it.
func loggedOps(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var ops []string
	for _, op := range strings.Fields(string(b)) {
		if op != "version" {
			ops = append(ops, op)
		}
	}
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return ops
}

// Regression: a refresh asks each host
// involved once, in one helper call for all of its sessions, and records
// each answer: an agent that exited while its controller lingers, a
// controller killed behind its back (lost), one still running (checked
// now). Asked again within a minute, nothing is written. A host that
// cannot be reached leaves its sessions as recorded, saying why, while
// the other host's are refreshed.
func TestRefreshSessionsOneHelperCallPerHost(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	relay := sshtest.NewRelay(t, f.srv.Addr())
	if _, _, err := f.exec.AddHost(ctx, AddHostOptions{Name: "other", HostName: "127.0.0.1", Port: relay.Port(), User: f.srv.User(),
		IdentityFiles: []string{f.srv.UserKeyPath}, IdentitiesOnly: true, WorkdirRoot: f.root}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec.TrustHost(ctx, TrustOptions{Name: "other", AcceptNew: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec.ApplyProfile(ctx, "other.yaml", []byte(fmt.Sprintf("name: other\nhost: other\nshell: sh\nrepositories:\n  - name: app\n    url: %s\n    branch: main\n", f.bare))); err != nil {
		t.Fatal(err)
	}
	launch := func(profile, script string) *records.Session {
		t.Helper()
		_, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: profile, Command: []string{"sh", "-c", script}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.exec.StopSession(context.Background(), s.ID) })
		return s
	}
	running, exited, killed := launch("web", "sleep 60"), launch("web", "exit 3"), launch("web", "sleep 60")
	elsewhere := launch("other", "sleep 60")
	waitState(t, exited.SessionDir, controller.StateExited)
	st, err := controller.ReadStatusFile(killed.SessionDir)
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(killed.PID, syscall.SIGKILL)
	waitGone(t, killed.PID)
	_ = syscall.Kill(-st.AgentPID, syscall.SIGKILL)
	waitGone(t, st.AgentPID)
	// Logged from here: a launch is one conversation of several requests,
	// which the logging wrapper (reading its stdin to the end) cannot serve.
	log := useLoggingHelper(t)

	ss := []*records.Session{running, exited, killed, elsewhere}
	views := f.exec.RefreshSessions(ctx, ss)
	if ops := loggedOps(t, log); len(ops) != 2 || ops[0] != protocol.OpSessionsProbe || ops[1] != protocol.OpSessionsProbe {
		t.Fatalf("operations served for 4 sessions on 2 hosts: %q, want one %s per host", ops, protocol.OpSessionsProbe)
	}
	want := []records.SessionState{records.SessionRunning, records.SessionExited, records.SessionLost, records.SessionRunning}
	for i, v := range views {
		if v.RefreshErr != nil || !v.Asked || v.State != want[i] || v.CheckedAt == nil || v.Stale(v.StateRecordedAt) {
			t.Errorf("session %d: %s, checked %v, asked %v, err %v; want %s checked now", i, v.State, v.CheckedAt, v.Asked, v.RefreshErr, want[i])
		}
	}
	if got := views[1].ExitCode; got == nil || *got != 3 {
		t.Errorf("exited session's code = %v, want 3", got)
	}
	for i, s := range ss {
		if ss[i], _, err = records.Get[records.Session](ctx, f.exec.cfg.Store, records.KindSession, s.ID); err != nil || ss[i].State != want[i] {
			t.Errorf("session %d recorded %s, %v; want %s", i, ss[i].State, err, want[i])
		}
	}

	_, before, _ := records.Get[records.Session](ctx, f.exec.cfg.Store, records.KindSession, running.ID)
	relay.Refuse()
	views = f.exec.RefreshSessions(ctx, ss)
	_, after, _ := records.Get[records.Session](ctx, f.exec.cfg.Store, records.KindSession, running.ID)
	if after.Revision != before.Revision {
		t.Errorf("a refresh within a minute that changed nothing wrote the record (revision %d -> %d)", before.Revision, after.Revision)
	}
	if v := views[0]; v.RefreshErr != nil || v.State != records.SessionRunning {
		t.Errorf("reachable host's session: %s, %v", v.State, v.RefreshErr)
	}
	if v := views[1]; v.Asked {
		t.Errorf("an exited session was asked about again")
	}
	var se *ssh.Error
	if v := views[3]; !errors.As(v.RefreshErr, &se) || (se.Class != ssh.ClassNetwork && se.Class != ssh.ClassTimeout) || v.State != records.SessionRunning {
		t.Errorf("unreachable host's session: %s, %v; want running as recorded, with a network error", v.State, v.RefreshErr)
	}
	relay.Pass()
}

// Regression: session ls --refresh asks its hosts at the same
// time. The helper each host runs waits at a gate until the other host's
// is there too, so a refresh that asked one host after the other would
// hold its first host's helper alone until the gate gave up.
func TestRefreshSessionsAsksHostsConcurrently(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	relay := sshtest.NewRelay(t, f.srv.Addr())
	if _, _, err := f.exec.AddHost(ctx, AddHostOptions{Name: "other", HostName: "127.0.0.1", Port: relay.Port(), User: f.srv.User(),
		IdentityFiles: []string{f.srv.UserKeyPath}, IdentitiesOnly: true, WorkdirRoot: f.root}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec.TrustHost(ctx, TrustOptions{Name: "other", AcceptNew: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec.ApplyProfile(ctx, "other.yaml", []byte(fmt.Sprintf("name: other\nhost: other\nshell: sh\nrepositories:\n  - name: app\n    url: %s\n    branch: main\n", f.bare))); err != nil {
		t.Fatal(err)
	}
	var ss []*records.Session
	for _, profile := range []string{"web", "other"} {
		_, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: profile, Command: []string{"sh", "-c", "sleep 60"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.exec.StopSession(context.Background(), s.ID) })
		ss = append(ss, s)
	}

	// From here on the helper each host runs waits at the gate before it
	// serves; one host's refresh runs the helper at most once at a time.
	g := newGate(t)
	useGatedHelper(t, g)
	done := make(chan []SessionView, 1)
	go func() { done <- f.exec.RefreshSessions(ctx, ss) }()
	if who := g.together(2); len(who) != 2 {
		t.Errorf("helpers at the gate at once: %q, want one for each of the 2 hosts", who)
	}
	for i, v := range <-done {
		if v.RefreshErr != nil || !v.Asked || v.State != records.SessionRunning || v.CheckedAt == nil {
			t.Errorf("session %d on %s: %s, checked %v, asked %v, err %v; want running, checked now", i, v.Host, v.State, v.CheckedAt, v.Asked, v.RefreshErr)
		}
	}
}
