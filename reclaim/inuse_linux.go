package reclaim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// opaque: processes of the login user that the kernel keeps from them
// and that never work in a task directory: OpenSSH's per-connection
// processes, which drop to the user after starting as root, and
// ssh-agent, which makes itself unreadable and works in /.
var opaque = map[string]bool{"sshd": true, "sshd-session": true, "ssh-agent": true}

// readProcs reads /proc once: the working and root directory, open
// descriptors and mapped files of each process of uid, each by its name
// and, where it leads to a file, by that file's device and inode. The
// processes are read on every CPU: a batch's removals wait for the
// reading, and a host runs hundreds of processes.
func readProcs(_ context.Context, uid int) *procTable {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return &procTable{unknown: fmt.Sprintf("cannot list the processes: %v", err)}
	}
	self := os.Getpid()
	mine := ancestors(self)
	views := make([]*procView, len(ents))
	forEach(len(ents), runtime.NumCPU(), func(i int) {
		pid, err := strconv.Atoi(ents[i].Name())
		if err != nil || pid == self || !ownedBy(pid, uid) {
			return
		}
		v := viewProc(pid)
		// The init process, and the connection this helper serves,
		// were there before any task.
		if v.hidden != "" && (pid == 1 || mine[pid] || opaque[v.comm]) {
			return
		}
		if v.hidden != "" || len(v.held) > 0 {
			views[i] = &v
		}
	})
	t := &procTable{}
	for _, v := range views {
		if v != nil {
			t.procs = append(t.procs, *v)
		}
	}
	return t
}

// afterExec is p as it is once no git of this helper is between fork and
// exec: a child of this helper found then holds what the helper held
// (its descriptors, its working directory) and is inspected again. What
// it holds after that is its own.
func (h *host) afterExec(p holder, dir string, ev *Evidence) holder {
	if ppid, _, ok := procGroup(p.pid); !ok || ppid != os.Getpid() {
		return p
	}
	h.gits.settled()
	return inspectProc(p.pid, dir, inodesOf(ev))
}

func procPath(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// ownedBy: the process's real or effective uid is uid.
func ownedBy(pid, uid int) bool {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return false // gone
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			want := strconv.Itoa(uid)
			return len(f) >= 2 && (f[0] == want || f[1] == want)
		}
	}
	return false
}

// inspectProc finds what pid holds of dir, now.
func inspectProc(pid int, dir string, ids inodes) holder { return viewProc(pid).holding(dir, ids) }

// viewProc reads what pid holds. A process that went away meanwhile
// holds nothing.
func viewProc(pid int) procView {
	v := procView{pid: pid}
	if b, err := os.ReadFile(procPath(pid, "comm")); err == nil {
		v.comm = strings.TrimSuffix(string(b), "\n")
	}
	hide := func(err error) bool {
		if errors.Is(err, fs.ErrPermission) {
			v.hidden = err.Error()
			return true
		}
		return false
	}
	// link is a /proc link of pid: what it names, and what it leads to.
	// A name that is no path (a pipe, a socket) is no file of a directory.
	link := func(what, name string) error {
		target, err := os.Readlink(procPath(pid, name))
		if err != nil || !strings.HasPrefix(target, "/") {
			return err
		}
		f := heldFile{what: what, path: target}
		f.id, f.hasID = statOf(procPath(pid, name))
		v.held = append(v.held, f)
		return nil
	}
	for _, l := range [][2]string{{"cwd", "working directory"}, {"root", "root directory"}} {
		if hide(link(l[1], l[0])) {
			return v
		}
	}
	fds, err := os.ReadDir(procPath(pid, "fd"))
	if hide(err) {
		return v
	}
	for _, fd := range fds {
		if hide(link("open file", "fd/"+fd.Name())) {
			return v
		}
	}
	maps, err := os.ReadFile(procPath(pid, "maps"))
	if hide(err) {
		return v
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// address perms offset dev inode path
		f := strings.SplitN(sc.Text(), " ", 6)
		if len(f) < 6 {
			continue
		}
		if path := strings.TrimLeft(f[5], " "); !seen[path] {
			seen[path] = true
			id, ok := mapsID(f[3], f[4])
			v.held = append(v.held, heldFile{what: "mapped file", path: path, id: id, hasID: ok})
		}
	}
	return v
}

// running: pid is a process that has not ended (a zombie has).
func running(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// ancestors are pid's parent, its parent's, and so on up to the init.
func ancestors(pid int) map[int]bool {
	out := map[int]bool{}
	for pid > 1 {
		ppid, _, ok := procGroup(pid)
		if !ok || out[ppid] {
			break
		}
		pid = ppid
		out[pid] = true
	}
	return out
}

// procGroup is pid's parent and process group.
func procGroup(pid int) (ppid, pgid int, ok bool) {
	f := statFields(pid)
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	return ppid, pgid, err1 == nil && err2 == nil
}

// statFields are the fields of /proc/<pid>/stat after the command's
// name (which may hold spaces and parentheses): state, ppid, pgrp, ...;
// nil for a process gone.
func statFields(pid int) []string {
	b, err := os.ReadFile(procPath(pid, "stat"))
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// statOf is what a /proc link leads to (a process that went away, or a
// descriptor closed meanwhile, leads nowhere).
func statOf(p string) (devIno, bool) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return devIno{}, false
	}
	return devIno{uint64(st.Dev), st.Ino}, true
}

// mapsID is a maps line's device ("major:minor", hex) and inode.
func mapsID(dev, ino string) (devIno, bool) {
	maj, min, ok := strings.Cut(dev, ":")
	if !ok {
		return devIno{}, false
	}
	ma, err1 := strconv.ParseUint(maj, 16, 32)
	mi, err2 := strconv.ParseUint(min, 16, 32)
	n, err3 := strconv.ParseUint(ino, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return devIno{}, false
	}
	return devIno{unix.Mkdev(uint32(ma), uint32(mi)), n}, true
}
