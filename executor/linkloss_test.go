package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
)

// A teardown whose link to the host dies while a session's drain is under
// way (the controller sealed, the agent in its grace after SIGTERM): the
// keepalive sees the link lost, so the drain is unreachable, not
// uncertain. Nothing is removed, the host is quarantined, the task waits
// in cleanup_pending with a job to retry (exit 8), and once the link is
// back and the host readmitted, the sweep drains with a receipt and only
// then removes the directory.
func TestArchiveLinkLostMidDrain(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	relay := f.farHost(t)
	profile := fmt.Sprintf("name: far\nhost: far\nshell: sh\nrepositories:\n  - name: app\n    url: %s\n    branch: main\nreclaim_task_dir: true\n", f.bare)
	if _, err := f.exec.ApplyProfile(ctx, "far.yaml", []byte(profile)); err != nil {
		t.Fatal(err)
	}
	// The agent ignores SIGTERM, so the drain waits out the grace before
	// the controller kills it: the window in which the link is cut.
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "far", Command: []string{"sh", "-c", "trap '' TERM; echo trap-set; exec sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, s.SessionDir, "trap-set")
	head := gitHead(t, task.TaskDir)

	f.cfg.KeepaliveInterval, f.cfg.KeepaliveDeadline = 200*time.Millisecond, 2*time.Second
	e := f.open(t)
	type result struct {
		res *TeardownResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := e.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive})
		done <- result{res, err}
	}()
	waitSealed(t, s.SessionDir, func() bool { return len(done) > 0 })
	relay.Freeze()
	r := <-done

	var pe *PendingError
	if !errors.As(r.err, &pe) || pe.Drain != records.DrainUnreachable || pe.NextAt == nil {
		t.Fatalf("archive with the link cut mid-drain: %+v, %v; want a pending cleanup (exit 8), drain unreachable, a retry time", r.res, r.err)
	}
	if r.res == nil || r.res.Phase != records.PhaseCleanupPending || r.res.Drain != records.DrainUnreachable {
		t.Fatalf("result %+v, want cleanup_pending, drain unreachable", r.res)
	}
	got, _, err := e.GetTask(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != records.PhaseCleanupPending || got.Teardown == nil || got.Teardown.Drain != records.DrainUnreachable ||
		!strings.Contains(got.Teardown.Reason, "lost while draining") {
		t.Fatalf("task %s, teardown %+v; want cleanup_pending, drain unreachable saying the link was lost while draining", got.Phase, got.Teardown)
	}
	job, _, err := records.Get[records.CleanupJob](ctx, e.cfg.Store, records.KindJob, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if job.State != records.JobRetryWait || job.Attempts != 1 || job.NextAt == nil || !job.NextAt.After(time.Now()) {
		t.Fatalf("job %+v, want retry_wait after 1 attempt with a later retry", job)
	}
	h, _, err := e.getHost(ctx, "far")
	if err != nil {
		t.Fatal(err)
	}
	if h.EffectiveStatus(time.Now()) != records.HostQuarantined || !strings.Contains(h.StatusReason, "was unreachable") {
		t.Fatalf("host far %s (%s), want quarantined for the unreachable drain", h.EffectiveStatus(time.Now()), h.StatusReason)
	}
	// Nothing removed: the directory, its marker and its checkout.
	for _, p := range []string{task.TaskDir, filepath.Join(task.TaskDir, ".kandev", "owner.json"), filepath.Join(task.TaskDir, ".git")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("after the lost drain: %v", err)
		}
	}
	if now := gitHead(t, task.TaskDir); now != head {
		t.Fatalf("the checkout's HEAD moved from %s to %s", head, now)
	}

	// The link is back: the readmit makes the job due, and the sweep
	// drains (the controller, sealed, has stopped its agent) with a
	// receipt before removing anything.
	relay.Thaw()
	if _, err := e.ReadmitHost(ctx, "far", "link back"); err != nil {
		t.Fatal(err)
	}
	rs, err := e.Sweep(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !rs[0].Ran || rs[0].Drain != records.DrainDrained || rs[0].Phase != records.PhaseAbsent {
		t.Fatalf("sweep after the readmit: %+v", rs)
	}
	sess, _, err := records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, s.ID)
	if err != nil || sess.Receipt == nil || !sess.State.Ended() {
		t.Fatalf("session after the sweep: %+v, %v; want ended with a receipt", sess, err)
	}
	if _, err := os.Stat(task.TaskDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after the sweep: %v", task.TaskDir, err)
	}
}

// waitLog polls the session's controller.log until it holds want.
func waitLog(t *testing.T, dir, want string) {
	t.Helper()
	p := filepath.Join(dir, "controller.log")
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), want) {
			return
		}
	}
	b, _ := os.ReadFile(p)
	t.Fatalf("%s never said %q:\n%s", p, want, b)
}

// waitSealed polls the session's status file until a drain sealed it;
// ended says whether the teardown that should seal it has returned.
func waitSealed(t *testing.T, dir string, ended func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := controller.ReadStatusFile(dir); err == nil && st.Sealed {
			return
		}
		if ended() {
			t.Fatal("the teardown ended before its drain sealed the controller")
		}
	}
	t.Fatalf("the controller in %s was never sealed", dir)
}

func gitHead(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD in %s: %v", dir, err)
	}
	return strings.TrimSpace(string(out))
}
