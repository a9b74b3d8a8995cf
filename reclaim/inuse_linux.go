package reclaim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// opaque: processes of the login user that the kernel keeps from them
// and that never work in a task directory: OpenSSH's per-connection
// processes, which drop to the user after starting as root, and
// ssh-agent, which makes itself unreadable and works in /.
var opaque = map[string]bool{"sshd": true, "sshd-session": true, "ssh-agent": true}

// processesUsing reads /proc: the working and root directory, open
// descriptors and mapped files of each process of uid, below dir by
// their name or among ids by their device and inode.
func processesUsing(_ context.Context, dir string, uid int, ids inodes) ([]holder, string) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Sprintf("cannot list the processes: %v", err)
	}
	self := os.Getpid()
	mine := ancestors(self)
	var out []holder
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || !ownedBy(pid, uid) {
			continue
		}
		p := inspectProc(pid, dir, ids)
		// The init process, and the connection this helper serves,
		// were there before any task.
		if p.hidden != "" && (pid == 1 || mine[pid] || opaque[p.comm]) {
			continue
		}
		if p.hidden != "" || len(p.holds) > 0 {
			out = append(out, p)
		}
	}
	return out, ""
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

// inspectProc finds what pid holds of dir. A process that went away
// meanwhile holds nothing.
func inspectProc(pid int, dir string, ids inodes) holder {
	p := holder{pid: pid}
	if b, err := os.ReadFile(procPath(pid, "comm")); err == nil {
		p.comm = strings.TrimSuffix(string(b), "\n")
	}
	hide := func(err error) bool {
		if errors.Is(err, fs.ErrPermission) {
			p.hidden = err.Error()
			return true
		}
		return false
	}
	held := func(what, path string) {
		p.holds = append(p.holds, hold{what: what, path: strings.TrimSuffix(path, " (deleted)")})
	}
	// link is a /proc link of pid: what it names, by path or, for a path
	// elsewhere, by what the link leads to.
	link := func(what, name string) error {
		target, err := os.Readlink(procPath(pid, name))
		switch {
		case err != nil:
			return err
		case under(target, dir):
			held(what, target)
		case strings.HasPrefix(target, "/"):
			if st, ok := statOf(procPath(pid, name)); ok && ids.has(st.dev, st.ino) {
				held(what, target)
			}
		}
		return nil
	}
	for _, l := range [][2]string{{"cwd", "working directory"}, {"root", "root directory"}} {
		if hide(link(l[1], l[0])) {
			return p
		}
	}
	fds, err := os.ReadDir(procPath(pid, "fd"))
	if hide(err) {
		return p
	}
	for _, fd := range fds {
		if hide(link("open file", "fd/"+fd.Name())) {
			return p
		}
	}
	maps, err := os.ReadFile(procPath(pid, "maps"))
	if hide(err) {
		return p
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
			if under(path, dir) || mapsInode(ids, f[3], f[4]) {
				held("mapped file", path)
			}
		}
	}
	return p
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

type devIno struct{ dev, ino uint64 }

// statOf is what a /proc link leads to (a process that went away, or a
// descriptor closed meanwhile, leads nowhere).
func statOf(p string) (devIno, bool) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return devIno{}, false
	}
	return devIno{uint64(st.Dev), st.Ino}, true
}

// mapsInode: a maps line's device ("major:minor", hex) and inode are
// among ids.
func mapsInode(ids inodes, dev, ino string) bool {
	maj, min, ok := strings.Cut(dev, ":")
	if !ok {
		return false
	}
	ma, err1 := strconv.ParseUint(maj, 16, 32)
	mi, err2 := strconv.ParseUint(min, 16, 32)
	n, err3 := strconv.ParseUint(ino, 10, 64)
	return err1 == nil && err2 == nil && err3 == nil && ids.has(unix.Mkdev(uint32(ma), uint32(mi)), n)
}
