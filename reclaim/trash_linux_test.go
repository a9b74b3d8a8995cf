package reclaim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// withoutLocks is a snapshot without the task directories' lock files,
// which taking a lock makes.
func withoutLocks(s map[string]bool) map[string]bool {
	out := map[string]bool{}
	for p := range s {
		if !strings.HasSuffix(p, "/"+taskdir.LockFiles[0]) && !strings.HasSuffix(p, "/"+taskdir.LockFiles[1]) {
			out[p] = true
		}
	}
	return out
}

// leftoverT1 is a prepared t-1 (dir) renamed to its trash name (trash),
// as a removal cut short just after its rename leaves it.
func leftoverT1(t *testing.T) (root, bare, dir, trash string) {
	t.Helper()
	bare, _ = origin(t)
	root = newRoot(t)
	dir = prepared(t, root, "t-1", "task-1", bare)
	trash = filepath.Join(root, tasksDir, trashName("t-1"))
	if err := os.Rename(dir, trash); err != nil {
		t.Fatal(err)
	}
	return root, bare, dir, trash
}

// Two applies on one root: the first renamed t-0 to its trash name and
// holds its lock while its batch proves t-1 (whose upstream stalls); the
// second, asked for t-0, finds that leftover and leaves it to the first
// (busy, naming the holder) instead of proving and emptying it beside
// it. The first then finishes its removal.
func TestApplyLeavesALeftoverAnotherApplyWorksOn(t *testing.T) {
	root := newRoot(t)
	targets := copies(t, root, 2)
	stall := sshtest.NewStall(t)
	targets[1].Upstreams = []Upstream{{Path: ".", URL: "http://" + stall.Addr() + "/app.git"}}
	first := make(chan *Report, 1)
	go func() {
		rep, err := Apply(context.Background(), Request{Targets: targets, Parallelism: 1, ProbeTimeoutSeconds: 120})
		if err != nil {
			t.Error(err)
		}
		first <- rep
	}()
	select {
	case <-stall.Asked():
	case <-time.After(time.Minute):
		t.Fatal("the first apply's proof of t-1 never asked its upstream")
	}
	trash := filepath.Join(root, tasksDir, trashName("t-0"))
	if _, err := os.Lstat(filepath.Join(trash, "README")); err != nil {
		t.Fatalf("t-0 is not renamed while its batch proves t-1: %v", err)
	}
	before := snapshot(t, root)
	r := apply(t, targets[0])[0]
	wantResult(t, r, Fail, Failed, Busy)
	if !strings.Contains(r.Detail, trash) || !strings.Contains(r.Detail, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("detail %q does not name the leftover and its holder", r.Detail)
	}
	onlyRemoved(t, before, snapshot(t, root), "")

	stall.Let()
	rep := <-first
	if rep == nil {
		t.FailNow()
	}
	wantResult(t, rep.Results[0], Remove, Removed, "")
	wantResult(t, rep.Results[1], Skip, Skipped, FetchFailed)
	for _, p := range []string{trash, targets[0].Path()} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s after the first apply: %v", p, err)
		}
	}
}

// A removal cut short between its rename and its recheck (a helper
// killed) leaves the directory whole under its trash name. When the next
// apply's proof keeps it (here a process works in it), it gets its
// task's name back: the work is where its task, and the user, look.
func TestApplyGivesAKeptLeftoverItsNameBack(t *testing.T) {
	root, bare, dir, trash := leftoverT1(t)
	pid, _ := sleeper(t, "sleep", trash)

	r := apply(t, launchedT1(root, bare))[0]
	wantResult(t, r, Fail, Failed, InUse)
	if !strings.Contains(r.Detail, fmt.Sprintf("pid %d (sleep)", pid)) || !strings.Contains(r.Detail, "left it at "+trash+": it has its name back") {
		t.Fatalf("detail %q", r.Detail)
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("the leftover is still at its trash name: %v", err)
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err != nil || cwd != dir {
		t.Fatalf("the process works in %q (%v), want %s", cwd, err, dir)
	}
	if _, err := os.Lstat(filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}
}

// A kept leftover whose task's name is taken (the task was resumed and
// its directory made again, or only begun: an empty directory, which a
// plain rename would replace) stays where it is: the result says where
// it is and how to keep its work.
func TestApplyKeepsALeftoverWhoseNameIsTaken(t *testing.T) {
	for _, c := range []struct {
		name string
		take func(t *testing.T, root, bare string)
	}{
		{"by the task's directory made again", func(t *testing.T, root, bare string) { prepared(t, root, "t-1", "task-1", bare) }},
		{"by an empty directory", func(t *testing.T, root, _ string) {
			if err := os.Mkdir(filepath.Join(root, tasksDir, "t-1"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bare, _ := origin(t)
			root := newRoot(t)
			trash := filepath.Join(root, tasksDir, trashName("t-1"))
			if err := os.Rename(prepared(t, root, "t-1", "task-1", bare), trash); err != nil {
				t.Fatal(err)
			}
			commit(t, trash, "work.txt", "agent work")
			c.take(t, root, bare)
			before := withoutLocks(snapshot(t, root))

			r := apply(t, launchedT1(root, bare))[0]
			wantResult(t, r, Skip, Skipped, UnpushedCommits)
			want := fmt.Sprintf("it stays at %s, where an earlier removal cut short left it, since %s is another directory now: to keep its work, move it out of the way on the host (`mv %s ~/t-1.kept`)",
				trash, filepath.Join(root, tasksDir, "t-1"), trash)
			if !strings.Contains(r.Detail, want) {
				t.Fatalf("detail %q\nwant it to say %q", r.Detail, want)
			}
			onlyRemoved(t, before, withoutLocks(snapshot(t, root)), "")
		})
	}
}

// A leftover named as an interrupted removal's but with no marker is
// what a removal leaves once only its marker's directories are left, or
// what anything that writes to tasks/ could make: nothing proves whose
// it is, so the plan and every apply keep it, saying what it is and
// what to run, and never as another task's (foreign_marker).
func TestUnmarkedLeftoverIsKept(t *testing.T) {
	root := newRoot(t)
	trash := filepath.Join(root, tasksDir, trashName("t-1"))
	if err := os.MkdirAll(filepath.Join(trash, metaDir), 0o700); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	l, err := List(t.Context(), ListRequest{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	rows := Plan(*l, LocalView{InstallationID: testInstallation}, 0)
	if len(rows) != 1 || rows[0].Action != Keep || rows[0].Reason != UnmarkedLeftover ||
		!strings.Contains(rows[0].Detail, "it holds only empty directories") || !strings.Contains(rows[0].Detail, "`find "+trash+" -type d -empty -delete`") {
		t.Fatalf("plan = %+v", rows)
	}
	for _, task := range []string{"task-1", ""} {
		r := apply(t, target(root, "t-1", task))[0]
		wantResult(t, r, Skip, Skipped, UnmarkedLeftover)
		if !strings.Contains(r.Detail, trash+" is named as an earlier removal's leftover but has no .kandev/owner.json") {
			t.Fatalf("detail %q", r.Detail)
		}
	}
	onlyRemoved(t, before, snapshot(t, root), "")
}

// A leftover whose emptying began (its .git already gone) with no report
// of what it left (the helper killed, the CLI gone, too much left) is
// kept where it is, saying where and what to run: given its task's name
// back it would look like a checkout that lost its files. One renamed
// and never emptied still gets its name back.
func TestApplyKeepsAHalfEmptiedLeftoverUnderItsTrashName(t *testing.T) {
	for _, c := range []struct {
		name     string
		cut      func(t *testing.T, trash string)
		nameBack bool
	}{
		{"emptying began", func(t *testing.T, trash string) {
			if err := os.RemoveAll(filepath.Join(trash, ".git")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(trash, removalNoteRel), "emptying began\n")
		}, false},
		{"never emptied", func(t *testing.T, trash string) { commit(t, trash, "work.txt", "agent work") }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, bare, dir, trash := leftoverT1(t)
			c.cut(t, trash)

			r := apply(t, launchedT1(root, bare))[0]
			if r.Outcome == Removed {
				t.Fatalf("the leftover was removed: %+v", r)
			}
			if !c.nameBack {
				want := fmt.Sprintf("it stays at %s, where an earlier removal cut short left it after it began emptying it (%s says so), so part of it may be gone: to keep what is left, move it out of the way on the host (`mv %s ~/t-1.kept`)",
					trash, filepath.Join(trash, removalNoteRel), trash)
				if !strings.Contains(r.Detail, want) {
					t.Fatalf("detail %q\nwant it to say %q", r.Detail, want)
				}
				if _, err := os.Lstat(filepath.Join(trash, "README")); err != nil {
					t.Fatalf("the leftover is not where it was: %v", err)
				}
				if _, err := os.Lstat(dir); !os.IsNotExist(err) {
					t.Fatalf("%s after the apply: %v", dir, err)
				}
				return
			}
			if !strings.Contains(r.Detail, "left it at "+trash+": it has its name back") {
				t.Fatalf("detail %q", r.Detail)
			}
			if _, err := os.Lstat(filepath.Join(dir, "work.txt")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A leftover given its name back is let go of there: its lock's holder
// note, written under its trash name, is removed where it is now, not
// left naming a process that no longer holds it.
func TestLeftoverGivenItsNameBackKeepsNoHolderNote(t *testing.T) {
	root, bare, dir, trash := leftoverT1(t)
	commit(t, trash, "work.txt", "agent work")
	r := apply(t, launchedT1(root, bare))[0]
	wantResult(t, r, Skip, Skipped, UnpushedCommits)
	if !strings.Contains(r.Detail, "it has its name back") {
		t.Fatalf("detail %q", r.Detail)
	}
	for _, d := range []string{dir, trash} {
		if _, err := os.Lstat(filepath.Join(d, taskdir.LockFiles[1])); !os.IsNotExist(err) {
			t.Errorf("the holder note at %s after the apply: %v", d, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, taskdir.LockFiles[0])); err != nil {
		t.Fatalf("the lock file did not move with the directory: %v", err)
	}
}

// The name goes back only to the directory proven: one swapped in at the
// trash name after the proof (the leftover moved away, another made
// there) is not renamed, and the detail says it is not what was proven.
func TestLeftoverSwappedAfterItsProofKeepsItsTrashName(t *testing.T) {
	root, bare, dir, trash := leftoverT1(t)
	commit(t, trash, "work.txt", "agent work")
	tg, h := launchedT1(root, bare), newHost(0)
	ev, held := h.gatherTrashLocked(t.Context(), tg, true)
	if held == nil {
		t.Fatalf("the leftover's lock was not taken: %+v", ev)
	}
	defer held.Release()
	wantResult(t, result(tg, ev, Decide(planless(tg), ev)), Skip, "", UnpushedCommits)
	if err := os.Rename(trash, filepath.Join(root, "proven")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(trash, metaDir, markerFile), "{}\n")

	detail := giveNameBack(tg, ev.Identity, held)
	if !strings.Contains(detail, "it stays at "+trash) || !strings.Contains(detail, trash+" is not the directory proven") {
		t.Fatalf("detail %q", detail)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s after the swap: %v", dir, err)
	}
	if _, err := os.Lstat(filepath.Join(trash, metaDir, markerFile)); err != nil {
		t.Fatalf("the directory swapped in is not where it was: %v", err)
	}
}
