package reclaim

import (
	"os"
	"os/exec"
	"sync"
)

// The proof's own git processes are the login user's, so the in-use
// check finds them, each working for the proof of another directory.
// The kernel hides a process's descriptors while it ends (from the
// moment it lets go of its memory), and one that cannot be inspected is
// counted as using the directory: a proof running beside a removal
// would keep it for nothing. So a hidden process is known as the proof's own by its
// process group, which the helper made for it (taskdir.GroupCommand),
// and only while that git runs; a git is never between its start and
// its group being known while that is asked.

// gitGroups are the process groups of the proof's git processes that
// run now.
type gitGroups struct {
	starting sync.RWMutex // held to read while a git starts; own holds it to write
	mu       sync.Mutex
	running  map[int]bool // group ids, their leaders' pids
}

// run starts cmd, which makes a process group of its own, and waits for
// it, its group known meanwhile.
func (g *gitGroups) run(cmd *exec.Cmd) error {
	g.starting.RLock()
	err := cmd.Start()
	if err == nil {
		g.mu.Lock()
		if g.running == nil {
			g.running = map[int]bool{}
		}
		g.running[cmd.Process.Pid] = true
		g.mu.Unlock()
	}
	g.starting.RUnlock()
	if err != nil {
		return err
	}
	defer func() {
		g.mu.Lock()
		delete(g.running, cmd.Process.Pid)
		g.mu.Unlock()
	}()
	return cmd.Wait()
}

// settled waits until no git is between its fork and its exec: a child
// of this helper in that window is a copy of the helper, holding every
// descriptor the helper holds (such as the lock of a directory another
// worker proves) until the exec closes them.
func (g *gitGroups) settled() {
	g.starting.Lock()
	g.starting.Unlock()
}

// own reports whether pid is one of the proof's git processes, or one
// such a git started: in a group of theirs, and the child of this helper
// or of another process of that group (so never a process that took the
// pid of one that ended).
func (g *gitGroups) own(pid int) bool {
	g.starting.Lock()
	defer g.starting.Unlock()
	ppid, pgid, ok := procGroup(pid)
	g.mu.Lock()
	ok = ok && g.running[pgid]
	g.mu.Unlock()
	if !ok {
		return false
	}
	if ppid == os.Getpid() {
		return true
	}
	_, parentGroup, ok := procGroup(ppid)
	return ok && parentGroup == pgid
}
