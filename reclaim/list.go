package reclaim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// ListRequest asks what is under <root>/tasks/, for the orphan planner.
type ListRequest struct {
	Root        string `json:"root"` // absolute or ~-prefixed
	Parallelism int    `json:"parallelism,omitempty"`
	// Apply: remove, once listed, what it selects (listapply.go).
	Apply *ListApply `json:"apply,omitempty"`
}

// Listing is every entry under <root>/tasks/, sorted by name.
type Listing struct {
	Root    string  `json:"root"` // physical, as the checks resolved it
	Entries []Entry `json:"entries"`
	// Applied: with ListRequest.Apply, one result per directory it
	// tried to remove.
	Applied []Result `json:"applied,omitempty"`
}

// Entry is one name under tasks/ as found: never probed with git, never
// changed.
type Entry struct {
	Name string `json:"name"`
	// Dir is the task directory name it is, or was before a removal of
	// ours was cut short (Interrupted); "" when Name is neither.
	Dir         string `json:"dir,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	// Problem keeps it whatever its marker says: unsafe_path (a bad
	// name, a link, not a directory), not_private, mount_point or
	// probe_failed (it could not be read).
	Problem      Reason         `json:"problem,omitempty"`
	Detail       string         `json:"detail,omitempty"`
	Marker       *taskdir.Owner `json:"marker,omitempty"`
	MarkerDetail string         `json:"marker_detail,omitempty"`
	Identity     Identity       `json:"identity"`
	Bytes        int64          `json:"bytes"`
	AgeSeconds   int64          `json:"age_seconds"`
	OnlyDirs     bool           `json:"only_dirs,omitempty"`
	// NoCheckout: its top is not a git checkout, so no proof can pass it;
	// Holds names what its top holds besides .kandev/ (the first few).
	NoCheckout bool     `json:"no_checkout,omitempty"`
	Holds      []string `json:"holds,omitempty"`
	// Running are the session controllers that run in it.
	Running []controller.Running `json:"running,omitempty"`

	// walked is the walk that found it, kept for the removal a listing
	// may make (ListRequest.Apply, listapply.go).
	walked *tree
}

// holdsShown bounds the names an entry's Holds lists.
const holdsShown = 10

// List reads <root>/tasks/. The root and tasks/ must be the login
// user's alone (a *taskdir.Error otherwise); each entry is then checked
// on its own and described, whatever it is. A root that does not exist
// holds nothing: an empty listing.
func List(ctx context.Context, req ListRequest) (*Listing, error) {
	var keep func(Entry, tree) bool
	if req.Apply != nil {
		keep = keptForApply()
	}
	return list(ctx, req, keep)
}

// list is List keeping the walks keep (nil: none) says the listing's
// removals may take.
func list(ctx context.Context, req ListRequest, keep func(Entry, tree) bool) (*Listing, error) {
	root, err := taskdir.PrivateRoot(req.Root)
	if err != nil {
		if abs, absent := taskdir.AbsentRoot(req.Root); absent {
			return &Listing{Root: abs, Entries: []Entry{}}, nil
		}
		return nil, err
	}
	h := newHost(0)
	l := &Listing{Root: root, Entries: []Entry{}}
	tasks := filepath.Join(root, tasksDir)
	if err := fsx.CheckPrivate(tasks, h.uid, true); errors.Is(err, fs.ErrNotExist) {
		return l, nil
	} else if err != nil {
		return nil, taskdir.NotPrivate(tasks, err)
	}
	d, err := openDirPath(tasks)
	if err != nil {
		return nil, &taskdir.Error{Code: taskdir.CodeIO, Message: err.Error()}
	}
	names, err := d.names()
	d.close()
	if err != nil {
		return nil, &taskdir.Error{Code: taskdir.CodeIO, Message: err.Error()}
	}
	sort.Strings(names)
	l.Entries = make([]Entry, len(names))
	forEach(len(names), parallelism(req.Parallelism), func(i int) {
		if ctx.Err() != nil {
			l.Entries[i] = Entry{Name: names[i], Problem: ProbeFailed, Detail: "the listing's time ran out: " + ctx.Err().Error()}
			return
		}
		l.Entries[i] = h.listEntry(root, names[i], keep)
	})
	return l, nil
}

// topNames lists the walk's entries at its top but .kandev/, the first
// holdsShown of them, then how many more.
func topNames(tr tree) []string {
	var names []string
	n := 0
	for _, e := range tr.entries {
		if e.rel == "." || e.rel == metaDir || strings.Contains(e.rel, "/") {
			continue
		}
		if n++; n <= holdsShown {
			names = append(names, e.rel)
		}
	}
	if n > holdsShown {
		names = append(names, fmt.Sprintf("and %d more", n-holdsShown))
	}
	return names
}

func (h *host) listEntry(root, name string, keep func(Entry, tree) bool) Entry {
	e := Entry{Name: name}
	switch inner, trash := strings.CutPrefix(name, trashPrefix); {
	case taskdir.ValidTaskDir(name):
		e.Dir = name
	case trash && taskdir.ValidTaskDir(inner):
		e.Dir, e.Interrupted = inner, true
	default:
		e.Problem = UnsafePath
		e.Detail = fmt.Sprintf("%q is not a task directory name, so kandev-exec did not make it", name)
		return e
	}
	var ev Evidence
	tr, walked := h.inspect(root, name, &ev)
	if walked && !e.Interrupted && (len(tr.checkouts) == 0 || tr.checkouts[0] != ".") {
		e.NoCheckout, e.Holds = true, topNames(tr)
	}
	e.Marker, e.MarkerDetail, e.Identity = ev.Marker, ev.MarkerDetail, ev.Identity
	e.Bytes, e.AgeSeconds, e.OnlyDirs = ev.Bytes, ev.AgeSeconds, ev.OnlyDirs
	switch path := filepath.Join(root, tasksDir, name); {
	case ev.PathProblem != "":
		e.Problem, e.Detail = ev.PathProblem, ev.PathDetail
	case len(ev.Mounts) > 0:
		e.Problem, e.Detail = MountPoint, fmt.Sprintf("%s holds a mount point (%s)", path, examples(ev.Mounts))
	case ev.WalkError != "":
		e.Problem, e.Detail = ProbeFailed, ev.WalkError
	}
	if e.Problem == "" && !e.Interrupted {
		e.Running = controller.RunningIn(filepath.Join(root, tasksDir, name))
	}
	if walked && keep != nil && keep(e, tr) {
		e.walked = &tr
	}
	return e
}
