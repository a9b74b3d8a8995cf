package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
)

// A confirmed reclaim (--apply --yes) removes with its listing, in the
// one request of its one command, the orphans unchanged for an hour:
// each proven on the host as any apply proves it (one that gained an
// untracked file is kept), and the apply after it has nothing left to
// send.
func TestConfirmedReclaimRemovesWithTheListing(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithLogLevel("DEBUG1"))
	ctx := context.Background()
	clean, untracked := f.orphanDir(t, "tclean0000000", 48*time.Hour), f.orphanDir(t, "tuntracked000", 48*time.Hour)
	if err := os.WriteFile(filepath.Join(untracked, "notes.txt"), []byte("not saved anywhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	backdate(t, untracked, 48*time.Hour)
	mark := len(f.srv.Log())
	rows, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "prod", Confirmed: &ConfirmedApply{}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{clean: ReclaimRemoved + " ", untracked: ReclaimSkipped + " " + string(reclaim.UntrackedFiles)}
	for dir, w := range want {
		i := slices.IndexFunc(rows, func(r ReclaimRow) bool { return r.Path == dir })
		if i < 0 || rows[i].Action+" "+rows[i].Reason != w {
			t.Fatalf("%s after the confirmed listing: %+v, want %s", dir, rows, w)
		}
	}
	if i := slices.IndexFunc(rows, func(r ReclaimRow) bool { return r.Path == clean }); rows[i].Proof == nil {
		t.Errorf("%s was removed without its proof on the row", clean)
	}
	if _, err := os.Stat(clean); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after the confirmed listing: %v", clean, err)
	}
	if _, err := os.Stat(untracked); err != nil {
		t.Errorf("%s, holding an untracked file, was not kept: %v", untracked, err)
	}
	if f.exec.kept.m["prod"] != nil {
		t.Error("a connection was kept for an apply with nothing left to send")
	}
	applied, err := f.exec.ApplyReclaim(ctx, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range applied {
		if want[r.Path] != "" && (r.Action != rows[i].Action || r.Reason != rows[i].Reason) {
			t.Errorf("the apply after it changed %s: %s %s, was %s %s", r.Path, r.Action, r.Reason, rows[i].Action, rows[i].Reason)
		}
	}
	log := f.srv.Log()[mark:]
	if n := strings.Count(log, "Starting session: command"); n != 1 {
		t.Errorf("a confirmed reclaim ran %d commands, want 1\n%s", n, log)
	}
}

// A confirmed reclaim reads its records once connected and sends them
// with the listing; a task recorded after that (as a launch of another
// kandev-exec records its task, then makes its directory) is no orphan,
// though the records sent do not hold it. The host leaves its directory,
// made within the hour, to the second request, and the records read
// again for that one keep it. Without the hour, the listing would remove
// the directory of a task being launched.
func TestConfirmedReclaimKeepsATaskRecordedAfterItsView(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	old := f.orphanDir(t, "toldorphan000", 48*time.Hour)
	late := f.orphanDir(t, "tlate00000000", 0)
	staged := filepath.Join(f.root, "staged")
	if err := os.Rename(late, staged); err != nil {
		t.Fatal(err)
	}
	afterConfirmedView = func() {
		createRecord(t, f.open(t), records.KindTask, "tlate00000000",
			&records.Task{ID: "tlate00000000", Host: "prod", Profile: "web", Phase: records.PhaseAllocating, TaskDir: late, Root: f.root})
		if err := os.Rename(staged, late); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterConfirmedView = func() {} }()
	rows, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "prod", Confirmed: &ConfirmedApply{}})
	afterConfirmedView = func() {}
	if err != nil {
		t.Fatalf("the confirmed listing: %v", err)
	}
	i := slices.IndexFunc(rows, func(r ReclaimRow) bool { return r.Path == late })
	if i < 0 || rows[i].Action != ReclaimRemove || rows[i].Reason != string(reclaim.Orphan) {
		t.Fatalf("the late task's directory after the confirmed listing: %+v; want it planned as the records sent saw it (an orphan), not applied", rows)
	}
	rows, err = f.exec.ApplyReclaim(ctx, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		switch r.Path {
		case late:
			if r.Action != ReclaimSkipped || r.Reason != string(reclaim.LiveTask) {
				t.Errorf("the late task's directory: %s %s (%s), want skipped live_task", r.Action, r.Reason, r.Detail)
			}
		case old:
			if r.Action != ReclaimRemoved {
				t.Errorf("the old orphan: %s %s (%s), want removed", r.Action, r.Reason, r.Detail)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(late, ".git")); err != nil {
		t.Errorf("the checkout of a task recorded during the reclaim: %v", err)
	}
}

// orphanDir copies a finished task's directory to dir under the root,
// its marker naming task dir, which no record holds, and leaves it
// unchanged for age.
func (f *launchFixture) orphanDir(t *testing.T, dir string, age time.Duration) string {
	t.Helper()
	task, s, err := f.exec.Launch(context.Background(), LaunchOptions{Profile: "web", Command: []string{"true"}})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	waitState(t, s.SessionDir, controller.StateExited)
	path := filepath.Join(f.root, "tasks", dir)
	if out, err := exec.Command("cp", "-a", task.TaskDir, path).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	marker := filepath.Join(path, ".kandev", "owner.json")
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte(strings.ReplaceAll(string(b), task.ID, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(path, ".kandev", "sessions")); err != nil {
		t.Fatal(err)
	}
	backdate(t, path, age)
	return path
}

// backdate makes everything in dir last changed age ago.
func backdate(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	at := fmt.Sprintf("@%d", time.Now().Add(-age).Unix())
	if out, err := exec.Command("find", dir, "-exec", "touch", "-h", "-d", at, "{}", "+").CombinedOutput(); err != nil {
		t.Fatalf("touch: %v\n%s", err, out)
	}
}
