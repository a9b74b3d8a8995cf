package reclaim

import (
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/taskdir"
)

func ours(task string) *taskdir.Owner {
	return &taskdir.Owner{InstallationID: testInstallation, TaskID: task}
}

// clean is the evidence of a directory with one clean, pushed checkout.
func clean() Evidence {
	return Evidence{Marker: ours("task-1"), Identity: Identity{Dev: 1, Ino: 2}, Checkouts: []Checkout{{Path: "."}}}
}

func with(f func(*Evidence)) Evidence {
	ev := clean()
	f(&ev)
	return ev
}

func withCheckout(f func(*Checkout)) Evidence {
	return with(func(ev *Evidence) { f(&ev.Checkouts[0]) })
}

type decideCase struct {
	name   string
	target Target
	ev     Evidence
	action Action
	reason Reason
	detail string // a part of the detail
}

// decideCases covers every verdict Decide can give, each reason at least
// once (TestDecideCoversEveryReason holds the table to that).
func decideCases() []decideCase {
	base := target("/srv/kandev", "t-1", "task-1")
	tg := func(f func(*Target)) Target {
		x := base
		f(&x)
		return x
	}
	return []decideCase{
		{"clean pushed checkout", base, clean(), Remove, "", "nothing at risk"},
		{"not enabled", tg(func(t *Target) { t.Enabled = false }), clean(), Skip, Disabled, "reclaim_task_dir"},
		{"dot dot", tg(func(t *Target) { t.Dir = ".." }), clean(), Skip, UnsafePath, `".."`},
		{"two segments", tg(func(t *Target) { t.Dir = "a/b" }), clean(), Skip, UnsafePath, `"a/b"`},
		{"parent escape", tg(func(t *Target) { t.Dir = "../../etc" }), clean(), Skip, UnsafePath, "not a task directory name"},
		{"quote", tg(func(t *Target) { t.Dir = "o'brien" }), clean(), Skip, UnsafePath, "o'brien"},
		{"semicolon", tg(func(t *Target) { t.Dir = "x; touch pwned" }), clean(), Skip, UnsafePath, "touch pwned"},
		{"newline", tg(func(t *Target) { t.Dir = "x\ny" }), clean(), Skip, UnsafePath, `x\ny`},
		{"empty name", tg(func(t *Target) { t.Dir = "" }), clean(), Skip, UnsafePath, `""`},
		{"trash name", tg(func(t *Target) { t.Dir = ".reclaim.t-1" }), clean(), Skip, UnsafePath, ".reclaim.t-1"},
		{"relative root", tg(func(t *Target) { t.Root = "kandev" }), clean(), Skip, UnsafePath, "clean absolute"},
		{"unclean root", tg(func(t *Target) { t.Root = "/srv/kandev/../x" }), clean(), Skip, UnsafePath, "clean absolute"},
		{"symlink on the path", base, with(func(ev *Evidence) { ev.PathProblem, ev.PathDetail = UnsafePath, "tasks is a symbolic link" }), Skip, UnsafePath, "symbolic link"},
		{"another user's", base, with(func(ev *Evidence) { ev.PathProblem, ev.PathDetail = NotPrivate, "is owned by another user" }), Skip, NotPrivate, "another user"},
		{"already absent", base, Evidence{Absent: true}, Remove, "", "already absent"},
		{"path problem beats absent", base, Evidence{Absent: true, PathProblem: NotPrivate, PathDetail: "x"}, Skip, NotPrivate, "x"},
		{"no marker", base, with(func(ev *Evidence) { ev.Marker = nil }), Skip, NoMarker, "not provably ours"},
		{"unreadable marker", base, with(func(ev *Evidence) { ev.Marker, ev.MarkerDetail = nil, "owner.json is unreadable" }), Skip, NoMarker, "unreadable"},
		{"marker names no task", base, with(func(ev *Evidence) { ev.Marker = ours("") }), Skip, NoMarker, "names no task"},
		{"another installation", base, with(func(ev *Evidence) { ev.Marker.InstallationID = "other" }), Skip, ForeignMarker, `installation "other"`},
		{"another task", base, with(func(ev *Evidence) { ev.Marker = ours("task-2") }), Skip, ForeignMarker, `task "task-2"`},
		{"any task when planning orphans", tg(func(t *Target) { t.TaskID = "" }), with(func(ev *Evidence) { ev.Marker = ours("task-9") }), Remove, "", ""},
		{"swapped since the plan", tg(func(t *Target) { t.Identity = &Identity{Dev: 1, Ino: 3} }), clean(), Skip, ChangedSincePlan, "plan again"},
		{"same as the plan", tg(func(t *Target) { t.Identity = &Identity{Dev: 1, Ino: 2} }), clean(), Remove, "", ""},
		{"busy", base, with(func(ev *Evidence) { ev.Busy = "pid 7 holds the lock" }), Fail, Busy, "pid 7"},
		{"walk failed", base, with(func(ev *Evidence) { ev.WalkError = "open x: permission denied" }), Skip, ProbeFailed, "permission denied"},
		{"mount inside", base, with(func(ev *Evidence) { ev.Mounts = []string{"/srv/kandev/tasks/t-1/data"} }), Skip, MountPoint, "t-1/data"},
		{"interrupted removal, only what it left", base, Evidence{Interrupted: true, LeftAsRemoved: true, Marker: ours("task-1"), Identity: Identity{Dev: 1, Ino: 2}}, Remove, "", "interrupted"},
		{"interrupted removal, more there, not a checkout", base, Evidence{Interrupted: true, Marker: ours("task-1")}, Skip, NotACheckout, ".reclaim.t-1"},
		{"interrupted removal, more there, clean checkout", base, Evidence{Interrupted: true, Marker: ours("task-1"), Checkouts: []Checkout{{Path: "."}}}, Remove, "", "interrupted"},
		{"interrupted removal, in use", base, Evidence{Interrupted: true, LeftAsRemoved: true, Marker: ours("task-1"), InUse: []string{"pid 9 (sh): its working directory ."}}, Fail, InUse, "pid 9"},
		{"interrupted, marker gone, only directories", base, Evidence{Interrupted: true, OnlyDirs: true}, Skip, UnmarkedLeftover, "it holds only empty directories"},
		{"interrupted, marker gone, files left", base, Evidence{Interrupted: true}, Skip, UnmarkedLeftover, "nothing proves whose it is"},
		{"interrupted, another task", base, Evidence{Interrupted: true, Marker: ours("task-2")}, Skip, ForeignMarker, ""},
		{"in use", base, with(func(ev *Evidence) { ev.InUse = []string{"pid 9 (sleep): its working directory ."} }), Fail, InUse, "pid 9 (sleep)"},
		{"dirty beats in use", base, with(func(ev *Evidence) {
			ev.InUse, ev.Checkouts[0].Changed = []string{"pid 9 (sleep): its working directory ."}, []string{"a.go"}
		}), Skip, DirtyWorktree, ""},
		{"who uses it unknown", base, with(func(ev *Evidence) { ev.InUseUnknown = "this host has no lsof" }), Skip, ProbeFailed, "no lsof"},
		{"not a checkout", base, with(func(ev *Evidence) { ev.Checkouts = nil }), Skip, NotACheckout, "not a git checkout"},
		{"only a child is a checkout", base, with(func(ev *Evidence) { ev.Checkouts = []Checkout{{Path: "web"}} }), Skip, NotACheckout, ""},
		{"probe failed", base, withCheckout(func(c *Checkout) { c.Error = "git status timed out" }), Skip, ProbeFailed, "timed out"},
		{"rebase in progress", base, withCheckout(func(c *Checkout) { c.Operation = "a rebase" }), Skip, UnfinishedOperation, "a rebase is in progress"},
		{"unmerged", base, withCheckout(func(c *Checkout) { c.Unmerged = []string{"a.go"} }), Skip, DirtyWorktree, "unmerged"},
		{"modified", base, withCheckout(func(c *Checkout) { c.Changed = []string{"a.go", "b.go", "c.go", "d.go"} }), Skip, DirtyWorktree, `"a.go", "b.go", "c.go" and 1 more`},
		{"untracked", base, withCheckout(func(c *Checkout) { c.Untracked = []string{"scratch.txt"} }), Skip, UntrackedFiles, "scratch.txt"},
		{"untracked .kandev of the top", base, withCheckout(func(c *Checkout) { c.Untracked = []string{".kandev/owner.json"} }), Remove, "", ""},
		{"ignored", base, withCheckout(func(c *Checkout) { c.Ignored = []string{".env"} }), Skip, IgnoredFiles, ".env"},
		{"ignored .kandev of the top", base, withCheckout(func(c *Checkout) { c.Ignored = []string{".kandev/"} }), Remove, "", ""},
		{"ignored child checkout that was probed", base, with(func(ev *Evidence) {
			ev.Checkouts = []Checkout{{Path: ".", Ignored: []string{".kandev/", "web/"}, Untracked: []string{"lib/"}}, {Path: "web"}, {Path: "lib"}}
		}), Remove, "", ""},
		{"ignored directory that is no checkout", base, with(func(ev *Evidence) {
			ev.Checkouts = []Checkout{{Path: ".", Ignored: []string{"build/"}}, {Path: "web"}}
		}), Skip, IgnoredFiles, "build/"},
		{"a child's own .kandev is not ours", base, with(func(ev *Evidence) {
			ev.Checkouts = []Checkout{{Path: "."}, {Path: "web", Ignored: []string{".kandev/"}}}
		}), Skip, IgnoredFiles, "t-1/web"},
		{"second checkout dirty", base, with(func(ev *Evidence) {
			ev.Checkouts = []Checkout{{Path: "."}, {Path: "web", Changed: []string{"x"}}}
		}), Skip, DirtyWorktree, "/srv/kandev/tasks/t-1/web"},
		{"stash", base, withCheckout(func(c *Checkout) { c.Stash = true }), Skip, StashPresent, "stash"},
		{"linked worktree", base, withCheckout(func(c *Checkout) { c.Worktrees = []string{"/home/u/wt"} }), Skip, LinkedWorktree, "git worktree"},
		{"submodule without a checkout", base, withCheckout(func(c *Checkout) { c.UnprobedModules = []string{".git/modules/lib"} }), Skip, ProbeFailed, "modules/lib"},
		{"no remote, commits", base, withCheckout(func(c *Checkout) { c.NoRemote, c.UnpushedRefs = true, []string{"HEAD"} }), Skip, UnpushedCommits, "no remote"},
		{"no remote, no commits", base, withCheckout(func(c *Checkout) { c.NoRemote = true }), Remove, "", ""},
		{"tag not on the remote", base, withCheckout(func(c *Checkout) { c.UnpushedTags = []string{"refs/tags/v1"} }), Skip, UnpushedCommits, "refs/tags/v1"},
		{"unpushed commit", base, withCheckout(func(c *Checkout) { c.Unpushed, c.UnpushedRefs = 2, []string{"HEAD"} }), Skip, UnpushedCommits, `2 commit(s) of "HEAD"`},
		{"unpushed names the first", base, withCheckout(func(c *Checkout) { c.Unpushed, c.UnpushedRefs, c.FirstUnpushed = 1, []string{"HEAD"}, "abc123" }), Skip, UnpushedCommits, "the first: abc123"},
		{"fetch failed", base, withCheckout(func(c *Checkout) { c.FetchError = "git fetch: exit status 128" }), Skip, FetchFailed, "exit status 128"},
		{"dirty beats fetch failed", base, withCheckout(func(c *Checkout) { c.FetchError, c.Changed = "x", []string{"x"} }), Skip, DirtyWorktree, ""},
		{"dirty beats unpushed", base, withCheckout(func(c *Checkout) { c.Changed, c.Unpushed = []string{"x"}, 1 }), Skip, DirtyWorktree, ""},
		{"unsafe config", base, withCheckout(func(c *Checkout) { c.UnsafeConfig = "include.path (.git/config:9)" }), Skip, UnsafeGitConfig, "include.path (.git/config:9)"},
		{"unsafe config beats dirty", base, withCheckout(func(c *Checkout) { c.UnsafeConfig, c.Changed = "include.path", []string{"x"} }), Skip, UnsafeGitConfig, ""},
		{"hidden file", base, withCheckout(func(c *Checkout) {
			c.Hidden = []string{"lib/notes.txt (in submodule path lib, which has no repository)"}
		}), Skip, HiddenChanges, "lib/notes.txt"},
		{"borrowed", base, withCheckout(func(c *Checkout) { c.BorrowedBy = []string{"/home/u/clone/.git"} }), Skip, BorrowedObjects, "/home/u/clone/.git"},
		{"ref to a blob", base, withCheckout(func(c *Checkout) { c.UnpushedObjects = []string{"refs/keep/notes"} }), Skip, UnpushedCommits, "refs/keep/notes"},
		{"only remotes that do not count", base, withCheckout(func(c *Checkout) {
			c.NoRemote, c.UnpushedRefs, c.IgnoredRemotes = true, []string{"HEAD"}, []string{"self (inside the task directories, which may be removed with it)"}
		}), Skip, UnpushedCommits, "self (inside"},
		{"unpushed, only in a reflog", base, withCheckout(func(c *Checkout) { c.Unpushed, c.UnpushedRefs = 1, []string{"logs/HEAD"} }), Skip, UnpushedCommits, "git reflog expire"},
	}
}

func TestDecide(t *testing.T) {
	for _, c := range decideCases() {
		t.Run(c.name, func(t *testing.T) {
			v := Decide(c.target, c.ev)
			if v.Action != c.action || v.Reason != c.reason || !strings.Contains(v.Detail, c.detail) {
				t.Fatalf("Decide = %+v, want %s/%s with %q in the detail", v, c.action, c.reason, c.detail)
			}
			if v.Action != Remove && v.Detail == "" {
				t.Fatal("a verdict that keeps the directory must say why")
			}
		})
	}
}

// The zero evidence (nothing gathered) never removes.
func TestDecideZeroEvidenceKeeps(t *testing.T) {
	if v := Decide(target("/srv/kandev", "t-1", "task-1"), Evidence{}); v.Action != Skip {
		t.Fatalf("Decide(zero evidence) = %+v, want a skip", v)
	}
}

// Every skip and failure reason Decide can give has a case in the table.
func TestDecideCoversEveryReason(t *testing.T) {
	decidable := []Reason{Disabled, UnsafePath, NotPrivate, NoMarker, ForeignMarker, ChangedSincePlan, MountPoint,
		NotACheckout, ProbeFailed, UnfinishedOperation, DirtyWorktree, UntrackedFiles, IgnoredFiles, StashPresent,
		LinkedWorktree, UnpushedCommits, Busy, UnsafeGitConfig, HiddenChanges, BorrowedObjects, InUse}
	seen := map[Reason]bool{}
	for _, c := range decideCases() {
		seen[c.reason] = true
	}
	for _, r := range decidable {
		if !seen[r] {
			t.Errorf("no case gives %s", r)
		}
	}
}
