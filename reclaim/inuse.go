package reclaim

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// Nothing is removed under a running process. One of the login user's
// that works in the directory (the working or root directory of any of
// its threads, a file one holds open or it has mapped, such as a program
// run from there) keeps it
// (in_use), and so does one of theirs that cannot be inspected, since it
// could be doing the same. Other users cannot reach into the directory,
// which is the login user's alone; root is not defended against. Not
// counted: this helper, a process that cannot be inspected because it
// is ending (once it has, it holds nothing) or is one of the proof's own
// git processes (gitgroups.go), and a session's controller once a drain
// sealed it, for its own session's files (it exits once they go).

// holder is a process found using a directory: what it holds there, or
// why it could not be inspected.
type holder struct {
	pid    int
	comm   string
	holds  []hold
	hidden string
}

type hold struct {
	what string // "working directory", "root directory", "open file", "mapped file"
	path string
}

// procView is one process as a reading of the process table saw it:
// every file it holds (its working and root directory, open and mapped
// files), or why it could not be inspected.
type procView struct {
	pid    int
	comm   string
	hidden string
	held   []heldFile
}

// heldFile is one file a process holds: by the name it has it, and,
// where the system tells, by what that name led to when it was read.
type heldFile struct {
	what, path string
	id         devIno
	hasID      bool
}

type devIno struct{ dev, ino uint64 }

// holding is what v holds of dir: by its name, or among ids.
func (v procView) holding(dir string, ids inodes) holder {
	p := holder{pid: v.pid, comm: v.comm, hidden: v.hidden}
	below := dir + "/" // under, without making it for each file
	for _, f := range v.held {
		path := strings.TrimSuffix(f.path, " (deleted)")
		if path == dir || strings.HasPrefix(path, below) || f.hasID && ids.has(f.id.dev, f.id.ino) {
			p.holds = append(p.holds, hold{what: f.what, path: path})
		}
	}
	return p
}

// procTable is one reading of the login user's processes (readProcs),
// asked about many directories: each is looked up in it by its names and
// inodes, instead of reading every process again for each. It tells
// about a directory only what ran when it was read, so a removal reads
// it after renaming the directories it rechecks (runBatches).
type procTable struct {
	procs   []procView
	unknown string // why the processes could not be listed
}

// using lists the processes of t holding something of dir, or ids, and
// those that could not be inspected.
func (t *procTable) using(dir string, ids inodes) ([]holder, string) {
	var out []holder
	for _, v := range t.procs {
		if p := v.holding(dir, ids); p.hidden != "" || len(p.holds) > 0 {
			out = append(out, p)
		}
	}
	return out, t.unknown
}

// processesUsing reads the process table now and looks dir up in it.
func processesUsing(ctx context.Context, dir string, uid int, ids inodes) ([]holder, string) {
	return readProcs(ctx, uid).using(dir, ids)
}

// procsRecent is the process table the proofs of a batch share, read
// again once it is older than proofTableAge: the proof's own in-use
// check only spares the removal's, which reads the table again after the
// renames, but a plan that says remove should not rest on a reading
// taken long before its directory was walked.
type procsRecent struct {
	mu sync.Mutex
	t  *procTable
	at time.Time
}

// proofTableAge bounds how old a proof's reading of the process table
// may be: a second is a few directories' proofs.
const proofTableAge = time.Second

func (p *procsRecent) get(ctx context.Context, uid int) *procTable {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t == nil || time.Since(p.at) > proofTableAge {
		p.t, p.at = readProcs(ctx, uid), time.Now()
	}
	return p.t
}

// inodes are the entries of a directory as its proof walked them, so
// that a process holding one by another path (a bind mount of it
// elsewhere, a container's view of it) is found too.
type inodes struct {
	dev uint64
	ino map[uint64]bool
}

func inodesOf(ev *Evidence) inodes {
	if ev == nil { // nothing proven (a helper version): paths alone
		return inodes{}
	}
	ids := inodes{dev: ev.Identity.Dev, ino: make(map[uint64]bool, len(ev.proof))}
	for _, e := range ev.proof {
		ids.ino[e.ino] = true
	}
	return ids
}

func (ids inodes) has(dev, ino uint64) bool {
	return len(ids.ino) > 0 && dev == ids.dev && ids.ino[ino]
}

// inUse names the processes using dir, proven as ev (nil when nothing
// of it was proven, such as a helper version), whose sessions'
// controllers were started in the task directory ran (dir itself, or its
// name before the removal renamed it); unknown says why the host cannot
// tell.
func (h *host) inUse(ctx context.Context, dir, ran string, ev *Evidence) (users []string, unknown string) {
	return h.inUseBy(readProcs(ctx, h.uid), dir, ran, ev)
}

// inUseBy is inUse as procs, read before, saw the processes; whether
// one found there still runs, and what a child of this helper holds once
// it exec'd, is asked now.
func (h *host) inUseBy(procs *procTable, dir, ran string, ev *Evidence) (users []string, unknown string) {
	found, unknown := procs.using(dir, inodesOf(ev))
	if len(found) == 0 {
		return nil, unknown
	}
	sealed := sealedControllers(dir, ran)
	if ev != nil {
		// A controller the proof saw sealed is still known by its start
		// time at the recheck: the removal's rename is what ends it, and
		// one ending has no argv left to be recognised by.
		for pid, c := range ev.sealed {
			if _, ok := sealed[pid]; !ok {
				sealed[pid] = c
			}
		}
		ev.sealed = sealed
	}
	for _, p := range found {
		if p = h.afterExec(p, dir, ev); p.hidden == "" && len(p.holds) == 0 {
			continue
		}
		if p.hidden != "" {
			// The kernel hides an exiting process: once it has ended
			// (a zombie too) it holds nothing. Asked before whether it
			// runs, so that a git ending meanwhile is not left over as
			// a stranger's.
			if !h.gits.own(p.pid) && running(p.pid) {
				users = append(users, fmt.Sprintf("pid %d (%s), which cannot be inspected: %s", p.pid, printable(p.comm), p.hidden))
			}
			continue
		}
		// A sealed controller holds its own session's files until it has
		// exited; a process that ended since it was inspected holds
		// nothing.
		if sealed.ownFiles(p, dir) || !running(p.pid) {
			continue
		}
		first := p.holds[0]
		rel := first.path // by another path, named as the process has it
		if under(rel, dir) {
			rel, _ = filepath.Rel(dir, first.path)
		}
		users = append(users, fmt.Sprintf("pid %d (%s): its %s %s", p.pid, printable(p.comm), first.what, printable(rel)))
	}
	return users, unknown
}

// sealedController is a session's controller that a drain sealed, as it
// was seen running: its session's name and its start time, by which it
// is told from a process that took its pid after it.
type sealedController struct {
	session string
	start   uint64
}

// sealedSet maps the pid of each sealed controller of a directory's
// sessions to it.
type sealedSet map[int]sealedController

// sealedControllers are the sealed controllers of dir's sessions that
// run now.
func sealedControllers(dir, ran string) sealedSet {
	out := sealedSet{}
	sessions := filepath.Join(dir, metaDir, taskdir.SessionsDir)
	ents, err := os.ReadDir(sessions)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if e.Type() != fs.ModeDir {
			continue
		}
		files := filepath.Join(sessions, e.Name())
		if pid, start := controller.SealedController(files, filepath.Join(ran, metaDir, taskdir.SessionsDir, e.Name())); pid > 0 {
			out[pid] = sealedController{session: e.Name(), start: start}
		}
	}
	return out
}

// ownFiles: p is one of s, still the same process, and holds nothing of
// dir outside its own session's directory.
func (s sealedSet) ownFiles(p holder, dir string) bool {
	c, ok := s[p.pid]
	return ok && allUnder(p.holds, filepath.Join(dir, metaDir, taskdir.SessionsDir, c.session)) &&
		controller.Incarnation(p.pid, c.start)
}

func allUnder(holds []hold, dir string) bool {
	for _, h := range holds {
		if !under(h.path, dir) {
			return false
		}
	}
	return true
}

// under reports whether p (as the kernel names it, a deleted file's name
// ending in " (deleted)") is dir or below it.
func under(p, dir string) bool {
	p = strings.TrimSuffix(p, " (deleted)")
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// printable replaces what a terminal would interpret in a name another
// process chose.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return '?'
		}
		return r
	}, s)
}
