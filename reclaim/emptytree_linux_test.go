package reclaim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rechecked proves a clean task directory (setup, unless nil, adds to
// it first), renames it and rechecks it as a removal does, and returns
// its trash path and the removal that would follow (emptyAndRemove): a
// test changes the directory in between, the way a process that found
// it by its trash name after the recheck could.
func rechecked(t *testing.T, setup func(dir string)) (trash string, remove func() error) {
	t.Helper()
	_, tg, h, ev, held := provenNow(t, setup)
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
	trash, remove := rechecked(t, nil)
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

// Entries swapped after the recheck are removed as what they are now,
// not as its listing says, and no link is followed: .git/refs, listed
// as a directory, is a link to a directory outside by then; it cannot be
// entered (no link is opened), so it is lstat'ed and unlinked, and the
// directory it points to keeps its file. README, listed as a file, is a
// directory holding a file by then: its unlinkat fails, so it is
// lstat'ed, entered, read, emptied and removed. The tree is gone.
func TestRemoveFollowsNoLinkSwappedInAfterRecheck(t *testing.T) {
	trash, remove := rechecked(t, nil)
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
	trash, remove := rechecked(t, nil)
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

// A file in .kandev/ that cannot be unlinked, whether the recheck listed
// it or it was written there since, stops the removal before the marker
// goes: the removal fails naming the file, and the leftover, its marker
// still there, is planned as this task's removal cut short.
func TestRemoveKeepsMarkerWhenAFileInKandevStays(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		name   string
		listed bool
	}{{"listed by the recheck", true}, {"written after it", false}} {
		t.Run(c.name, func(t *testing.T) {
			trash, remove := rechecked(t, func(dir string) {
				if c.listed {
					writeFile(t, filepath.Join(dir, metaDir, "notes"), "x\n")
				}
			})
			stuck := filepath.Join(trash, metaDir, "notes")
			if !c.listed {
				writeFile(t, stuck, "x\n")
			}
			runT(t, "chattr", "+i", stuck)
			t.Cleanup(func() { exec.Command("chattr", "-i", stuck).Run() })

			r := applied(Result{Action: Remove}, remove())
			wantResult(t, r, Remove, Failed, RemoveFailed)
			if !strings.Contains(r.Detail, stuck) {
				t.Fatalf("detail %q does not name %s", r.Detail, stuck)
			}
			if _, err := os.Lstat(filepath.Join(trash, metaDir, markerFile)); err != nil {
				t.Fatalf("the marker went before what could not be removed: %v", err)
			}
			l, err := List(t.Context(), ListRequest{Root: filepath.Dir(filepath.Dir(trash))})
			if err != nil {
				t.Fatal(err)
			}
			rows := Plan(*l, LocalView{InstallationID: testInstallation}, 0)
			if len(rows) != 1 || rows[0].Action != Remove || rows[0].Reason != Interrupted || rows[0].Dir != "t-1" || rows[0].TaskID != "task-1" {
				t.Fatalf("plan = %+v, want t-1 as task-1's interrupted removal", rows)
			}
		})
	}
}

// A bind mount made after the recheck in a directory it listed, over a
// listed directory or on one made since, stops the removal there: it
// fails naming the mount, nothing on the mounted filesystem is removed,
// and the marker stays.
func TestRemoveStopsAtMountMadeAfterRecheck(t *testing.T) {
	for _, mode := range []string{"openat2", "mount table"} {
		t.Run(mode, func(t *testing.T) {
			for _, c := range []struct{ name, at string }{
				{"over a listed directory", ".git/refs/heads"},
				{"on a directory made since", ".git/refs/late"},
			} {
				t.Run(c.name, func(t *testing.T) {
					if mode != "openat2" {
						withoutOpenat2(t)
					}
					trash, remove := rechecked(t, nil)
					keep := outside(t)
					mnt := filepath.Join(trash, c.at)
					bindMount(t, keep, mnt, filepath.Dir(trash))
					before := snapshot(t, keep)

					r := applied(Result{Action: Remove}, remove())
					wantResult(t, r, Remove, Failed, RemoveFailed)
					if !strings.Contains(r.Detail, mnt+" is a mount point") {
						t.Fatalf("detail %q does not name the mount %s", r.Detail, mnt)
					}
					onlyRemoved(t, before, snapshot(t, keep), "")
					if _, err := os.Lstat(filepath.Join(trash, metaDir, markerFile)); err != nil {
						t.Fatalf("the marker: %v", err)
					}
				})
			}
		})
	}
}

// A directory of more entries than one getdents buffer holds, written to
// after the recheck, is emptied as listed, read again once its rmdir
// finds it not empty, and removed with what was added: the tree is gone.
// Its names are long enough that it takes several buffers, more than the
// few readings again could make up for a listing that stopped at one.
func TestRemoveEmptiesALargeDirectoryWrittenToAfterRecheck(t *testing.T) {
	const n = 3000
	name := func(i int) string { return fmt.Sprintf("entry-%04d-%s", i, strings.Repeat("x", 40)) }
	buf := direntBufs.Get().(*[]byte)
	size := len(*buf)
	direntBufs.Put(buf)
	// A linux_dirent64 takes 19 bytes and the name with its NUL, 8-aligned;
	// the recheck's listing and the removal's three again must not hold
	// them all at one buffer each.
	if need := n * ((19 + len(name(0)) + 1 + 7) &^ 7); need <= 4*size {
		t.Fatalf("%d entries take %d bytes, which four %d-byte getdents buffers hold", n, need, size)
	}
	trash, remove := rechecked(t, func(dir string) {
		bulk := filepath.Join(dir, metaDir, "bulk")
		if err := os.Mkdir(bulk, 0o700); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(bulk, name(i)), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	})
	writeFile(t, filepath.Join(trash, metaDir, "bulk", "late"), "late\n")
	if err := remove(); err != nil {
		t.Fatalf("removal: %v", err)
	}
	for _, p := range []string{trash, filepath.Join(filepath.Dir(trash), "t-1")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s after the removal: %v", p, err)
		}
	}
}
