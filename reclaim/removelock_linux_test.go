package reclaim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// holderNote is the path of the lock's holder note in the task
// directory at dir.
func holderNote(dir string) string { return filepath.Join(dir, taskdir.LockFiles[1]) }

// renamedNow proves a clean task directory and renames it to its trash
// name as a removal does, checking its lock's holder note went with it:
// the directory's path and trash path, the call's host and the removal,
// waiting for its recheck.
func renamedNow(t *testing.T) (dir, trash string, h *host, rm *removal) {
	t.Helper()
	dir, tg, h, ev, held := provenNow(t, nil)
	rm, err := h.startRemoval(tg, &ev, held)
	if err != nil {
		t.Fatal(err)
	}
	trash = filepath.Join(tg.Root, tasksDir, trashName(tg.Dir))
	if hd := taskdir.LockHolder(trash); hd == nil || hd.PID != os.Getpid() {
		t.Fatalf("the holder note under the trash name: %+v", hd)
	}
	return dir, trash, h, rm
}

// lockedAnew makes a directory at dir, as a later launch does, and takes
// its lock.
func lockedAnew(t *testing.T, dir string) *taskdir.Lock {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := taskdir.LockRenamable(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The lock is told of the rename to the trash name: its release, once
// the directory is removed, lets go of the note where the directory
// went, and leaves the one of a later launch that made the task's
// directory again, and locked it, meanwhile.
func TestRemovalLetsGoOfItsHolderNoteUnderTheTrashName(t *testing.T) {
	dir, trash, h, rm := renamedNow(t)
	defer lockedAnew(t, dir).Release()

	if err := h.finishRemoval(t.Context(), readProcs(t.Context(), h.uid), rm); err != nil {
		t.Fatalf("removal: %v", err)
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("%s after the removal: %v", trash, err)
	}
	if _, err := os.Lstat(holderNote(dir)); err != nil {
		t.Fatalf("the later launch's holder note went with the removal's lock: %v", err)
	}
}

// The lock is told of the rename back too: a directory kept after its
// rename has its name and its lock file back, and no holder note left
// naming a process that let go of it, under either name.
func TestRemovalKeptLetsGoOfItsHolderNoteUnderItsName(t *testing.T) {
	dir, trash, h, rm := renamedNow(t)
	writeFile(t, filepath.Join(trash, "late.txt"), "late work\n")

	r := applied(Result{Action: Remove}, h.finishRemoval(t.Context(), readProcs(t.Context(), h.uid), rm))
	wantResult(t, r, Fail, Failed, ChangedDuringProof)
	if _, err := os.Lstat(filepath.Join(dir, "late.txt")); err != nil {
		t.Fatalf("the directory did not get its name back: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, taskdir.LockFiles[0])); err != nil {
		t.Fatalf("the lock file did not move back with the directory: %v", err)
	}
	for _, d := range []string{dir, trash} {
		if _, err := os.Lstat(holderNote(d)); !os.IsNotExist(err) {
			t.Errorf("the holder note at %s once the lock was let go of: %v", d, err)
		}
	}
}

// lockedInBetween moves the directory at dir out of the way, makes
// another there and takes its lock, then moves that one out and the
// first back: the lock a proof that took it by dir's path in between
// holds.
func lockedInBetween(t *testing.T, dir string) *taskdir.Lock {
	t.Helper()
	proven, other := dir+".proven", dir+".other"
	if err := os.Rename(dir, proven); err != nil {
		t.Fatal(err)
	}
	held := lockedAnew(t, dir)
	if err := os.Rename(dir, other); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(proven, dir); err != nil {
		t.Fatal(err)
	}
	return held
}

// A directory swapped out and back by its name while the proof took its
// lock (A proven, B locked, A back) is not removed: the lock held is
// B's, so nothing keeps a preparation out of A. It keeps its name and
// everything in it.
func TestRemovalRefusesTheLockOfADirectorySwappedIn(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	tg, h := target(root, "t-1", "task-1"), newHost(0)
	ev, _ := h.gatherDir(t.Context(), tg, false)
	r := result(tg, ev, Decide(tg, ev))
	wantResult(t, r, Remove, "", "")

	held := lockedInBetween(t, dir)
	defer held.Release()
	before := snapshot(t, root)

	_, err := h.startRemoval(tg, &ev, held)
	r = applied(r, err)
	wantResult(t, r, Fail, Failed, ChangedDuringProof)
	if !strings.Contains(r.Detail, "the lock its proof took is another directory's") {
		t.Fatalf("detail %q", r.Detail)
	}
	onlyRemoved(t, before, snapshot(t, root), "")
}

// So is an interrupted removal's leftover: under another directory's
// lock it is neither finished nor given its name back.
func TestLeftoverRefusesTheLockOfADirectorySwappedIn(t *testing.T) {
	root, bare, _, trash := leftoverT1(t)
	tg := launchedT1(root, bare)
	fi, err := os.Lstat(trash)
	if err != nil {
		t.Fatal(err)
	}
	held := lockedInBetween(t, trash)
	defer held.Release()

	r := applied(Result{Action: Remove}, leftoverLocked(tg, identityOf(fi), held))
	wantResult(t, r, Fail, Failed, ChangedDuringProof)
	if !strings.Contains(r.Detail, "the lock its proof took is another directory's") {
		t.Fatalf("detail %q", r.Detail)
	}
	own, err := taskdir.LockRenamable(t.Context(), trash)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Release()
	if err := leftoverLocked(tg, identityOf(fi), own); err != nil {
		t.Fatalf("under its own lock: %v", err)
	}
}

// A removal started without the directory's lock (held nil: a caller
// that never took it) is refused as changed since its proof, never
// renamed, rather than crashing the helper mid-call.
func TestRemovalWithoutItsLockIsRefused(t *testing.T) {
	dir, tg, h, ev, held := provenNow(t, nil)
	held.Release()
	_, err := h.startRemoval(tg, &ev, nil)
	r := applied(Result{Action: Remove}, err)
	wantResult(t, r, Fail, Failed, ChangedDuringProof)
	if !strings.Contains(r.Detail, "lock was not taken") {
		t.Fatalf("detail: %s", r.Detail)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".kandev", "owner.json")); err != nil {
		t.Fatalf("the directory is not whole under its name: %v", err)
	}
}
