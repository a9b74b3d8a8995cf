package executor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
)

// Quarantine blocks launches only (docs/architecture.md, "Host status"):
// what an interrupted launch left on a quarantined host is settled as on
// any other. What the records prove is settled without the host (as
// `task ls` does); what needs the host waits, unchanged, while the host
// cannot be reached, and is settled once it answers, with no readmit.
// Recovery never lifts the quarantine: launches stay refused.
func TestRecoveryOnQuarantinedHost(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	relay := f.farHost(t)
	running, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "far", Command: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.exec.StopSession(context.Background(), s.ID) })
	never, s2, err := f.exec.Launch(ctx, LaunchOptions{Profile: "far", Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	interrupt(t, f.exec, s.ID, deadLauncher(t), 0)   // died after asking for its controller
	interrupt(t, f.exec, s2.ID, deadLauncher(t), -1) // died before asking for one
	if _, err := f.exec.QuarantineHost(ctx, "far", "suspected compromise", 0); err != nil {
		t.Fatal(err)
	}
	relay.Refuse() // and down, as a quarantined host often is

	// task ls: the records alone settle the launch that never asked for
	// a controller; the other needs the host.
	ts := []*records.Task{getTask(t, f.exec, running.ID), getTask(t, f.exec, never.ID)}
	_, pending, err := f.exec.RecoverTasks(ctx, ts, false)
	if err != nil || len(pending) != 1 || pending[0].ID != s.ID {
		t.Fatalf("records-only recovery: pending %v, %v; want only %s", pending, err, s.ID)
	}
	if got := getSession(t, f.exec, s2.ID); got.State != records.SessionFailed || !strings.Contains(got.Error, "before any controller start") {
		t.Fatalf("the launch that never asked for a controller: %s (%s), want failed", got.State, got.Error)
	}

	// The host is asked, and cannot answer: nothing changes.
	_, _, err = f.exec.RecoverTasks(ctx, []*records.Task{getTask(t, f.exec, running.ID)}, true)
	if err == nil || !strings.Contains(err.Error(), "cannot tell") {
		t.Fatalf("recovery with the host down: %v, want it to say the host cannot tell", err)
	}
	if got := getSession(t, f.exec, s.ID); got.State != records.SessionStarting {
		t.Fatalf("session settled without the host: %s", got.State)
	}

	// The host answers again, still quarantined: the running controller
	// proves itself with its token and is adopted.
	relay.Pass()
	if _, _, err := f.exec.RecoverTasks(ctx, []*records.Task{getTask(t, f.exec, running.ID)}, true); err != nil {
		t.Fatalf("recovery on the quarantined host: %v", err)
	}
	if got := getSession(t, f.exec, s.ID); got.State != records.SessionRunning || got.PID != s.PID || got.RemotePort != s.RemotePort {
		t.Fatalf("after the recovery: %+v, want running as pid %d on port %d", got, s.PID, s.RemotePort)
	}
	h, _, err := f.exec.getHost(ctx, "far")
	if err != nil {
		t.Fatal(err)
	}
	if h.EffectiveStatus(time.Now()) != records.HostQuarantined || h.StatusReason != "suspected compromise" {
		t.Fatalf("host far after the recovery: %s (%s), want still quarantined", h.EffectiveStatus(time.Now()), h.StatusReason)
	}
	_, _, err = f.exec.Launch(ctx, LaunchOptions{Profile: "far", Command: []string{"true"}})
	var re *RefusedError
	if !errors.As(err, &re) || re.Status != records.HostQuarantined {
		t.Fatalf("launch after the recovery: %v, want refused (quarantined)", err)
	}
}

func getTask(t *testing.T, e *Executor, id string) *records.Task {
	t.Helper()
	x, _, err := e.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func getSession(t *testing.T, e *Executor, id string) *records.Session {
	t.Helper()
	x, _, err := e.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
