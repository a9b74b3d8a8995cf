package reclaim

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rechecked proves a clean task directory, renames it and rechecks it as
// a removal does, and returns its trash path and the removal that would
// follow (emptyAndRemove): a test changes the directory in between, the
// way a process that found it by its trash name after the recheck could.
func rechecked(t *testing.T) (trash string, remove func() error) {
	t.Helper()
	_, tg, h, ev, held := provenNow(t)
	t.Cleanup(held.Release)
	rm, err := h.startRemoval(tg, &ev, held)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.tasks.close)
	trash = filepath.Join(tg.Root, tasksDir, trashName(tg.Dir))
	if err := h.recheck(rm.tasks, readProcs(t.Context(), h.uid), trashName(tg.Dir), tg, &ev); err != nil {
		t.Fatalf("recheck: %v", err)
	}
	return trash, func() error { return h.emptyAndRemove(rm.tasks, trashName(tg.Dir), tg.Dir, &ev) }
}

// The removal empties each directory as the recheck listed it, without
// reading it again; what was written after that listing is still found
// (a directory's rmdir fails while it holds anything) and removed, in
// directories the listing named and in ones it did not, so the
// directory is proven gone, not left half removed.
func TestRemoveReadsAgainWhatWasWrittenAfterRecheck(t *testing.T) {
	trash, remove := rechecked(t)
	writeFile(t, filepath.Join(trash, "late.txt"), "late\n")
	writeFile(t, filepath.Join(trash, ".git", "refs", "heads", "late"), "x\n")
	writeFile(t, filepath.Join(trash, ".git", "late", "deeper", "file"), "x\n")
	writeFile(t, filepath.Join(trash, ".kandev", "late"), "x\n")
	if err := remove(); err != nil {
		t.Fatalf("removal: %v", err)
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("%s after the removal: %v", trash, err)
	}
}

// What the recheck listed as a directory and is a link by the time of
// the removal is unlinked, never followed: the directory it points to,
// outside the task directory, keeps what it holds. So is a file swapped
// for a directory, which is emptied through its own descriptor.
func TestRemoveFollowsNoLinkSwappedInAfterRecheck(t *testing.T) {
	trash, remove := rechecked(t)
	outside := filepath.Join(t.TempDir(), "outside")
	writeFile(t, filepath.Join(outside, "keep.txt"), "mine\n")
	refs := filepath.Join(trash, ".git", "refs")
	if err := os.RemoveAll(refs); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, refs); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(trash, "README")
	if err := os.Remove(readme); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(readme, "inside"), "x\n")
	if err := remove(); err != nil {
		t.Fatalf("removal: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep.txt")); err != nil || string(b) != "mine\n" {
		t.Fatalf("the link's target lost its file: %q, %v", b, err)
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("%s after the removal: %v", trash, err)
	}
}

// An entry written at the top of the directory after the recheck, which
// cannot be removed, stops the removal before the marker goes: the top
// is read once more after its listed entries went, so a removal cut
// short still says whose directory it was.
func TestRemoveKeepsMarkerWhenWhatWasWrittenAfterRecheckStays(t *testing.T) {
	requireRoot(t)
	trash, remove := rechecked(t)
	stuck := filepath.Join(trash, "stuck.txt")
	writeFile(t, stuck, "x\n")
	runT(t, "chattr", "+i", stuck)
	t.Cleanup(func() { exec.Command("chattr", "-i", stuck).Run() })
	err := remove()
	var re *removeError
	if !errors.As(err, &re) || !re.stepFailed || !strings.Contains(err.Error(), stuck) {
		t.Fatalf("removal = %v, want it failed naming %s", err, stuck)
	}
	if _, err := os.Lstat(filepath.Join(trash, metaDir, markerFile)); err != nil {
		t.Fatalf("the marker went before what could not be removed: %v", err)
	}
}
