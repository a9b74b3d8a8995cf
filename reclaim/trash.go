package reclaim

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kdlbs/kandev-exec/internal/fsx"
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
// directory: ownership, identity and mounts; then whether it holds only
// what that removal said it left (t.Remains, as the caller kept it,
// never anything read from the host), and when it does not, the git
// probes of every checkout in it, as for any directory.
func (h *host) gatherTrash(ctx context.Context, t Target) Evidence {
	name := trashName(t.Dir)
	path := filepath.Join(t.Root, tasksDir, name)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return Evidence{Absent: true}
	}
	ev := Evidence{Interrupted: true}
	if ev.PathProblem, ev.PathDetail = h.checkTasks(t.Root); ev.PathProblem != "" {
		return ev
	}
	tr, walked := h.inspect(t.Root, name, &ev)
	if _, bad := checkMarker(t, ev, path); bad || !walked {
		return ev
	}
	switch {
	case len(t.Remains) > 0 && tr.entries.outside(t.Remains, path) == "":
		ev.LeftAsRemoved = true
	case ev.OnlyDirs:
	case !h.probeTree(ctx, t, path, tr, &ev):
		return ev
	}
	ev.InUse, ev.InUseUnknown = h.inUseBy(h.proofProcs.get(ctx, h.uid), path, t.Path(), &ev)
	return ev
}

// inspect reads what is at <root>/tasks/<name> (below a checked tasks/)
// into ev, without git: that it and its .kandev/ are the login user's
// alone, its identity, marker, size, age and mount points. It returns
// the walk, and whether there was one.
func (h *host) inspect(root, name string, ev *Evidence) (tree, bool) {
	path := filepath.Join(root, tasksDir, name)
	fi, err := os.Lstat(path)
	if err != nil {
		ev.PathProblem, ev.PathDetail = pathProblem(err)
		return tree{}, false
	}
	for _, p := range []string{path, filepath.Join(path, metaDir)} {
		if err := fsx.CheckPrivate(p, h.uid, true); err != nil && !(p != path && errors.Is(err, fs.ErrNotExist)) {
			ev.PathProblem, ev.PathDetail = pathProblem(err)
			return tree{}, false
		}
	}
	ev.Identity = identityOf(fi)
	if h.readMarker(path, ev); ev.PathProblem != "" {
		return tree{}, false
	}
	d := h.openProven(root, name, ev)
	if d == nil {
		return tree{}, false
	}
	defer d.close()
	return h.walk(d, ev), ev.WalkError == ""
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
