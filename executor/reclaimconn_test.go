package executor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
)

// A reclaim's apply goes over the connection its plan dialled: it dials
// nothing. When the host record changed in between, the helper that
// listed is gone or its link closed, the apply dials again. Either way
// the directory is proven and removed on the host.
func TestReclaimApplyReusesThePlansConnection(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	relay := f.farHost(t)
	archived := func() string { return f.archivedDir(t, "far") }
	for _, c := range []struct {
		name    string
		between func()
		dials   int64
	}{
		{"unchanged host", func() {}, 0},
		{"the listing's helper gone", func() { f.killListingHelper(t, "far") }, 1},
		{"the listing's link closed", func() { f.closeListingLink(t, "far") }, 1},
		{"host record changed", func() {
			if _, err := f.exec.CordonHost(ctx, "far", "maintenance"); err != nil {
				t.Fatal(err)
			}
		}, 1},
	} {
		dir := archived()
		plan, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "far"})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(plan, func(r ReclaimRow) bool { return r.Path == dir })
		if i < 0 || plan[i].Action != ReclaimRemove {
			t.Fatalf("%s: the plan for %s: %+v", c.name, dir, plan)
		}
		c.between()
		relay.Accepted()
		rows, err := f.exec.ApplyReclaim(ctx, plan[i:i+1], nil)
		if err != nil || len(rows) != 1 || rows[0].Action != ReclaimRemoved {
			t.Fatalf("%s: the reclaim: %+v, %v", c.name, rows, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %s after the reclaim: %v", c.name, dir, err)
		}
		if got := relay.Accepted(); got != c.dials {
			t.Errorf("%s: the apply dialled %d times, want %d", c.name, got, c.dials)
		}
	}
}

// closeListingLink closes the connection kept for host's apply, and waits
// for the client to have seen it end.
func (f *launchFixture) closeListingLink(t *testing.T, host string) {
	t.Helper()
	f.exec.kept.mu.Lock()
	c := f.exec.kept.m[host].hc.c
	f.exec.kept.mu.Unlock()
	c.Close()
	<-c.Done()
}

// killListingHelper kills the helper serving the reclaim listing kept
// for host (the only helper of this fixture's root serving a
// conversation), and waits for its conversation to end.
func (f *launchFixture) killListingHelper(t *testing.T, host string) {
	t.Helper()
	f.exec.kept.mu.Lock()
	cv := f.exec.kept.m[host].cv
	f.exec.kept.mu.Unlock()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(b), "\x00")
		if err == nil && len(args) > 1 && strings.HasPrefix(args[0], f.root+"/bin/") && args[1] == "serve" {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("helpers serving under %s: %v, want the listing's alone", f.root, pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; !cv.Ended(); i++ {
		if i > 3000 {
			t.Fatal("the conversation did not end within a minute of its helper's")
		}
		time.Sleep(20 * time.Millisecond) // polling the conversation's end
	}
}

// archivedDir launches a task of profile whose agent ends at once, and
// archives it: its directory stays, for reclaim.
func (f *launchFixture) archivedDir(t *testing.T, profile string) string {
	t.Helper()
	ctx := context.Background()
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: profile, Command: []string{"true"}})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	waitState(t, s.SessionDir, controller.StateExited)
	if res, err := f.exec.Teardown(ctx, TeardownOptions{Task: task.ID, Trigger: records.TriggerArchive}); err != nil || res.Phase != records.PhaseArchived {
		t.Fatalf("archive: %+v, %v", res, err)
	}
	return task.TaskDir
}

// A reclaim's plan and apply are one conversation with the helper: one
// connection, one channel, one command, every root listed with the
// command that starts the helper, and the apply the next request to it.
// The apply still proves each directory again before it removes it: one
// that gained an untracked file, or a commit, after the plan is kept,
// and only the one left as planned goes.
func TestReclaimIsOneConversationThatStillProves(t *testing.T) {
	f := newLaunchFixture(t, sshtest.WithLogLevel("DEBUG1"))
	ctx := context.Background()
	archived := func() string { return f.archivedDir(t, "web") }
	// Two roots: the host's, and the one the profile moved to.
	clean, untracked := archived(), archived()
	f.useRoot(t, filepath.Join(t.TempDir(), "other"))
	committed := archived()

	mark := len(f.srv.Log())
	plan, err := f.exec.ReclaimPlan(ctx, ReclaimOptions{Host: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{clean, untracked, committed} {
		if i := slices.IndexFunc(plan, func(r ReclaimRow) bool { return r.Path == dir }); i < 0 || plan[i].Action != ReclaimRemove {
			t.Fatalf("the plan does not remove %s: %+v", dir, plan)
		}
	}
	if err := os.WriteFile(filepath.Join(untracked, "notes.txt"), []byte("not saved anywhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git := exec.Command("git", "-C", committed, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "after the plan")
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	rows, err := f.exec.ApplyReclaim(ctx, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{clean: ReclaimRemoved, untracked: ReclaimSkipped, committed: ReclaimSkipped}
	reasons := map[string]reclaim.Reason{untracked: reclaim.UntrackedFiles, committed: reclaim.UnpushedCommits}
	for _, r := range rows {
		if w, ok := want[r.Path]; ok && (r.Action != w || reasons[r.Path] != "" && r.Reason != string(reasons[r.Path])) {
			t.Errorf("%s: %s %s (%s), want %s %s", r.Path, r.Action, r.Reason, r.Detail, w, reasons[r.Path])
		}
	}
	if _, err := os.Stat(clean); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after the reclaim: %v", clean, err)
	}
	for _, dir := range []string{untracked, committed} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s, changed after the plan, was not kept: %v", dir, err)
		}
	}
	log := f.srv.Log()[mark:]
	got := [3]int{strings.Count(log, "Connection from"), strings.Count(log, "server_input_channel_open: ctype"),
		strings.Count(log, "Starting session: command")}
	if got != [3]int{1, 1, 1} {
		t.Errorf("plan and apply: %d connections, %d channels, %d commands; want one of each\n%s", got[0], got[1], got[2], log)
	}
}
