package executor

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
)

// The host measures a directory's age at its walk, so the hour says
// nothing about a task recorded after the records were read unless the
// walk follows the read closely: a root walked long after (earlier
// roots' removals took their time) showed a live task's directory, made
// just after the read, an hour old, and the listing removed it. Here the
// records were read three minutes before the send (past
// reclaim.ListedWindow), and a task launched after the read has its
// directory read an hour old (its agent done, its controller stopped, as
// an hour later): the listing only lists, and the second request, with
// the records read again, keeps the live task's directory and removes
// the old orphan.
func TestConfirmedReclaimKeepsLaterRootsYoungerThanTheRead(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	old := f.orphanDir(t, "toldorphan000", 48*time.Hour)
	var live *records.Task
	confirmedViewRead = func() time.Time { return time.Now().Add(-3 * time.Minute) }
	afterConfirmedView = func() {
		task, s, err := f.open(t).Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}})
		if err != nil {
			t.Errorf("launch: %v", err)
			return
		}
		waitState(t, s.SessionDir, controller.StateExited)
		stopControllers(t, task.TaskDir)
		backdate(t, task.TaskDir, 61*time.Minute)
		live = task
	}
	defer func() { afterConfirmedView, confirmedViewRead = func() {}, time.Now }()
	rows, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "prod", Confirmed: &ConfirmedApply{}})
	afterConfirmedView, confirmedViewRead = func() {}, time.Now
	if err != nil || live == nil {
		t.Fatalf("the confirmed listing: %v", err)
	}
	for _, dir := range []string{old, live.TaskDir} {
		i := slices.IndexFunc(rows, func(r ReclaimRow) bool { return r.Path == dir })
		if i < 0 || rows[i].Action != ReclaimRemove {
			t.Fatalf("%s after a listing past the window: %+v, want it planned (an orphan to the records sent), not applied", dir, rows)
		}
	}
	if _, err := os.Stat(filepath.Join(live.TaskDir, ".git")); err != nil {
		t.Fatalf("the listing removed the directory of task %s, recorded after the read: %v", live.ID, err)
	}
	rows, err = f.exec.ApplyReclaim(ctx, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		switch {
		case r.Path == live.TaskDir && (r.Action != ReclaimSkipped || r.Reason != string(reclaim.LiveTask)):
			t.Errorf("the live task's directory: %s %s (%s), want skipped live_task", r.Action, r.Reason, r.Detail)
		case r.Path == old && r.Action != ReclaimRemoved:
			t.Errorf("the old orphan: %s %s (%s), want removed by the second request", r.Action, r.Reason, r.Detail)
		}
	}
	if _, err := os.Stat(filepath.Join(live.TaskDir, ".git")); err != nil {
		t.Errorf("the live task's checkout after the apply: %v", err)
	}
}

// Ctrl-C while a later root's removal waits on its upstream used to end
// the conversation, and the answers already read (with what they
// removed) were thrown away: a removal no row reported. The listing now
// stops when cancelled (the proof it runs, and the listings sent behind
// it) and answers, so every removal made is a row, and the apply that
// cannot follow gives the rows back with its error.
func TestConfirmedReclaimInterruptedReportsEarlierRootsRemovals(t *testing.T) {
	f := newLaunchFixture(t)
	first, second := f.twoRootsOfOrphans(t)
	asked := stallUpstream(t, second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-asked: // the second root's proof waits on its upstream: the first root is done
			cancel()
		case <-ctx.Done():
		}
	}()
	rows, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "prod", Confirmed: &ConfirmedApply{}})
	if ctx.Err() == nil {
		t.Fatalf("the second root's proof never asked its upstream: %+v, %v", rows, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s was not removed before the interrupt: %v", first, err)
	}
	i := slices.IndexFunc(rows, func(r ReclaimRow) bool { return r.Path == first })
	if i < 0 || rows[i].Action != ReclaimRemoved || rows[i].Proof == nil {
		t.Errorf("%s was removed by the listing, and its row says %+v", first, rows)
	}
	if _, err := os.Stat(filepath.Join(second, ".git")); err != nil {
		t.Errorf("%s, whose proof was interrupted: %v", second, err)
	}
	// The host stopped the second root's proof and answered: its row says
	// so, rather than the host's conversation killed with it unanswered
	// (and whatever the helper did after that unknown). The proof cut
	// short is no skip: it failed, cancelled, to be proven again.
	if i := slices.IndexFunc(rows, func(r ReclaimRow) bool { return r.Path == second }); i < 0 ||
		rows[i].Action != ReclaimFailed || rows[i].Reason != string(reclaim.Cancelled) {
		t.Errorf("%s, whose proof the interrupt stopped: %+v, want the host's answer (failed, cancelled)", second, rows)
	}
	// The apply after it cannot start (its records cannot be read under
	// a cancelled context), and still gives back what the listing did.
	applied, err := f.exec.ApplyReclaim(ctx, rows, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the apply after the interrupt: %v, want it cancelled", err)
	}
	if i := slices.IndexFunc(applied, func(r ReclaimRow) bool { return r.Path == first }); i < 0 || applied[i].Action != ReclaimRemoved {
		t.Errorf("the interrupted apply's rows lost %s's removal: %+v", first, applied)
	}
	if slices.ContainsFunc(applied, func(r ReclaimRow) bool { return r.Action == ReclaimRemove }) {
		t.Errorf("the interrupted apply left rows planned, as if still to come: %+v", applied)
	}
}

// stallUpstream points dir's origin at a server that accepts and never
// answers, and keeps dir unchanged for two days; the channel closes at
// its first connection.
func stallUpstream(t *testing.T, dir string) <-chan struct{} {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	asked := make(chan struct{})
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if held = append(held, c); len(held) == 1 {
				close(asked)
			}
		}
	}()
	if out, err := exec.Command("git", "-C", dir, "remote", "set-url", "origin", "http://"+ln.Addr().String()+"/app.git").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	backdate(t, dir, 48*time.Hour)
	return asked
}

// stopControllers stands for a finished agent's controller having
// lingered its time and exited.
func stopControllers(t *testing.T, dir string) {
	t.Helper()
	for _, r := range controller.RunningIn(dir) {
		_ = syscall.Kill(r.PID, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if len(controller.RunningIn(dir)) == 0 {
			return
		}
	}
	t.Fatalf("a controller in %s still runs", dir)
}

// A conversation that ends after the first root's listing (the link
// dropped) used to return no rows at all, though that listing removed:
// the listings read come back with the error, their removals as rows,
// and the rest of the host is one failed row.
func TestConfirmedReclaimCutShortReportsTheListingsRead(t *testing.T) {
	f := newLaunchFixture(t)
	first, _ := f.twoRootsOfOrphans(t)
	afterRootListed = func(cv *remote.Conversation) { cv.Finish(0) }
	defer func() { afterRootListed = func(*remote.Conversation) {} }()
	rows, err := f.exec.ReclaimPlan(context.Background(), ReclaimOptions{Host: "prod", Confirmed: &ConfirmedApply{}})
	afterRootListed = func(*remote.Conversation) {}
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rows, func(r ReclaimRow) bool { return r.Path == first })
	if i < 0 || rows[i].Action != ReclaimRemoved || rows[i].Proof == nil {
		t.Errorf("%s, removed by the listing read before the conversation ended: %+v", first, rows)
	}
	if !slices.ContainsFunc(rows, func(r ReclaimRow) bool {
		return r.Host == "prod" && r.Path == "" && r.Action == ReclaimFailed && r.Err != nil
	}) {
		t.Errorf("no failed row for the rest of the host: %+v", rows)
	}
}

// twoRootsOfOrphans gives the host a second root, listed after the
// first, and an old orphan in each.
func (f *launchFixture) twoRootsOfOrphans(t *testing.T) (first, second string) {
	t.Helper()
	first = f.orphanDir(t, "toldone000000", 48*time.Hour)
	root1, root2 := f.root, filepath.Join(filepath.Dir(f.root), "zroot")
	if root2 < root1 {
		t.Fatalf("%s lists before %s", root2, root1)
	}
	f.useRoot(t, root2)
	f.root = root2
	second = f.orphanDir(t, "toldtwo000000", 48*time.Hour)
	f.root = root1
	return first, second
}

// Each host's listing carries the records as read once that host is
// connected, not as read for the first: a task recorded while an
// earlier host was listed (its directory on the later host old, so the
// hour does not hold it) is no orphan to the later host's listing, which
// keeps its directory.
func TestConfirmedReclaimReadsTheRecordsAgainForEachHost(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	root2 := filepath.Join(filepath.Dir(f.root), "zroot")
	if err := os.MkdirAll(filepath.Join(root2, "tasks"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root2, 0o700); err != nil {
		t.Fatal(err)
	}
	late := filepath.Join(root2, "tasks", "tlate00000000")
	if err := os.Rename(f.orphanDir(t, "tlate00000000", 0), late); err != nil {
		t.Fatal(err)
	}
	backdate(t, late, 48*time.Hour)
	if _, _, err := f.exec.AddHost(ctx, AddHostOptions{Name: "zeta", HostName: "127.0.0.1", Port: f.srv.Port(), User: f.srv.User(),
		IdentityFiles: []string{f.srv.UserKeyPath}, IdentitiesOnly: true, WorkdirRoot: root2}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec.TrustHost(ctx, TrustOptions{Name: "zeta", AcceptNew: true}); err != nil {
		t.Fatal(err)
	}
	recorded := false
	afterConfirmedView = func() {
		if !recorded { // prod's turn: zeta is listed after it
			recorded = true
			createRecord(t, f.open(t), records.KindTask, "tlate00000000",
				&records.Task{ID: "tlate00000000", Host: "zeta", Profile: "web", Phase: records.PhaseAllocating, TaskDir: late, Root: root2})
		}
	}
	defer func() { afterConfirmedView = func() {} }()
	rows, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Confirmed: &ConfirmedApply{}})
	afterConfirmedView = func() {}
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rows, func(r ReclaimRow) bool { return r.Path == late })
	if i < 0 || rows[i].Host != "zeta" || rows[i].Action != ReclaimKeep {
		t.Errorf("the directory of a task recorded during prod's turn, on zeta: %+v, want kept", rows)
	}
	if _, err := os.Stat(filepath.Join(late, ".git")); err != nil {
		t.Errorf("zeta's listing removed the directory of a task recorded before it: %v", err)
	}
}
