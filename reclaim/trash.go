package reclaim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// trashPrefix names a directory whose removal has begun: it is renamed
// first (atomic, and it frees the task's name), then emptied. The prefix
// is never a valid task directory name, and a removal cut short is
// finished by the next Apply instead of leaving a half-deleted checkout
// that no probe could ever prove safe again.
const trashPrefix = ".reclaim."

func trashName(dir string) string { return trashPrefix + dir }

// planless is t for deciding about its interrupted removal: that was
// proven before it was renamed, so its ownership is checked again but
// not a plan's identity, which may name the directory since made there.
func planless(t Target) Target {
	t.Identity = nil
	return t
}

// gatherTrash collects the evidence about an interrupted removal of t's
// directory, for a proof that removes nothing (gatherTrashLocked).
func (h *host) gatherTrash(ctx context.Context, t Target) Evidence {
	ev, _ := h.gatherTrashLocked(ctx, t, false)
	return ev
}

// gatherTrashLocked collects the evidence about an interrupted removal of
// t's directory: its path checks and marker; then, with lock, the lock
// that removal held (its .kandev/lock, renamed with it), so that two
// helpers never prove and empty one leftover at once; then its identity
// and mounts, whether it holds only what that removal said it left
// (t.Remains, as the caller kept it, never anything read from the host),
// and when it does not, the git probes of every checkout in it, as for
// any directory. held is the lock, when it was taken: the caller
// releases it.
func (h *host) gatherTrashLocked(ctx context.Context, t Target, lock bool) (ev Evidence, held *taskdir.Lock) {
	name := trashName(t.Dir)
	path := filepath.Join(t.Root, tasksDir, name)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return Evidence{Absent: true}, nil
	}
	ev = Evidence{Interrupted: true}
	if ev.PathProblem, ev.PathDetail = h.checkTasks(t.Root); ev.PathProblem != "" {
		return ev, nil
	}
	if !h.inspectTop(path, &ev) {
		return ev, nil
	}
	if _, bad := checkMarker(t, ev, path); bad {
		return ev, nil
	}
	if lock {
		var gone bool
		if held, gone = h.lockTrash(ctx, path, &ev); gone {
			return Evidence{Absent: true}, nil
		}
		if held == nil {
			return ev, nil
		}
	}
	tr, walked := h.inspectTree(t.Root, name, &ev)
	if !walked {
		return ev, held
	}
	switch {
	case len(t.Remains) > 0 && tr.entries.outside(t.Remains, path) == "":
		ev.LeftAsRemoved = true
	case !h.probeTree(ctx, t, path, tr, &ev):
		return ev, held
	}
	ev.InUse, ev.InUseUnknown = h.inUseBy(h.proofProcs.get(ctx, h.uid), path, t.Path(), &ev)
	return ev, held
}

// lockTrash takes the lock of the leftover at path; one another process
// holds is busy (ev.Busy, naming the holder), and one that cannot be
// taken a path problem: nil then. gone: the leftover went meanwhile
// (the removal that held the lock finished it).
func (h *host) lockTrash(ctx context.Context, path string, ev *Evidence) (held *taskdir.Lock, gone bool) {
	l, err := taskdir.LockRenamable(ctx, path)
	var te *taskdir.Error
	switch {
	case errors.As(err, &te) && te.Code == taskdir.CodeBusy:
		ev.Busy = fmt.Sprintf("%s, what an earlier removal left, is locked by %s, which works on it; the next apply finishes it if that one does not", path, lockHolder(path))
		return nil, false
	case err != nil:
		if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) {
			return nil, true
		}
		ev.PathProblem, ev.PathDetail = pathProblem(err)
		return nil, false
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		l.Release()
		return nil, true
	}
	return l, false
}

// lockHolder names the process holding the lock of the directory at
// path, as its note says.
func lockHolder(path string) string {
	hd := taskdir.LockHolder(path)
	if hd == nil {
		return "another process"
	}
	return fmt.Sprintf("pid %d (%s) since %s", hd.PID, hd.Command, hd.Since.UTC().Format(time.RFC3339))
}

// inspect reads what is at <root>/tasks/<name> (below a checked tasks/)
// into ev, without git: that it and its .kandev/ are the login user's
// alone, its identity, marker, size, age and mount points. It returns
// the walk, and whether there was one.
func (h *host) inspect(root, name string, ev *Evidence) (tree, bool) {
	if !h.inspectTop(filepath.Join(root, tasksDir, name), ev) {
		return tree{}, false
	}
	return h.inspectTree(root, name, ev)
}

// inspectTop reads into ev what needs no walk of the directory at path:
// that it and its .kandev/ are the login user's alone, its identity and
// its marker. It reports whether no path problem was found.
func (h *host) inspectTop(path string, ev *Evidence) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		ev.PathProblem, ev.PathDetail = pathProblem(err)
		return false
	}
	for _, p := range []string{path, filepath.Join(path, metaDir)} {
		if err := fsx.CheckPrivate(p, h.uid, true); err != nil && !(p != path && errors.Is(err, fs.ErrNotExist)) {
			ev.PathProblem, ev.PathDetail = pathProblem(err)
			return false
		}
	}
	ev.Identity = identityOf(fi)
	h.readMarker(path, ev)
	return ev.PathProblem == ""
}

// inspectTree walks <root>/tasks/<name>, the directory inspectTop saw,
// into ev: size, age and mount points. It returns the walk, and whether
// it saw everything.
func (h *host) inspectTree(root, name string, ev *Evidence) (tree, bool) {
	d := h.openProven(root, name, ev)
	if d == nil {
		return tree{}, false
	}
	defer d.close()
	return h.walk(d, ev, nil), ev.WalkError == ""
}

// applyTrash finishes an interrupted removal of t's directory under the
// lock that removal held. tev is what the proof found there (Absent when
// there is none); done says r is t's result: the leftover was kept, or
// finishing it failed. A leftover kept whole (no report says its removal
// emptied part of it, t.Remains, nor does the note that its emptying
// began) gets its name back where that is free.
func (h *host) applyTrash(ctx context.Context, t Target) (tev Evidence, r Result, done bool) {
	tev, held := h.gatherTrashLocked(ctx, t, true)
	defer held.Release()
	if tev.Absent {
		return tev, Result{}, false
	}
	whole := held != nil && len(t.Remains) == 0
	r = result(t, tev, Decide(planless(t), tev))
	if held != nil {
		// Neither removed nor given its name back under another's lock.
		if err := leftoverLocked(t, tev.Identity, held); err != nil {
			return tev, applied(r, err), true
		}
	}
	if r.Action != Remove {
		if whole {
			r.Detail += giveNameBack(t, tev.Identity, held)
		}
		return tev, applied(r, nil), true
	}
	if ctx.Err() != nil {
		return tev, stopped(ctx, t, true), true
	}
	err := h.removeTrash(ctx, t, &tev)
	var ke *keptError
	if whole && errors.As(err, &ke) {
		ke.v.Detail += giveNameBack(t, tev.Identity, held)
	}
	if err != nil {
		return tev, applied(r, err), true
	}
	return tev, Result{}, false
}

// leftoverLocked refuses t's leftover, proven as want, when held is not
// its lock (lockedHere).
func leftoverLocked(t Target, want Identity, held *taskdir.Lock) error {
	tasks, err := openDirPath(filepath.Join(t.Root, tasksDir))
	if err != nil {
		return stepError(err)
	}
	defer tasks.close()
	if ke := lockedHere(tasks, trashName(t.Dir), t, want, held); ke != nil {
		return ke
	}
	return nil
}

// giveNameBack renames t's leftover, kept by its new proof, to its
// task's name when that is free, the leftover is still the directory
// proven (want) and its emptying never began (removalNote): a removal
// cut short between its rename and its recheck left the work there
// under a name nothing else looks at. It says, for the result's detail,
// where the directory is now; held, the leftover's lock, is told where.
func giveNameBack(t Target, want Identity, held *taskdir.Lock) string {
	trash := trashName(t.Dir)
	at := filepath.Join(t.Root, tasksDir, trash)
	tasks, err := openDirPath(filepath.Join(t.Root, tasksDir))
	if err != nil {
		return fmt.Sprintf("; it stays at %s, where an earlier removal cut short left it (%v)", at, err)
	}
	defer tasks.close()
	if err := sameDir(tasks, trash, want); err != nil {
		return fmt.Sprintf("; it stays at %s, where an earlier removal cut short left it (%v)", at, err)
	}
	switch began, err := removalBegan(tasks, trash); {
	case err != nil:
		return fmt.Sprintf("; it stays at %s, where an earlier removal cut short left it (%v)", at, err)
	case began:
		return fmt.Sprintf("; it stays at %s, where an earlier removal cut short left it after it began emptying it (%s says so), so part of it may be gone: to keep what is left, move it out of the way on the host (`%s`)",
			at, filepath.Join(at, removalNoteRel), keepCommand(at, t.Dir))
	}
	switch err := renameNoReplace(tasks.fd(), trash, t.Dir); {
	case err == nil:
		held.Moved(t.Path())
		return fmt.Sprintf("; an earlier removal cut short had left it at %s: it has its name back", at)
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
		return fmt.Sprintf("; it stays at %s, where an earlier removal cut short left it, since %s is another directory now: to keep its work, move it out of the way on the host (`%s`)",
			at, t.Path(), keepCommand(at, t.Dir))
	default:
		return fmt.Sprintf("; it stays at %s, where an earlier removal cut short left it: giving it its name back failed (%v)", at, err)
	}
}

// keepCommand is the command an operator runs on the host to move the
// leftover at path into their home as <dir>.kept, each path quoted.
func keepCommand(path, dir string) string {
	return "mv " + shquote.Quote(path) + " ~/" + shquote.Quote(dir+".kept")
}

// removeTrash finishes an interrupted removal of t's directory, which
// the proof (ev) just saw.
func (h *host) removeTrash(ctx context.Context, t Target, ev *Evidence) error {
	tasks, err := openDirPath(filepath.Join(t.Root, tasksDir))
	if err != nil {
		return stepError(err)
	}
	defer tasks.close()
	name := trashName(t.Dir)
	if err := h.recheck(tasks, readProcs(ctx, h.uid), name, t, ev); err != nil {
		return err
	}
	return h.emptyAndRemove(tasks, name, t.Dir, ev)
}
