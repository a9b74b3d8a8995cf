package reclaim

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
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

// removeDir removes <root>/tasks/<dir>, which the proof just saw with
// identity want: it is checked again, renamed to its trash name, emptied
// and removed, and then both names are stat'ed to prove it gone.
func (h *host) removeDir(t Target, want Identity) error {
	tasks, err := openDirPath(filepath.Join(t.Root, tasksDir))
	if err != nil {
		return stepError(err)
	}
	defer tasks.close()
	trash := trashName(t.Dir)
	if err := sameDir(tasks, t.Dir, want); err != nil {
		return stepError(err)
	}
	if _, err := tasks.lstat(trash); !errors.Is(err, unix.ENOENT) {
		return stepError(fmt.Errorf("%s is in the way of the removal", filepath.Join(tasks.path, trash)))
	}
	if err := unix.Renameat(tasks.fd(), t.Dir, tasks.fd(), trash); err != nil {
		return stepError(fmt.Errorf("rename %s to %s: %w", t.Path(), trash, err))
	}
	return h.emptyAndRemove(tasks, trash, t.Dir, want)
}

// removeTrash finishes an interrupted removal of t's directory.
func (h *host) removeTrash(t Target, want Identity) error {
	tasks, err := openDirPath(filepath.Join(t.Root, tasksDir))
	if err != nil {
		return stepError(err)
	}
	defer tasks.close()
	return h.emptyAndRemove(tasks, trashName(t.Dir), t.Dir, want)
}

// emptyAndRemove removes tasks/<name> (identity want) and proves both it
// and tasks/<dir> gone. The marker goes last, so a removal cut short
// still says whose directory it was.
func (h *host) emptyAndRemove(tasks *dirFD, name, dir string, want Identity) error {
	re := &removeError{}
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
	// Everything but .kandev/, then .kandev/ but the marker, then the
	// marker: a removal stopped by any failure still says whose it was.
	removeAll(d, metaDir, re)
	if !re.failed() {
		if meta, err := d.open(metaDir); err == nil {
			removeAll(meta, markerFile, re)
			if !re.failed() {
				removeEntry(meta, markerFile, re)
			}
			meta.close()
		} else if !errors.Is(err, unix.ENOENT) {
			re.add(err)
		}
	}
	if !re.failed() {
		removeEntry(d, metaDir, re)
	}
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

// removeAll removes every entry of d except keep, stopping at a mount
// point. Entries that appear meanwhile are read again, a few times; one
// that failed is not tried twice, and what is left makes the caller's
// rmdir fail.
func removeAll(d *dirFD, keep string, re *removeError) {
	failed := map[string]bool{keep: true}
	for range 3 {
		names, err := d.names()
		if err != nil {
			re.add(err)
			return
		}
		tried := false
		for _, n := range names {
			if failed[n] {
				continue
			}
			tried = true
			if !removeEntry(d, n, re) {
				failed[n] = true
			}
			if re.mount {
				return
			}
		}
		if !tried {
			return
		}
	}
}

// removeEntry removes name from d: a file, link, socket or the like with
// unlinkat, a directory by emptying it through its own descriptor first.
// It reports whether name is gone.
func removeEntry(d *dirFD, name string, re *removeError) bool {
	st, err := d.lstat(name)
	if errors.Is(err, unix.ENOENT) {
		return true
	}
	if err != nil {
		re.add(err)
		return false
	}
	path := filepath.Join(d.path, name)
	if isDir(st) {
		sub, err := d.open(name)
		if err != nil {
			re.add(err)
			return false
		}
		if sub.st.Ino != st.Ino {
			sub.close()
			re.add(fmt.Errorf("%s changed while it was being removed", path))
			return false
		}
		removeAll(sub, "", re)
		sub.close()
		if re.mount {
			return false
		}
		err = unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR)
	} else {
		err = unix.Unlinkat(d.fd(), name, 0)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		re.add(&fs.PathError{Op: "remove", Path: path, Err: err})
		return false
	}
	return true
}
