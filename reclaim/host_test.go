package reclaim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outside makes a directory beside the root holding a file, standing for
// everything a reclaim must never touch.
func outside(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(physical(t, t.TempDir()), "precious")
	writeFile(t, filepath.Join(dir, "keep.txt"), "do not delete\n")
	return dir
}

// The one case that removes: a clean checkout whose commits the remote
// has. It is gone (a stat proves it), tasks/ and its sibling are not.
func TestApplyRemovesCleanPushedCheckout(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	prepared(t, root, "t-2", "task-2", bare)
	before := snapshot(t, root)

	plan := prove(t, target(root, "t-1", "task-1"))
	wantResult(t, plan[0], Remove, "", "")
	if plan[0].Identity == nil || plan[0].Bytes == 0 || plan[0].TaskID != "task-1" {
		t.Fatalf("plan = %+v, want identity, bytes and the marker's task", plan[0])
	}
	onlyRemoved(t, before, snapshot(t, root), "") // proving changes nothing

	tg := target(root, "t-1", "task-1")
	tg.Identity = plan[0].Identity
	r := apply(t, tg)
	wantResult(t, r[0], Remove, Removed, "")
	onlyRemoved(t, before, snapshot(t, root), dir)
	if _, err := os.Lstat(filepath.Join(root, "tasks", trashPrefix+"t-1")); !os.IsNotExist(err) {
		t.Fatalf("trash left behind: %v", err)
	}

	// Again: already absent is a removal, not an error.
	wantResult(t, apply(t, tg)[0], Remove, Removed, "")
}

func TestApplyTaskDirReplacedBySymlink(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	// The real directory moves outside; a link takes its place.
	elsewhere := filepath.Join(physical(t, t.TempDir()), "moved")
	if err := os.Rename(dir, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root, elsewhere)
	r := apply(t, target(root, "t-1", "task-1"))
	wantResult(t, r[0], Skip, Skipped, UnsafePath)
	if !strings.Contains(r[0].Detail, "symbolic link") {
		t.Fatalf("detail %q does not name the link", r[0].Detail)
	}
	onlyRemoved(t, before, snapshot(t, root, elsewhere), "")
}

func TestApplyTasksIsSymlink(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	prepared(t, root, "t-1", "task-1", bare)
	elsewhere := filepath.Join(physical(t, t.TempDir()), "tasks-elsewhere")
	if err := os.Rename(filepath.Join(root, "tasks"), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "tasks")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root, elsewhere)
	for _, r := range [][]Result{prove(t, target(root, "t-1", "task-1")), apply(t, target(root, "t-1", "task-1"))} {
		if r[0].Action != Skip || r[0].Reason != UnsafePath {
			t.Fatalf("result = %+v, want unsafe_path", r[0])
		}
	}
	onlyRemoved(t, before, snapshot(t, root, elsewhere), "")
}

// A link inside the checkout to a directory outside goes as a link; its
// target and everything in it survive. The same for a link in .kandev/.
func TestApplySymlinkInsideCheckoutKeepsItsTarget(t *testing.T) {
	bare, work := origin(t)
	keep := outside(t)
	if err := os.Symlink(keep, filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	gitT(t, work, "add", "link")
	gitT(t, work, "commit", "--quiet", "-m", "a link out")
	gitT(t, work, "push", "--quiet", "origin", "HEAD:main")
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("fixture: link not checked out: %v", err)
	}
	if err := os.Symlink(keep, filepath.Join(dir, ".kandev", "out")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root, keep)
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Remove, Removed, "")
	onlyRemoved(t, before, snapshot(t, root, keep), dir)
}

func TestApplyForeignMarker(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	writeFile(t, filepath.Join(dir, ".kandev", "owner.json"), `{"installation_id":"someone-else","task_id":"task-1"}`)
	before := snapshot(t, root)
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, ForeignMarker)
	// Another task of this installation is foreign too.
	writeFile(t, filepath.Join(dir, ".kandev", "owner.json"), `{"installation_id":"inst-1","task_id":"task-2"}`)
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, ForeignMarker)
	onlyRemoved(t, before, snapshot(t, root), "")
}

func TestApplyNoMarker(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	if err := os.Remove(filepath.Join(dir, ".kandev", "owner.json")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, NoMarker)
	// Garbage where the marker was proves nothing either.
	writeFile(t, filepath.Join(dir, ".kandev", "owner.json"), "{not json")
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, NoMarker)
	if err := os.Remove(filepath.Join(dir, ".kandev", "owner.json")); err != nil {
		t.Fatal(err)
	}
	onlyRemoved(t, before, snapshot(t, root), "")
}

// A marker that is a link is not followed, even to a marker of ours.
func TestApplyMarkerIsSymlink(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	real := filepath.Join(physical(t, t.TempDir()), "owner.json")
	writeFile(t, real, `{"installation_id":"inst-1","task_id":"task-1"}`)
	marker := filepath.Join(dir, ".kandev", "owner.json")
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, marker); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, UnsafePath)
	onlyRemoved(t, before, snapshot(t, root), "")
}

// Between the plan and the apply, the directory is moved away and another
// one (ours too, and clean) takes its name: the apply keeps both.
func TestApplySwappedBetweenPlanAndApply(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	plan := prove(t, target(root, "t-1", "task-1"))
	wantResult(t, plan[0], Remove, "", "")

	aside := filepath.Join(root, "aside")
	if err := os.Rename(dir, aside); err != nil {
		t.Fatal(err)
	}
	prepared(t, root, "t-1", "task-1", bare)
	before := snapshot(t, root)
	tg := target(root, "t-1", "task-1")
	tg.Identity = plan[0].Identity
	wantResult(t, apply(t, tg)[0], Skip, Skipped, ChangedSincePlan)
	onlyRemoved(t, before, snapshot(t, root), "")
}

// Names that are not one plain segment are refused before anything is
// touched, whatever is on disk under them.
func TestApplyHostileNames(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	prepared(t, root, "t-1", "task-1", bare)
	keep := outside(t)
	names := []string{"..", ".", "../..", "a;b", "o'brien", "x\ny", `q"uote`, "t-1/..", "t-1/../t-1", "$(touch pwned)", "T-1", " t-1", ""}
	for _, n := range names[3:] {
		if strings.Contains(n, "/") || n == "" {
			continue
		}
		// Each exists, and is even marked as ours.
		writeFile(t, filepath.Join(root, "tasks", n, ".kandev", "owner.json"), `{"installation_id":"inst-1","task_id":"task-1"}`)
		if err := os.Chmod(filepath.Join(root, "tasks", n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, filepath.Dir(root), keep)
	var targets []Target
	for _, n := range names {
		targets = append(targets, target(root, n, "task-1"))
	}
	for i, r := range apply(t, targets...) {
		if r.Action != Skip || r.Outcome != Skipped || r.Reason != UnsafePath {
			t.Errorf("%q: %+v, want unsafe_path", names[i], r)
		}
	}
	onlyRemoved(t, before, snapshot(t, filepath.Dir(root), keep), "")
	if _, err := os.Lstat(filepath.Join(root, "tasks", "pwned")); !os.IsNotExist(err) {
		t.Fatal("a name ran as a command")
	}
}

func TestApplyOtherUsersDirectory(t *testing.T) {
	requireRoot(t)
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	r := apply(t, target(root, "t-1", "task-1"))
	wantResult(t, r[0], Skip, Skipped, NotPrivate)
	if !strings.Contains(r[0].Detail, "owned by another user") {
		t.Fatalf("detail %q", r[0].Detail)
	}
	// Its marker alone belonging to another user is enough too.
	if err := os.Chown(dir, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(dir, ".kandev", "owner.json"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, NotPrivate)
	// And tasks/ writable by others.
	if err := os.Chown(filepath.Join(dir, ".kandev", "owner.json"), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "tasks"), 0o777); err != nil {
		t.Fatal(err)
	}
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Skip, Skipped, NotPrivate)
	onlyRemoved(t, before, snapshot(t, root), "")
}

func TestApplyDisabledTouchesNothing(t *testing.T) {
	tg := target("/nonexistent/root", "t-1", "task-1")
	tg.Enabled = false
	wantResult(t, apply(t, tg)[0], Skip, Skipped, Disabled)
}

func TestRequestNeedsInstallation(t *testing.T) {
	tg := target("/r", "t-1", "task-1")
	tg.InstallationID = ""
	if _, err := Apply(context.Background(), Request{Targets: []Target{tg}}); err == nil || !strings.Contains(err.Error(), "installation_id") {
		t.Fatalf("err = %v", err)
	}
}

// The removal re-checks the identity it was given: another directory
// under the name is not removed.
func TestRemoveRefusesAnotherIdentity(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	prepared(t, root, "t-1", "task-1", bare)
	before := snapshot(t, root)
	err := newHost(0).removeDir(t.Context(), target(root, "t-1", "task-1"), &Evidence{Identity: Identity{Dev: 1, Ino: 1}}, nil)
	if err == nil || !strings.Contains(err.Error(), "not the directory proven") {
		t.Fatalf("removeDir = %v", err)
	}
	// A step that failed is remove_failed; still_present is only for a
	// removal that ran and left the directory.
	if r := applied(Result{Action: Remove}, err); r.Outcome != Failed || r.Reason != RemoveFailed {
		t.Fatalf("applied = %+v", r)
	}
	onlyRemoved(t, before, snapshot(t, root), "")
}
