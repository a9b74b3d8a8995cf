package reclaim

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// listedOrphan makes <root>/tasks/<id>, a clean checkout whose marker
// names task id, unchanged for two days: an orphan a confirmed reclaim's
// listing removes by itself.
func listedOrphan(t *testing.T, root, id, bare string) string {
	t.Helper()
	dir := prepared(t, root, id, id, bare)
	if out, err := exec.Command("find", dir, "-exec", "touch", "-h", "-d", "2 days ago", "{}", "+").CombinedOutput(); err != nil {
		t.Fatalf("touch: %v\n%s", err, out)
	}
	return dir
}

// vouched makes <root>/tasks/<id> as listedOrphan does, young, its
// index vouching for README's stat: README dated ten seconds back (git
// takes a file changed in the second its index was written for racily
// clean, and vouches for nothing), then the index refreshed. Aging it
// would move README's ctime past the index's, which vouches no more.
func vouched(t *testing.T, root, id, bare string) string {
	t.Helper()
	dir := prepared(t, root, id, id, bare)
	if out, err := exec.Command("touch", "-d", "10 seconds ago", filepath.Join(dir, "README")).CombinedOutput(); err != nil {
		t.Fatalf("touch: %v\n%s", err, out)
	}
	gitT(t, dir, "update-index", "--refresh")
	return dir
}

// listedYoung lists root as a confirmed reclaim does and gives the
// removal of each task directory in it with the walk the listing kept,
// as the listing gives its own, though they are too young for it.
func listedYoung(t *testing.T, root string) []Target {
	t.Helper()
	l, err := List(context.Background(), ListRequest{Root: root, Apply: &ListApply{}})
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
			Identity: &id, Enabled: true, listed: e.walked, listedID: e.Identity})
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

// A confirmed reclaim's proof takes the listing's walk as its own, so
// what changes between the listing and the proof may pass the proof,
// which reads the checkout by the listing's stat of its files: the
// recheck after the rename then sees it, and the directory keeps its
// name and its work (changed_during_proof). A tracked file edited while
// the index vouches for the listing's stat of it, and a new file the
// listing never saw, each go that way; an edit the index cannot vouch
// for (the aged fixture's files were dated back, which moved their
// ctime past the index's) is hashed by the proof, which keeps the
// directory itself.
func TestListingRemovalKeepsWorkChangedAfterTheListing(t *testing.T) {
	bare, _ := origin(t)
	edit := func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "README")
		if err := os.WriteFile(p, []byte("unsaved work\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name    string
		aged    bool // an orphan the listing removes itself; else listedYoung
		change  func(t *testing.T, dir string) string
		outcome Outcome
		reason  Reason
	}{
		{"a tracked file edited, the index vouching for the listed stat", false, edit, Failed, ChangedDuringProof},
		{"a new file", true, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "notes.txt")
			writeFile(t, p, "unsaved work\n")
			return p
		}, Failed, ChangedDuringProof},
		{"a tracked file edited, its content hashed by the proof", true, edit, Skipped, DirtyWorktree},
		// .kandev/'s own times change with the lock's note: a file
		// written there is an entry of its own.
		{"a file written in .kandev/", true, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, ".kandev", "notes.txt")
			writeFile(t, p, "unsaved work\n")
			return p
		}, Failed, ChangedDuringProof},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot(t)
			var dir string
			var targets []Target
			if c.aged {
				dir = listedOrphan(t, root, "tlisted", bare)
				targets = listedTargets(t, root)
			} else {
				dir = vouched(t, root, "tlisted", bare)
				targets = listedYoung(t, root)
			}
			if len(targets) != 1 {
				t.Fatalf("the listing would remove %d directories, want 1", len(targets))
			}
			kept := c.change(t, dir)
			rep, err := Apply(context.Background(), Request{Targets: targets})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			if r.Outcome != c.outcome || r.Reason != c.reason {
				t.Fatalf("outcome %s, reason %s (%s); want %s, %s", r.Outcome, r.Reason, r.Detail, c.outcome, c.reason)
			}
			if b, err := os.ReadFile(kept); err != nil || string(b) != "unsaved work\n" {
				t.Fatalf("%s after the apply: %q, %v", kept, b, err)
			}
		})
	}
}

// The listing's walk stands for the proof's only while the directory is
// the one listed: another one put in its place is walked again, and an
// unchanged one goes.
func TestListingRemovalWalksAgainADirectoryPutInThePlaceOfTheListedOne(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := listedOrphan(t, root, "tlisted", bare)
	targets := listedTargets(t, root)
	id := targets[0].listedID
	if got := targets[0].listedWalk(id); got != targets[0].listed {
		t.Fatal("the walk of the directory listed is not taken for it")
	}
	other := id
	other.Ino++
	if targets[0].listedWalk(other) != nil {
		t.Fatal("the listing's walk is taken for another directory")
	}

	// Another directory, the listed one's copy, is put in its place: the
	// identity the plan removes by is gone, so it is kept.
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", dir+".moved", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	rep, err := Apply(context.Background(), Request{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Outcome == Removed {
		t.Fatalf("%s was removed though it is not the directory listed: %+v", dir, r)
	}
	if _, err := os.Lstat(filepath.Join(dir, "README")); err != nil {
		t.Fatal(err)
	}

	// Listed again, unchanged, it goes.
	rep, err = Apply(context.Background(), Request{Targets: listedTargets(t, root)})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Outcome != Removed {
		t.Fatalf("the unchanged orphan was not removed: %+v", r)
	}
}
