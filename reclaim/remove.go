package reclaim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// Removal never follows a link and never names a path for the kernel to
// resolve: each entry is removed through its parent's descriptor
// (unlinkat), each directory entered with openat(2) and O_NOFOLLOW (on
// Linux openat2 and RESOLVE_NO_XDEV, which also refuses a bind mount),
// and a directory whose device differs from the task directory's is a
// mount point: the removal stops there and fails.

// removeError is a removal that did not finish, naming the paths.
type removeError struct {
	paths        []string // the first few that failed, with why
	more         int
	stepFailed   bool // a removal step failed
	stillPresent bool // the stat afterwards still finds the directory, with no step failing
	mount        bool // stopped at a mount point
	remains      []string
}

func (e *removeError) Error() string {
	msg := strings.Join(e.paths, "; ")
	if e.more > 0 {
		msg += fmt.Sprintf("; and %d more", e.more)
	}
	return msg
}

const maxReportedPaths = 5

func (e *removeError) add(err error) {
	e.stepFailed = true
	if errors.Is(err, errMount) {
		e.mount = true
	}
	e.note(err)
}

func (e *removeError) note(err error) {
	if len(e.paths) < maxReportedPaths {
		e.paths = append(e.paths, err.Error())
	} else {
		e.more++
	}
}

// stepError is a removal that failed at its first step.
func stepError(err error) *removeError {
	re := &removeError{}
	re.add(err)
	return re
}

func (e *removeError) failed() bool { return e.stepFailed || e.stillPresent }

// keptError is a check just before the removal that refused it: the
// directory is kept, with the verdict.
type keptError struct{ v Verdict }

func (e *keptError) Error() string { return e.v.Detail }

// removeDir removes <root>/tasks/<dir>, which the proof (ev) just saw: it
// is checked again, renamed to its trash name, checked once more under
// that name, emptied and removed, and then both names are stat'ed to
// prove it gone. A refusal after the rename gives it its name back.
// held is the directory's lock, taken by the proof; it is released.
func (h *host) removeDir(ctx context.Context, t Target, ev *Evidence, held *taskdir.Lock) error {
	rm, err := h.startRemoval(t, ev, held)
	if err != nil {
		held.Release()
		return err
	}
	return h.finishRemoval(ctx, readProcs(ctx, h.uid), rm)
}

// removal is a directory renamed to its trash name by startRemoval,
// waiting for its recheck and removal (finishRemoval): r is the proof's
// result, held the directory's lock, told of each rename.
type removal struct {
	t     Target
	ev    *Evidence
	tasks *dirFD
	r     Result
	held  *taskdir.Lock
}

// startRemoval checks tasks/<dir> again (the directory the proof, ev,
// saw, and whose lock is held) and renames it to its trash name: from
// then on nothing reaches it by its task's name. The caller releases
// held when it returns an error.
func (h *host) startRemoval(t Target, ev *Evidence, held *taskdir.Lock) (*removal, error) {
	tasks, err := openDirPath(filepath.Join(t.Root, tasksDir))
	if err != nil {
		return nil, stepError(err)
	}
	if err := renameToTrash(tasks, t, ev.Identity, held); err != nil {
		tasks.close()
		var ke *keptError
		if errors.As(err, &ke) {
			return nil, ke
		}
		return nil, stepError(err)
	}
	held.Moved(filepath.Join(tasks.path, trashName(t.Dir)))
	return &removal{t: t, ev: ev, tasks: tasks, held: held}, nil
}

// renameToTrash renames tasks/<dir>, when it is the directory proven
// (want), held is its lock and its trash name is free, to that name.
func renameToTrash(tasks *dirFD, t Target, want Identity, held *taskdir.Lock) error {
	trash := trashName(t.Dir)
	if err := sameDir(tasks, t.Dir, want); err != nil {
		return err
	}
	if err := lockedHere(tasks, t.Dir, t, want, held); err != nil {
		return err
	}
	if _, err := tasks.lstat(trash); !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s is in the way of the removal", filepath.Join(tasks.path, trash))
	}
	if err := unix.Renameat(tasks.fd(), t.Dir, tasks.fd(), trash); err != nil {
		return fmt.Errorf("rename %s to %s: %w", t.Path(), trash, err)
	}
	return nil
}

// lockedHere refuses, as changed since its proof, tasks/<name> (t's
// directory, or its leftover) when held, the lock the proof took by that
// path, is not the lock file of the directory proven (want): another
// directory swapped in by its name while the lock was taken, and out
// again, left the one proven unlocked.
func lockedHere(tasks *dirFD, name string, t Target, want Identity, held *taskdir.Lock) *keptError {
	d, err := tasks.open(name)
	if err != nil {
		return changedSinceProof(t, err.Error())
	}
	defer d.close()
	if d.identity() != want {
		return changedSinceProof(t, "another directory took its place")
	}
	meta, err := d.open(metaDir)
	if err != nil {
		return changedSinceProof(t, err.Error())
	}
	defer meta.close()
	st, err := meta.lstat(lockName)
	if err != nil {
		return changedSinceProof(t, err.Error())
	}
	fi, err := held.Stat()
	if err != nil {
		return changedSinceProof(t, err.Error())
	}
	if identityOf(fi) != (Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}) {
		return changedSinceProof(t, "the lock its proof took is another directory's")
	}
	return nil
}

// lockName is the lock file's name in .kandev/.
var lockName = path.Base(taskdir.LockFiles[0])

// changedSinceProof keeps t's directory: what says so changed after its
// proof began.
func changedSinceProof(t Target, what string) *keptError {
	return &keptError{Verdict{Action: Fail, Reason: ChangedDuringProof,
		Detail: fmt.Sprintf("%s changed after its proof began (%s); it is kept and proven again", t.Path(), what)}}
}

// finishRemoval rechecks the renamed directory against procs, a reading
// of the process table begun after the rename, then empties and removes
// it; a refusal, or the call ending first (its time ran out, or the
// caller interrupted it), gives it its name back. The directory's lock
// is released once done.
func (h *host) finishRemoval(ctx context.Context, procs *procTable, rm *removal) error {
	defer rm.held.Release()
	defer rm.tasks.close()
	t, tasks, trash := rm.t, rm.tasks, trashName(rm.t.Dir)
	err := h.recheck(tasks, procs, trash, t, rm.ev)
	if err == nil && ctx.Err() != nil {
		err = &keptError{stopVerdict(ctx, t.Path(), "removed")}
	}
	if err != nil {
		if rerr := renameNoReplace(tasks.fd(), trash, t.Dir); rerr != nil {
			err.v.Detail += fmt.Sprintf("; it could not get its name back (%v), so it stays at %s", rerr, filepath.Join(tasks.path, trash))
		} else {
			rm.held.Moved(t.Path())
		}
		return err
	}
	return h.emptyAndRemove(tasks, trash, t.Dir, rm.ev)
}

// recheck refuses the removal of tasks/<name>, proven as ev, when a
// process works in it (as procs, read after the rename, saw them) or it
// changed since the proof began. Done once it can no longer be reached
// by its task's name, so nothing that goes by that name gets in between
// the check and the removal.
func (h *host) recheck(tasks *dirFD, procs *procTable, name string, t Target, ev *Evidence) *keptError {
	path := filepath.Join(tasks.path, name)
	users, unknown := h.inUseBy(procs, path, t.Path(), ev)
	switch {
	case len(users) > 0:
		return &keptError{Verdict{Action: Fail, Reason: InUse, Detail: fmt.Sprintf("%s is in use by %s; the removal waits for them to end", t.Path(), examples(users))}}
	case unknown != "":
		return &keptError{skip(ProbeFailed, fmt.Sprintf("%s: which processes use it is unknown: %s", t.Path(), unknown))}
	}
	d, err := tasks.open(name)
	if err != nil {
		return changedSinceProof(t, err.Error())
	}
	defer d.close()
	if d.identity() != ev.Identity {
		return changedSinceProof(t, "another directory took its place")
	}
	tr, err := walkTree(d)
	switch {
	case err != nil:
		return changedSinceProof(t, err.Error())
	case len(tr.mounts) > 0:
		return changedSinceProof(t, fmt.Sprintf("%s was mounted", examples(tr.mounts)))
	}
	if c := ev.proof.firstChange(tr.entries); c != "" {
		return changedSinceProof(t, c)
	}
	return nil
}

// emptyAndRemove removes tasks/<name> (proven as ev, and just found by
// the recheck as the proof's walk saw it) and proves both it and
// tasks/<dir> gone. The marker goes last, so a removal cut short
// still says whose directory it was, and what it left is reported.
func (h *host) emptyAndRemove(tasks *dirFD, name, dir string, ev *Evidence) error {
	re := h.empty(tasks, name, dir, ev)
	if re == nil {
		return nil
	}
	re.remains = remainsAt(tasks, name, ev)
	return re
}

// remainsAt is what is left at tasks/<name> once its removal, proven as
// ev, stopped (manifest.remainsOf).
func remainsAt(tasks *dirFD, name string, ev *Evidence) []string {
	d, err := tasks.open(name)
	if err != nil {
		return nil
	}
	defer d.close()
	tr, err := walkTree(d)
	if err != nil || len(tr.mounts) > 0 || d.identity() != ev.Identity {
		return nil
	}
	return ev.proof.remainsOf(tr.entries, filepath.Join(tasks.path, name))
}

// empty removes tasks/<name>, proven as ev and found by the recheck as
// the proof's walk saw it, and proves both it and tasks/<dir> gone; nil
// once they are.
func (h *host) empty(tasks *dirFD, name, dir string, ev *Evidence) *removeError {
	re, want := &removeError{}, ev.Identity
	if err := sameDir(tasks, name, want); err != nil {
		re.add(err)
		return re
	}
	if !canSeeBindMounts() {
		// Without openat2 a bind mount of the same device looks like any
		// directory: the mount table is read again, just before.
		table, err := mountTable()
		if err != nil {
			re.add(err)
			return re
		}
		if m := mountsBelow(table, filepath.Join(tasks.path, name)); len(m) > 0 {
			re.add(fmt.Errorf("%s is %w", m[0], errMount))
			return re
		}
	}
	d, err := tasks.open(name)
	if err != nil {
		re.add(err)
		return re
	}
	if d.identity() != want {
		d.close()
		re.add(fmt.Errorf("%s changed just before its removal", d.path))
		return re
	}
	if err := noteRemoval(d); err != nil {
		d.close()
		re.add(err)
		return re
	}
	emptyTop(d, ev.proof, re)
	d.close()
	if !re.failed() {
		if err := unix.Unlinkat(tasks.fd(), name, unix.AT_REMOVEDIR); err != nil {
			re.add(&fs.PathError{Op: "remove", Path: filepath.Join(tasks.path, name), Err: err})
		}
	}
	// Proven gone: the trash name is free, and the task's name holds
	// nothing, or a directory made since (a later launch), not this one.
	for _, n := range []string{name, dir} {
		st, err := tasks.lstat(n)
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			re.stillPresent = true
			re.note(err)
		case n == name || (Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}) == want:
			re.stillPresent = true
			re.note(fmt.Errorf("%s is still there", filepath.Join(tasks.path, n)))
		}
	}
	if re.failed() {
		return re
	}
	return nil
}

// emptyTop empties d, the top of a tree the manifest m lists: everything
// but .kandev/, then .kandev/ but the marker and the removal note, then
// the note and the marker, so that a removal stopped by any failure
// still says whose it was, and that its emptying began. Each of the
// two is read once more before the marker goes, so that what was written
// there since the recheck goes first.
func emptyTop(d *dirFD, m manifest, re *removeError) {
	if len(m) == 0 || m[0].rel != "." || m[0].ino != d.st.Ino {
		m = nil // not this tree's: every directory is read instead
	}
	if emptyListed(d, m, 0, len(m), metaDir, re); !re.failed() {
		removeAll(d, re, metaDir)
	}
	if re.failed() {
		return
	}
	meta, err := d.open(metaDir)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			re.add(err)
		}
		return
	}
	defer meta.close()
	i, end := listedDir(m, 0, len(m), metaDir, meta.st.Ino)
	if emptyListed(meta, m, i, end, markerFile, re); !re.failed() {
		removeAll(meta, re, markerFile, removalNote)
	}
	for _, n := range []string{removalNote, markerFile} {
		if !re.failed() {
			removeEntry(meta, n, re)
		}
	}
	if !re.failed() {
		rmdirEmptied(d, meta, metaDir, nil, re)
	}
}

// sameDir checks that name in tasks is a directory (never a link) with
// identity want.
func sameDir(tasks *dirFD, name string, want Identity) error {
	st, err := tasks.lstat(name)
	if err != nil {
		return err
	}
	got := Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
	if !isDir(st) || got != want {
		return fmt.Errorf("%s is not the directory proven (device %d inode %d, proven device %d inode %d)",
			filepath.Join(tasks.path, name), got.Dev, got.Ino, want.Dev, want.Ino)
	}
	return nil
}
