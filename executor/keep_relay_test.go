package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// Operations that wait on a host keep their claim while the link to it
// is frozen past the claim's TTL (keep_test.go has the helpers).

// farHost adds and trusts host "far", reached through a relay the test
// can freeze, with a profile "far" on it.
func (f *launchFixture) farHost(t *testing.T) *sshtest.Relay {
	t.Helper()
	ctx := context.Background()
	relay := sshtest.NewRelay(t, f.srv.Addr())
	if _, _, err := f.exec.AddHost(ctx, AddHostOptions{Name: "far", HostName: "127.0.0.1", Port: relay.Port(), User: f.srv.User(),
		IdentityFiles: []string{f.srv.UserKeyPath}, IdentitiesOnly: true, WorkdirRoot: f.root}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec.TrustHost(ctx, TrustOptions{Name: "far", AcceptNew: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec.ApplyProfile(ctx, "far.yaml", []byte(fmt.Sprintf("name: far\nhost: far\nshell: sh\nrepositories:\n  - name: app\n    url: %s\n    branch: main\n", f.bare))); err != nil {
		t.Fatal(err)
	}
	return relay
}

// waitClaimed polls until the task is claimed; ended says whether the
// operation that should claim it has already ended.
func waitClaimed(t *testing.T, st state.Store, taskID string, ended func() bool) {
	t.Helper()
	for i := 0; ; i++ {
		c, err := st.ClaimHolder(context.Background(), records.KindTask, taskID)
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			return
		}
		if ended() {
			t.Fatal("the operation ended without claiming the task")
		}
		if i > 3000 {
			t.Fatal("the task was not claimed within a minute")
		}
		time.Sleep(20 * time.Millisecond) // polling the stored claim
	}
}

// The recovery of an interrupted launch keeps the task's claim while it
// waits on a host that does not answer (a link frozen past the claim's
// TTL): another process is refused meanwhile, and once the link is back
// the recovery adopts the running session.
func TestRecoveryKeepsItsClaimWhileTheHostIsSlow(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	relay := f.farHost(t)
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "far", Command: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.exec.StopSession(context.Background(), s.ID) })
	interrupt(t, f.exec, s.ID, deadLauncher(t), 0)

	f.cfg.ClaimTTL = keepTTL
	e, other := f.open(t), f.open(t)
	relay.Freeze()
	done := make(chan error, 1)
	go func() {
		_, _, err := e.RecoverTasks(ctx, []*records.Task{task}, true)
		done <- err
	}()
	waitClaimed(t, e.cfg.Store, task.ID, func() bool { return len(done) > 0 })
	heldPastTTL(t, e.cfg.Store, records.KindTask, task.ID)
	claimRefused(t, other, task.ID)
	relay.Thaw()
	if err := <-done; err != nil {
		t.Fatalf("the recovery: %v", err)
	}
	got, _, err := e.GetSession(ctx, s.ID)
	if err != nil || got.State != records.SessionRunning || got.PID != s.PID {
		t.Fatalf("after the recovery: %+v, %v", got, err)
	}
}

// A reclaim that removes an archived task's directory keeps the task's
// claim while the host's link is frozen past the TTL: another process is
// refused meanwhile, and once the link is back the directory is removed
// and the task recorded absent.
func TestReclaimKeepsItsClaimWhileTheHostIsSlow(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	relay := f.farHost(t)
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "far", Command: []string{"true"}})
	if err != nil || task.TaskDir == "" {
		t.Fatalf("launch: %+v, %v", task, err)
	}
	waitState(t, s.SessionDir, controller.StateExited)
	if res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive}); err != nil || res.Phase != records.PhaseArchived {
		t.Fatalf("archive: %+v, %v", res, err)
	}
	plan, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "far"})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(plan, func(r ReclaimRow) bool { return r.TaskID == task.ID })
	if i < 0 || plan[i].Action != ReclaimRemove {
		t.Fatalf("the plan for the archived task: %+v", plan)
	}

	f.cfg.ClaimTTL = keepTTL
	e, other := f.open(t), f.open(t)
	relay.Freeze()
	type result struct {
		rows []ReclaimRow
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := e.ApplyReclaim(ctx, plan[i:i+1], nil)
		done <- result{rows, err}
	}()
	waitClaimed(t, e.cfg.Store, task.ID, func() bool { return len(done) > 0 })
	heldPastTTL(t, e.cfg.Store, records.KindTask, task.ID)
	claimRefused(t, other, task.ID)
	relay.Thaw()
	r := <-done
	if r.err != nil || len(r.rows) != 1 || r.rows[0].Action != ReclaimRemoved {
		t.Fatalf("the reclaim: %+v, %v", r.rows, r.err)
	}
	got, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, task.ID)
	if err != nil || got.Phase != records.PhaseAbsent {
		t.Fatalf("the task after the reclaim: %+v, %v", got, err)
	}
	if _, err := os.Stat(task.TaskDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after the reclaim: %v", task.TaskDir, err)
	}
}
