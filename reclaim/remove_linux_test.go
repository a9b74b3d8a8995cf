package reclaim

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/taskdir"
)

func runT(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// bindMount mounts src on dst (made here) until the test ends, wherever
// a rename has taken it below root by then.
func bindMount(t *testing.T, src, dst, root string) {
	t.Helper()
	requireRoot(t)
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	runT(t, "mount", "--bind", src, dst)
	t.Cleanup(func() { unmountBelow(t, root) })
}

func unmountBelow(t *testing.T, root string) {
	table, err := mountTable()
	if err != nil {
		t.Error(err)
		return
	}
	for _, m := range mountsBelow(table, root) {
		if out, err := exec.Command("umount", m).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", m, err, out)
		}
	}
}

// withoutOpenat2 makes the package behave as on a kernel without
// openat2 (before 5.6): the mount table and the device check stand in.
func withoutOpenat2(t *testing.T) {
	was := noOpenat2.Load()
	noOpenat2.Store(true)
	t.Cleanup(func() { noOpenat2.Store(was) })
}

// A bind mount inside the task directory (in .kandev/, so no probe
// objects to it) is never entered: the directory is kept, and what is
// mounted there survives.
func TestApplyBindMountInside(t *testing.T) {
	for _, mode := range []string{"openat2", "mount table"} {
		t.Run(mode, func(t *testing.T) {
			if mode != "openat2" {
				withoutOpenat2(t)
			}
			bare, _ := origin(t)
			root := newRoot(t)
			dir := prepared(t, root, "t-1", "task-1", bare)
			keep := outside(t)
			bindMount(t, keep, filepath.Join(dir, ".kandev", "mnt"), root)
			before := snapshot(t, root, keep)
			r := apply(t, target(root, "t-1", "task-1"))[0]
			wantResult(t, r, Skip, Skipped, MountPoint)
			if !strings.Contains(r.Detail, ".kandev/mnt") {
				t.Fatalf("detail %q does not name the mount", r.Detail)
			}
			onlyRemoved(t, before, snapshot(t, root, keep), "")
		})
	}
}

// A mount that appears between the proof and the removal keeps the
// directory: the walk after the rename sees it (changed_during_proof),
// and the directory gets its name back. One that appears later still
// stops the emptying there: it fails, and nothing in the mount is
// touched.
func TestRemoveStopsAtMountAfterProof(t *testing.T) {
	for _, mode := range []string{"openat2", "mount table"} {
		t.Run(mode, func(t *testing.T) {
			if mode != "openat2" {
				withoutOpenat2(t)
			}
			dir, tg, h, ev, held := provenNow(t, nil)
			root := tg.Root
			keep := outside(t)
			bindMount(t, keep, filepath.Join(dir, ".kandev", "mnt"), root)
			// The lock is let go of: its holder note goes.
			before := withoutLocks(snapshot(t, root, keep))

			r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
			wantResult(t, r, Fail, Failed, ChangedDuringProof)
			onlyRemoved(t, before, withoutLocks(snapshot(t, root, keep)), "")

			trash := trashName("t-1")
			if err := os.Rename(dir, filepath.Join(root, "tasks", trash)); err != nil {
				t.Fatal(err)
			}
			tasks, err := openDirPath(filepath.Join(root, "tasks"))
			if err != nil {
				t.Fatal(err)
			}
			defer tasks.close()
			err = h.emptyAndRemove(tasks, trash, "t-1", &ev)
			var re *removeError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "mount point") {
				t.Fatalf("emptyAndRemove = %v, want a failure at the mount point", err)
			}
			if _, err := os.Lstat(filepath.Join(keep, "keep.txt")); err != nil {
				t.Fatalf("the mount's content: %v", err)
			}
		})
	}
}

// Without openat2 a mount of another device is refused by its st_dev
// alone (the check macOS relies on).
func TestOpenRefusesAnotherDevice(t *testing.T) {
	requireRoot(t)
	withoutOpenat2(t)
	dir := physical(t, t.TempDir())
	mnt := filepath.Join(dir, "tmpfs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	runT(t, "mount", "-t", "tmpfs", "none", mnt)
	t.Cleanup(func() { unmountBelow(t, dir) })
	d, err := openDirPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if _, err := d.open("tmpfs"); !errors.Is(err, errMount) || !strings.Contains(err.Error(), "device") {
		t.Fatalf("open = %v, want a refusal naming the device", err)
	}
}

// A removal that fails halfway (a file that cannot be unlinked) fails
// naming the path, keeps the marker, and is finished by the next Apply
// once the file can go: never left as a half-deleted checkout that no
// probe could prove safe again.
func TestApplyFinishesInterruptedRemoval(t *testing.T) {
	requireRoot(t)
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	prepared(t, root, "t-2", "task-2", bare)
	stuck := filepath.Join(dir, "README")
	runT(t, "chattr", "+i", stuck)
	trash := filepath.Join(root, "tasks", trashPrefix+"t-1")
	t.Cleanup(func() {
		for _, p := range []string{stuck, filepath.Join(trash, "README")} {
			exec.Command("chattr", "-i", p).Run()
		}
	})
	before := snapshot(t, root)

	r := apply(t, target(root, "t-1", "task-1"))[0]
	wantResult(t, r, Remove, Failed, RemoveFailed)
	if !strings.Contains(r.Detail, filepath.Join(trash, "README")) {
		t.Fatalf("detail %q does not name the file", r.Detail)
	}
	for _, p := range []string{filepath.Join(trash, "README"), filepath.Join(trash, ".kandev", "owner.json")} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if len(r.Remains) == 0 {
		t.Fatal("the failed removal did not report what it left")
	}
	left := target(root, "t-1", "task-1")
	left.Remains = r.Remains

	// The plan shows it as ours, cut short; a proof says it will finish.
	l, err := List(t.Context(), ListRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	rows := Plan(*l, LocalView{InstallationID: testInstallation, Phases: map[string]string{"task-2": "ready"}}, 0)
	if len(rows) != 2 || rows[0].Reason != Interrupted || rows[0].Action != Remove || rows[0].Dir != "t-1" || rows[1].Reason != LiveTask {
		t.Fatalf("plan = %+v", rows)
	}
	wantResult(t, prove(t, left)[0], Remove, "", "")

	// Letting the file go changes its ctime only: still what was left.
	runT(t, "chattr", "-i", filepath.Join(trash, "README"))
	next := candidate(l.Root, rows[0])
	next.Remains = r.Remains
	r = apply(t, next)[0]
	wantResult(t, r, Remove, Removed, "")
	if !strings.Contains(r.Detail, "finished the interrupted removal") {
		t.Fatalf("detail %q", r.Detail)
	}
	onlyRemoved(t, before, snapshot(t, root), dir)
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("trash still there: %v", err)
	}
}

// An interrupted removal of another task is not finished.
func TestApplyLeavesAnotherTasksInterruptedRemoval(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-2", bare)
	if err := os.Rename(dir, filepath.Join(root, "tasks", trashPrefix+"t-1")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, ForeignMarker)
	onlyRemoved(t, before, snapshot(t, root), "")
}

// Mount points with spaces, tabs, newlines or backslashes are escaped as
// \ooo in the mount table.
func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/t\011x\012y`: "/t\tx\ny", `/s\134`: `/s\`, `/plain`: "/plain", `/odd\04`: `/odd\04`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// A removal cut short before it reported what it left (just after the
// rename) leaves the whole checkout: that leftover is proven in full at
// its trash name, against the task's launch record, like any directory;
// kept, it gets its task's name back.
func TestApplyProvesAWholeLeftoverWhereItIs(t *testing.T) {
	for _, c := range []struct {
		name   string
		work   func(t *testing.T, trash string)
		reason Reason
	}{
		{"clean and pushed", func(*testing.T, string) {}, ""},
		{"an unpushed commit", func(t *testing.T, trash string) { commit(t, trash, "work.txt", "agent work") }, UnpushedCommits},
	} {
		t.Run(c.name, func(t *testing.T) {
			bare, _ := origin(t)
			root := newRoot(t)
			trash := filepath.Join(root, "tasks", trashPrefix+"t-1")
			if err := os.Rename(prepared(t, root, "t-1", "task-1", bare), trash); err != nil {
				t.Fatal(err)
			}
			c.work(t, trash)
			before := snapshot(t, root)
			r := apply(t, launchedT1(root, bare))[0]
			if c.reason == "" {
				wantResult(t, r, Remove, Removed, "")
				onlyRemoved(t, before, snapshot(t, root), trash)
				return
			}
			wantResult(t, r, Skip, Skipped, c.reason)
			if !strings.Contains(r.Detail, trash) {
				t.Fatalf("detail %q does not name the leftover", r.Detail)
			}
			back := map[string]bool{}
			for p := range withoutLocks(snapshot(t, root)) {
				back[strings.Replace(p, filepath.Join(root, "tasks", "t-1"), trash, 1)] = true
			}
			onlyRemoved(t, withoutLocks(before), back, "")
		})
	}
}

// What an agent writes into a file named as the lock of an interrupted
// removal's leftover is not the lock (which is never written): the
// leftover holds more than that removal left, so it is proven again, and
// a half-removed checkout proves nothing: it is kept with what was
// written.
func TestApplyKeepsALeftoverWhoseLockHoldsData(t *testing.T) {
	requireRoot(t)
	bare, _ := origin(t)
	root := newRoot(t)
	stuck := filepath.Join(prepared(t, root, "t-1", "task-1", bare), "README")
	runT(t, "chattr", "+i", stuck)
	trash := filepath.Join(root, tasksDir, trashName("t-1"))
	left := filepath.Join(trash, "README")
	t.Cleanup(func() { exec.Command("chattr", "-i", left).Run() })
	r := apply(t, target(root, "t-1", "task-1"))[0]
	wantResult(t, r, Remove, Failed, RemoveFailed)
	if len(r.Remains) == 0 {
		t.Fatal("the failed removal did not report what it left")
	}
	lock := filepath.Join(trash, taskdir.LockFiles[0])
	writeFile(t, lock, "agent work\n")
	runT(t, "chattr", "-i", left)

	next := target(root, "t-1", "task-1")
	next.Remains = r.Remains
	r = apply(t, next)[0]
	if r.Outcome == Removed {
		t.Fatalf("the leftover was removed with data in its lock file: %+v", r)
	}
	if b, err := os.ReadFile(lock); err != nil || string(b) != "agent work\n" {
		t.Fatalf("%s after the apply: %q, %v", lock, b, err)
	}
}

// A removal writes the note that its emptying began before it deletes
// anything, so one cut short, whose report of what it left is lost,
// keeps its leftover under its trash name rather than give a
// half-removed checkout its task's name back.
func TestRemovalCutShortLeavesItsNote(t *testing.T) {
	requireRoot(t)
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	runT(t, "chattr", "+i", filepath.Join(dir, "README"))
	trash := filepath.Join(root, tasksDir, trashName("t-1"))
	left := filepath.Join(trash, "README")
	t.Cleanup(func() { exec.Command("chattr", "-i", left).Run() })
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Failed, RemoveFailed)
	if _, err := os.Lstat(filepath.Join(trash, removalNoteRel)); err != nil {
		t.Fatalf("the removal cut short left no note: %v", err)
	}
	runT(t, "chattr", "-i", left)

	r := apply(t, launchedT1(root, bare))[0] // its report not given back
	if r.Outcome == Removed || !strings.Contains(r.Detail, "it stays at "+trash) {
		t.Fatalf("result %+v, want the leftover kept at %s", r, trash)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s after the apply: %v", dir, err)
	}
}
