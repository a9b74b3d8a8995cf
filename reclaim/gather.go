package reclaim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/taskdir"
)

func (h *host) prove(ctx context.Context, t Target) Result {
	if v, early := decideEarly(t); early {
		return result(t, Evidence{}, v)
	}
	ev, _ := h.gatherDir(ctx, t, false)
	if ev.Absent && ev.PathProblem == "" {
		if tev := h.gatherTrash(ctx, t); !tev.Absent {
			return result(t, tev, Decide(planless(t), tev))
		}
	}
	return result(t, ev, Decide(t, ev))
}

// apply proves t again and, when the proof allows its removal, starts
// it (startRemoval): the removal returned, which the caller finishes,
// holds the directory's lock. Otherwise the result is final.
func (h *host) apply(ctx context.Context, t Target) (Result, *removal) {
	if v, early := decideEarly(t); early {
		return applied(result(t, Evidence{}, v), nil), nil
	}
	// An earlier removal cut short is finished first.
	tev, r, done := h.applyTrash(ctx, t)
	if done {
		return r, nil
	}
	ev, held := h.gatherDir(ctx, t, true)
	r = result(t, ev, Decide(t, ev))
	if ev.Absent && !tev.Absent {
		r.Detail = fmt.Sprintf("finished the interrupted removal of %s", t.Path())
		r.Bytes, r.AgeSeconds, r.TaskID = tev.Bytes, tev.AgeSeconds, markerTask(tev)
	}
	if ctx.Err() != nil && !ev.Absent && r.Action != Fail {
		// The call ended (its time, or a cancel) during the proof: a
		// check it cut short is no verdict to keep or remove by, and no
		// removal starts; a failure found is reported as it is.
		held.Release()
		return stopped(ctx, t, true), nil
	}
	if r.Action != Remove || ev.Absent {
		held.Release()
		return applied(r, nil), nil
	}
	rm, err := h.startRemoval(t, &ev, held)
	if err != nil {
		held.Release()
		return applied(r, err), nil
	}
	rm.r = r
	return Result{}, rm
}

// decideEarly answers what needs no disk: a target not enabled, or a
// name that is not one segment under tasks/ (nothing is even stat'ed).
func decideEarly(t Target) (Verdict, bool) {
	if !t.Enabled {
		return Decide(t, Evidence{}), true
	}
	return checkShape(t)
}

func result(t Target, ev Evidence, v Verdict) Result {
	r := Result{Path: t.Path(), TaskID: markerTask(ev), Action: v.Action, Reason: v.Reason, Detail: v.Detail,
		Bytes: ev.Bytes, AgeSeconds: ev.AgeSeconds}
	if ev.Identity != (Identity{}) {
		id := ev.Identity
		r.Identity = &id
	}
	if v.Action == Remove && len(ev.Checkouts) > 0 {
		r.Proof, r.ProvenAt = proofOf(ev), time.Now().UTC().Truncate(time.Second)
	}
	return r
}

func markerTask(ev Evidence) string {
	if ev.Marker == nil {
		return ""
	}
	return ev.Marker.TaskID
}

// applied records what Apply did with r: a removal error fails it, and
// a check just before the removal that refused it keeps the directory.
func applied(r Result, err error) Result {
	var ke *keptError
	switch {
	case errors.As(err, &ke):
		r.Action, r.Reason, r.Detail = ke.v.Action, ke.v.Reason, ke.v.Detail
		r.Outcome = Failed
		if r.Action == Skip {
			r.Outcome = Skipped
		}
	case err != nil:
		var re *removeError
		r.Action, r.Outcome, r.Reason, r.Detail = Remove, Failed, RemoveFailed, err.Error()
		if errors.As(err, &re) {
			r.Remains = re.remains
			if !re.stepFailed {
				r.Reason = StillPresent
			}
		}
	case r.Action == Remove:
		r.Outcome = Removed
	case r.Action == Skip:
		r.Outcome = Skipped
	default:
		r.Outcome = Failed
	}
	return r
}

// gatherDir collects the evidence about <root>/tasks/<dir>. It stops at
// the first fact that decides: nothing is probed in a directory that is
// not provably ours. With lock, the task directory's lock is taken (as
// prepare and run-script take it): held, which the caller releases; nil
// when it was not taken.
func (h *host) gatherDir(ctx context.Context, t Target, lock bool) (ev Evidence, held *taskdir.Lock) {
	path := t.Path()
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		ev.PathProblem, ev.PathDetail = h.checkTasks(t.Root)
		ev.Absent = ev.PathProblem == ""
		return ev, nil
	}
	if err == nil {
		err = taskdir.CheckTaskDir(path)
	}
	if err != nil {
		ev.PathProblem, ev.PathDetail = pathProblem(err)
		return ev, nil
	}
	ev.Identity = identityOf(fi)
	if h.readMarker(path, &ev); ev.PathProblem != "" {
		return ev, nil
	}
	if _, bad := checkMarker(t, ev, path); bad || (t.Identity != nil && *t.Identity != ev.Identity) {
		return ev, nil
	}
	if lock {
		l, err := taskdir.LockRenamable(ctx, path)
		var te *taskdir.Error
		if errors.As(err, &te) && te.Code == taskdir.CodeBusy {
			ev.Busy = fmt.Sprintf("%s is locked by %s, which works on it (a preparation, a script or another removal); the next apply tries again", path, lockHolder(path))
			return ev, nil
		}
		if err != nil {
			ev.PathProblem, ev.PathDetail = pathProblem(err)
			return ev, nil
		}
		held = l
	}
	d := h.openProven(t.Root, t.Dir, &ev)
	if d == nil {
		return ev, held
	}
	tr := h.walk(d, &ev, listedWalk(t.listed, d))
	d.close()
	if h.probeTree(ctx, t, path, tr, &ev) {
		ev.InUse, ev.InUseUnknown = h.inUseBy(h.proofProcs.get(ctx, h.uid), path, path, &ev)
	}
	return ev, held
}

// probeTree probes every checkout of t's tree, walked at path, when the
// walk saw it all and it is one (or the operator named it though it is
// not), and reports whether it did.
func (h *host) probeTree(ctx context.Context, t Target, path string, tr tree, ev *Evidence) bool {
	top := len(tr.checkouts) > 0 && tr.checkouts[0] == "."
	if ev.WalkError != "" || len(ev.Mounts) > 0 || !top && !t.Uncheckable {
		return false
	}
	if len(tr.checkouts) > 0 {
		ev.Checkouts = h.probeCheckouts(ctx, t, path, tr)
	}
	return true
}

// checkTasks proves the root and tasks/ (when it exists) the login
// user's alone, as CheckTaskDir does for a task directory: an absence is
// only believed below checked directories.
func (h *host) checkTasks(root string) (Reason, string) {
	phys, err := taskdir.PrivateRoot(root)
	if err != nil {
		return pathProblem(err)
	}
	if phys != root {
		return UnsafePath, fmt.Sprintf("workdir root %s is not a physical path (it resolves to %s)", root, phys)
	}
	err = fsx.CheckPrivate(filepath.Join(root, tasksDir), h.uid, true)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return pathProblem(err)
	}
	return "", ""
}

// readMarker reads <dir>/.kandev/owner.json into ev: a marker that is a
// link or could be another user's is a path problem, one that cannot be
// read or parsed proves nothing (MarkerDetail).
func (h *host) readMarker(dir string, ev *Evidence) {
	p := filepath.Join(dir, metaDir, markerFile)
	err := fsx.CheckPrivate(p, h.uid, false)
	var oe *fsx.OwnershipError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case errors.As(err, &oe):
		ev.PathProblem, ev.PathDetail = pathProblem(err)
		return
	case err != nil:
		ev.MarkerDetail = fmt.Sprintf("cannot read %s: %v", p, err)
		return
	}
	b, err := readSmallFile(p)
	if err != nil {
		ev.MarkerDetail = fmt.Sprintf("cannot read %s: %v", p, err)
		return
	}
	var m taskdir.Owner
	if err := json.Unmarshal(b, &m); err != nil {
		ev.MarkerDetail = fmt.Sprintf("%s is unreadable: %v", p, err)
		return
	}
	ev.Marker = &m
}

// openProven opens <root>/tasks/<name> through descriptors and checks it
// is the directory the path checks saw; otherwise ev says why and nil
// is returned.
func (h *host) openProven(root, name string, ev *Evidence) *dirFD {
	tasks, err := openDirPath(filepath.Join(root, tasksDir))
	if err != nil {
		ev.WalkError = err.Error()
		return nil
	}
	defer tasks.close()
	d, err := tasks.open(name)
	switch {
	case errors.Is(err, errMount):
		ev.Mounts = append(ev.Mounts, filepath.Join(tasks.path, name))
		return nil
	case err != nil:
		ev.WalkError = err.Error()
		return nil
	case d.identity() != ev.Identity:
		d.close()
		ev.WalkError = fmt.Sprintf("%s changed while it was being proven", d.path)
		return nil
	}
	return d
}

// walk reads the whole tree below d into ev: mount points (from the
// descriptors and, on Linux, the mount table), size and age. listed,
// when not nil, is a walk of d this call made already (listapply.go):
// it is taken as this one, the mount table read again.
func (h *host) walk(d *dirFD, ev *Evidence, listed *tree) tree {
	table, err := h.mountTable()
	if err != nil {
		ev.WalkError = err.Error()
		return tree{}
	}
	ev.Mounts = append(ev.Mounts, mountsBelow(table, d.path)...)
	tr := tree{}
	if listed != nil {
		tr = *listed
	} else if tr, err = walkTree(d); err != nil {
		ev.WalkError = err.Error()
	}
	ev.Mounts = append(ev.Mounts, tr.mounts...)
	ev.Bytes, ev.AgeSeconds, ev.OnlyDirs = tr.bytes, tr.age(time.Now()), tr.onlyDirs
	ev.proof = tr.entries
	return tr
}

// pathProblem turns a failed path check into a skip reason, by the codes
// taskdir.NotPrivate gives an ownership failure: a link or a
// non-directory is an unsafe path, an owner or mode is not private, and
// anything else could not be checked (unknown keeps).
func pathProblem(err error) (Reason, string) {
	var oe *fsx.OwnershipError
	if errors.As(err, &oe) {
		err = taskdir.NotPrivate(oe.Path, err)
	}
	var te *taskdir.Error
	if errors.As(err, &te) {
		switch te.Code {
		case taskdir.CodeNotPrivate:
			return NotPrivate, te.Message
		case taskdir.CodeUnsafePath, taskdir.CodeBadRequest:
			return UnsafePath, te.Message
		}
		return ProbeFailed, te.Message
	}
	return ProbeFailed, err.Error()
}

func identityOf(fi fs.FileInfo) Identity {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Identity{}
	}
	return Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
}
