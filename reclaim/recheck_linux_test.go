package reclaim

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// provenNow prepares a clean task directory, runs setup on it (unless
// nil) and proves it the way Apply does, checking the verdict is a
// removal: the directory, its target, the call's host, the evidence and
// the lock the proof took, which the removal releases.
func provenNow(t *testing.T, setup func(dir string)) (dir string, tg Target, h *host, ev Evidence, held *taskdir.Lock) {
	t.Helper()
	bare, _ := origin(t)
	root := newRoot(t)
	dir = prepared(t, root, "t-1", "task-1", bare)
	if setup != nil {
		setup(dir)
	}
	tg, h = target(root, "t-1", "task-1"), newHost(0)
	ev, held = h.gatherDir(t.Context(), tg, true)
	if held == nil {
		t.Fatalf("the proof took no lock: %+v", ev)
	}
	wantResult(t, result(tg, ev, Decide(tg, ev)), Remove, "", "")
	return dir, tg, h, ev, held
}

// Anything written, rewritten or removed in the directory after its
// proof began keeps it: the walk after the rename differs from the
// proof's, the directory gets its name back, and what was written is
// still there.
func TestApplyRefusesWhatChangedAfterProof(t *testing.T) {
	cases := []struct {
		name, path string
		change     func(t *testing.T, path string)
		survives   bool
	}{
		{"a file added", "late.txt", func(t *testing.T, p string) { writeFile(t, p, "late work\n") }, true},
		{"a tracked file rewritten", "README", func(t *testing.T, p string) { writeFile(t, p, "hello, edited\n") }, true},
		{"a file added in .kandev", ".kandev/notes", func(t *testing.T, p string) { writeFile(t, p, "notes\n") }, true},
		{"a tracked file removed", "README", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, tg, h, ev, held := provenNow(t, nil)
			c.change(t, filepath.Join(dir, c.path))

			r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
			wantResult(t, r, Fail, Failed, ChangedDuringProof)
			if !strings.Contains(r.Detail, c.path) {
				t.Fatalf("detail %q does not name %s", r.Detail, c.path)
			}
			if _, err := os.Lstat(filepath.Join(dir, c.path)); (err == nil) != c.survives {
				t.Fatalf("%s after the refusal: %v", c.path, err)
			}
			if _, err := os.Lstat(filepath.Join(tg.Root, "tasks", trashName("t-1"))); !os.IsNotExist(err) {
				t.Fatalf("the directory did not get its name back: %v", err)
			}
		})
	}
}

// interrupted leaves t-1's removal cut short by a file that cannot be
// unlinked, and returns the failed result and the trash's path.
func interrupted(t *testing.T) (root string, r Result, trash string) {
	t.Helper()
	requireRoot(t)
	bare, _ := origin(t)
	root = newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	trash = filepath.Join(root, "tasks", trashName("t-1"))
	runT(t, "chattr", "+i", filepath.Join(dir, "README"))
	t.Cleanup(func() { exec.Command("chattr", "-i", filepath.Join(trash, "README")).Run() })
	r = apply(t, target(root, "t-1", "task-1"))[0]
	wantResult(t, r, Remove, Failed, RemoveFailed)
	if len(r.Remains) == 0 {
		t.Fatal("the failed removal did not report what it left")
	}
	return root, r, trash
}

// What is put into an interrupted removal's leftover afterwards keeps
// it, even given what the removal left: a file, or a new repository
// with a commit. Only ownership, marker and walk prove a leftover that
// holds just what was left; anything more is proven as any directory,
// and a half-removed checkout proves nothing.
func TestApplyKeepsWhatWasAddedToAnInterruptedRemoval(t *testing.T) {
	cases := []struct {
		name  string
		add   func(t *testing.T, trash string)
		check func(t *testing.T, trash string)
	}{
		{"a file", func(t *testing.T, trash string) { writeFile(t, filepath.Join(trash, "notes.txt"), "work\n") },
			func(t *testing.T, trash string) {
				if b, err := os.ReadFile(filepath.Join(trash, "notes.txt")); err != nil || string(b) != "work\n" {
					t.Fatalf("notes.txt: %q, %v", b, err)
				}
			}},
		{"a leftover rewritten to its size, its time set back", func(t *testing.T, trash string) {
			p := filepath.Join(trash, "README")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, "HELLO\n")
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, trash string) {
			if b, err := os.ReadFile(filepath.Join(trash, "README")); err != nil || string(b) != "HELLO\n" {
				t.Fatalf("README: %q, %v", b, err)
			}
		}},
		{"a repository with a commit", func(t *testing.T, trash string) {
			repo := filepath.Join(trash, "fresh")
			gitT(t, trash, "init", "--quiet", repo)
			writeFile(t, filepath.Join(repo, "a.txt"), "a\n")
			gitT(t, repo, "add", "a.txt")
			gitT(t, repo, "commit", "--quiet", "-m", "fresh work")
		}, func(t *testing.T, trash string) {
			if got := gitT(t, filepath.Join(trash, "fresh"), "log", "-1", "--format=%s"); got != "fresh work" {
				t.Fatalf("the repository's commit: %q", got)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, first, trash := interrupted(t)
			runT(t, "chattr", "-i", filepath.Join(trash, "README"))
			c.add(t, trash)
			before := withoutLocks(snapshot(t, root))

			tg := target(root, "t-1", "task-1")
			tg.Remains = first.Remains
			for _, r := range [][]Result{prove(t, tg), apply(t, tg)} {
				if r[0].Action != Skip {
					t.Fatalf("result = %+v, want the leftover kept", r[0])
				}
			}
			onlyRemoved(t, before, withoutLocks(snapshot(t, root)), "")
			c.check(t, trash)
		})
	}
}

// sleeper starts sleep (from prog, in wd, with extra open files) in its
// own session, as a daemon an agent left behind; stop ends it, and the
// test's end does too.
func sleeper(t *testing.T, prog, wd string, files ...*os.File) (pid int, stop func()) {
	t.Helper()
	cmd := exec.Command(prog, "300")
	cmd.Dir, cmd.ExtraFiles = wd, files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

// copyProgram copies the program at src to dst, executable.
func copyProgram(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// A process outside any session of ours that works in the directory
// keeps it, named by pid and command: its working directory there, a
// file there held open, or a program run from there. Once it ends, the
// directory goes.
func TestApplyKeepsDirectoryInUse(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		start func(t *testing.T, dir string) (int, func())
		what  string
	}{
		{"working directory", func(t *testing.T, dir string) (int, func()) { return sleeper(t, sleep, dir) }, "working directory ."},
		{"open file", func(t *testing.T, dir string) (int, func()) {
			f, err := os.Open(filepath.Join(dir, "README"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			return sleeper(t, sleep, "/", f)
		}, "open file README"},
		{"program run from it", func(t *testing.T, dir string) (int, func()) {
			prog := filepath.Join(dir, ".kandev", "tools", "sleep")
			copyProgram(t, sleep, prog)
			return sleeper(t, prog, "/")
		}, "mapped file .kandev/tools/sleep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bare, _ := origin(t)
			root := newRoot(t)
			dir := prepared(t, root, "t-1", "task-1", bare)
			pid, stop := c.start(t, dir)
			before := snapshot(t, root)

			r := apply(t, target(root, "t-1", "task-1"))[0]
			wantResult(t, r, Fail, Failed, InUse)
			if want := fmt.Sprintf("pid %d (sleep): its %s", pid, c.what); !strings.Contains(r.Detail, want) {
				t.Fatalf("detail %q does not say %q", r.Detail, want)
			}
			onlyRemoved(t, before, snapshot(t, root), "")

			stop()
			wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
		})
	}
}

// A process that enters the directory once its proof is done is found
// by the check after the rename: the directory gets its name back.
func TestApplyKeepsDirectoryEnteredAfterProof(t *testing.T) {
	dir, tg, h, ev, held := provenNow(t, nil)
	pid, _ := sleeper(t, "sleep", dir)

	r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
	wantResult(t, r, Fail, Failed, InUse)
	if !strings.Contains(r.Detail, fmt.Sprintf("pid %d (sleep)", pid)) {
		t.Fatalf("detail %q does not name pid %d", r.Detail, pid)
	}
	if _, err := os.Lstat(filepath.Join(dir, "README")); err != nil {
		t.Fatalf("the directory did not get its name back: %v", err)
	}
}

// A process that works in the directory by another path (a bind mount
// of it elsewhere, as a container's volume is) is found by what it holds,
// not by the name it holds it under.
func TestApplyKeepsDirectoryInUseByAnotherPath(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	aliases := physical(t, t.TempDir())
	bindMount(t, dir, filepath.Join(aliases, "volume"), aliases)
	pid, stop := sleeper(t, "sleep", filepath.Join(aliases, "volume", ".kandev"))
	before := snapshot(t, root)

	r := apply(t, target(root, "t-1", "task-1"))[0]
	wantResult(t, r, Fail, Failed, InUse)
	if want := fmt.Sprintf("pid %d (sleep): its working directory", pid); !strings.Contains(r.Detail, want) {
		t.Fatalf("detail %q does not say %q", r.Detail, want)
	}
	onlyRemoved(t, before, snapshot(t, root), "")
	stop()
}
