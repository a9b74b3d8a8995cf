package reclaim

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// listedOrphan makes <root>/tasks/<id>, a clean checkout whose marker
// names task id, unchanged for two days: an orphan a confirmed reclaim's
// listing removes by itself.
func listedOrphan(t *testing.T, root, id, bare string) string {
	t.Helper()
	dir := prepared(t, root, id, id, bare)
	dateBack(t, dir)
	return dir
}

// dateBack dates everything under dir two days back.
func dateBack(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("find", dir, "-exec", "touch", "-h", "-d", "2 days ago", "{}", "+").CombinedOutput(); err != nil {
		t.Fatalf("touch: %v\n%s", err, out)
	}
}

// vouched makes <root>/tasks/<id> as listedOrphan does, young, its
// index vouching for README's stat: README dated back, then the index
// refreshed and dated after README's ctime (git and the proof take a
// file changed in the tick its index was written for racily clean, and
// vouch for nothing). Aging it would move README's ctime past the
// index's, which vouches no more.
func vouched(t *testing.T, root, id, bare string) string {
	t.Helper()
	dir := prepared(t, root, id, id, bare)
	readme, index := filepath.Join(dir, "README"), filepath.Join(dir, ".git", "index")
	if out, err := exec.Command("touch", "-d", "10 seconds ago", readme).CombinedOutput(); err != nil {
		t.Fatalf("touch: %v\n%s", err, out)
	}
	gitT(t, dir, "update-index", "--refresh")
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(index, later, later); err != nil {
		t.Fatal(err)
	}
	var r, i syscall.Stat_t
	if syscall.Lstat(readme, &r) != nil || syscall.Lstat(index, &i) != nil || r.Ctim.Nano() >= i.Mtim.Nano() {
		t.Fatalf("fixture: the index (mtime %d) is not younger than README's change (%d)", i.Mtim.Nano(), r.Ctim.Nano())
	}
	return dir
}

// listedYoung lists root as a confirmed reclaim does, keeping every
// walk, and gives the removal of each task directory in it with the
// walk the listing kept, as the listing gives its own, though they are
// too young for it.
func listedYoung(t *testing.T, root string) []Target {
	t.Helper()
	l, err := list(context.Background(), ListRequest{Root: root}, func(Entry, tree) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var targets []Target
	for _, e := range l.Entries {
		if e.walked == nil || e.Marker == nil {
			t.Fatalf("%s: listed without its walk or marker: %+v", e.Name, e)
		}
		id := e.Identity
		targets = append(targets, Target{Root: l.Root, Dir: e.Dir, InstallationID: testInstallation, TaskID: e.Marker.TaskID,
			Identity: &id, Enabled: true, listed: e.walked})
	}
	return targets
}

// listedTargets lists root as a confirmed reclaim does and gives the
// removals the listing would make itself, each carrying its walk.
func listedTargets(t *testing.T, root string) []Target {
	t.Helper()
	a := &ListApply{View: LocalView{InstallationID: testInstallation}}
	l, err := List(context.Background(), ListRequest{Root: root, Apply: a})
	if err != nil {
		t.Fatal(err)
	}
	var targets []Target
	for i, r := range Plan(*l, a.View, 0) {
		if tg, ok := a.target(l.Root, l.Entries[i], r); ok {
			if tg.listed == nil {
				t.Fatalf("%s: the listing kept no walk for its removal", r.Path)
			}
			targets = append(targets, tg)
		}
	}
	return targets
}

func applyOne(t *testing.T, targets []Target) Result {
	t.Helper()
	if len(targets) != 1 {
		t.Fatalf("%d removals, want 1", len(targets))
	}
	rep, err := Apply(context.Background(), Request{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Results[0]
}

func wantOutcome(t *testing.T, r Result, outcome Outcome, reason Reason) {
	t.Helper()
	if r.Outcome != outcome || r.Reason != reason {
		t.Fatalf("outcome %s, reason %s (%s); want %s, %s", r.Outcome, r.Reason, r.Detail, outcome, reason)
	}
}

// A confirmed reclaim's proof takes the listing's walk as its own, so
// what changes between the listing and the proof may pass the proof,
// which reads the checkout by the listing's stat of its files: the
// recheck after the rename then sees it, and the directory keeps its
// name and its work (changed_during_proof). A tracked file edited while
// the index vouches for the listing's stat of it, a new file the
// listing never saw (below the top: one at the top has the proof walk
// again), and a file in .kandev/ written or rewritten each go that way; an edit the index cannot vouch for (the aged fixture's
// files were dated back, which moved their ctime past the index's) is
// hashed by the proof, which keeps the directory itself.
func TestListingRemovalKeepsWorkChangedAfterTheListing(t *testing.T) {
	bare, _ := origin(t)
	write := func(rel string) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string {
			p := filepath.Join(dir, rel)
			writeFile(t, p, "unsaved work\n")
			return p
		}
	}
	for _, c := range []struct {
		name    string
		aged    bool   // an orphan the listing removes itself; else listedYoung
		before  string // a file written before the listing (then aged)
		change  func(t *testing.T, dir string) string
		outcome Outcome
		reason  Reason
	}{
		{"a tracked file edited, the index vouching for the listed stat", false, "", write("README"), Failed, ChangedDuringProof},
		{"a new file below the top", true, "", write(".git/notes.txt"), Failed, ChangedDuringProof},
		{"a tracked file edited, its content hashed by the proof", true, "", write("README"), Skipped, DirtyWorktree},
		{"a file written in .kandev/", true, "", write(".kandev/notes.txt"), Failed, ChangedDuringProof},
		{"a file in .kandev/ rewritten", true, ".kandev/notes.txt", write(".kandev/notes.txt"), Failed, ChangedDuringProof},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot(t)
			var dir string
			var targets []Target
			if c.aged {
				dir = prepared(t, root, "tlisted", "tlisted", bare)
				if c.before != "" {
					writeFile(t, filepath.Join(dir, c.before), "draft\n")
				}
				dateBack(t, dir)
				targets = listedTargets(t, root)
			} else {
				dir = vouched(t, root, "tlisted", bare)
				targets = listedYoung(t, root)
			}
			kept := c.change(t, dir)
			wantOutcome(t, applyOne(t, targets), c.outcome, c.reason)
			if b, err := os.ReadFile(kept); err != nil || string(b) != "unsaved work\n" {
				t.Fatalf("%s after the apply: %q, %v", kept, b, err)
			}
		})
	}
}

// The listing's walk stands for the proof's only while the directory's
// top is as listed: a file put at the top since is found by a walk of
// the proof's own (which reports it untracked), not only by the recheck.
// Another directory put in the listed one's place is kept by its
// identity before anything is walked; listed again, unchanged, the
// directory goes.
func TestListingRemovalWalksAgainWhenTheTopChanged(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := listedOrphan(t, root, "tlisted", bare)
	targets := listedTargets(t, root)
	writeFile(t, filepath.Join(dir, "notes.txt"), "unsaved work\n")
	wantOutcome(t, applyOne(t, targets), Skipped, UntrackedFiles)
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	dateBack(t, dir)

	targets = listedTargets(t, root)
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", dir+".moved", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	wantOutcome(t, applyOne(t, targets), Skipped, ChangedSincePlan)
	if err := os.RemoveAll(dir + ".moved"); err != nil {
		t.Fatal(err)
	}

	dateBack(t, dir)
	if r := applyOne(t, listedTargets(t, root)); r.Outcome != Removed {
		t.Fatalf("the unchanged orphan was not removed: %+v", r)
	}
}

// The notes the lock and the removal write in .kandev/ are left out of
// the comparison, but .kandev/'s own times are not: one written there by
// someone else after the proof keeps the directory, in any apply. (The
// holder note then goes with the lock, as its own.)
func TestRemovalKeepsANoteWrittenAfterTheProof(t *testing.T) {
	for _, rel := range []string{removalNoteRel, taskdir.LockFiles[1]} {
		t.Run(rel, func(t *testing.T) {
			dir, tg, h, ev, held := provenNow(t, nil)
			p := filepath.Join(dir, rel)
			writeFile(t, p+".agent", "unsaved work\n")
			if err := os.Rename(p+".agent", p); err != nil {
				t.Fatal(err)
			}
			r := applied(Result{Action: Remove}, h.removeDir(t.Context(), tg, &ev, held))
			wantOutcome(t, r, Failed, ChangedDuringProof)
			if _, err := os.Lstat(filepath.Join(dir, "README")); err != nil {
				t.Fatal(err)
			}
			if rel != removalNoteRel {
				return
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != "unsaved work\n" {
				t.Fatalf("%s after the apply: %q, %v", p, b, err)
			}
		})
	}
}
