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

	"github.com/kdlbs/kandev-exec/internal/procstat"
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

// viewProc reads what pid holds: the working and root directory and the
// open files of each of its threads (a thread may have its own, after
// unshare, and a process whose first thread ended works on in the
// others), and its mapped files. A process that went away meanwhile
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
	leader := procPath(pid, "")
	if hide(v.readThread(leader, true, true)) {
		return v
	}
	tids, err := os.ReadDir(procPath(pid, "task"))
	if hide(err) {
		return v
	}
	var others []string
	for _, t := range tids {
		tid, err := strconv.Atoi(t.Name())
		if err != nil || tid == pid {
			continue
		}
		base := procPath(pid, "task/"+t.Name()+"/")
		others = append(others, base)
		if hide(v.readThread(base, !shares(pid, tid, kcmpFS), !shares(pid, tid, kcmpFiles))) {
			return v
		}
	}
	// The threads share one memory: its map is read once, through a
	// thread still running when the first one ended.
	var maps []byte
	for _, base := range append([]string{leader}, others...) {
		if maps, err = os.ReadFile(base + "maps"); hide(err) {
			return v
		}
		if len(maps) > 0 {
			break
		}
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

// readThread adds to v what the thread at base (/proc/<pid>/ or
// /proc/<pid>/task/<tid>/) holds: with fsToo its working and root
// directory, with files its open files. An error is one that hides the
// thread (permission).
func (v *procView) readThread(base string, fsToo, files bool) error {
	if fsToo {
		for _, l := range [][2]string{{"cwd", "working directory"}, {"root", "root directory"}} {
			if err := v.link(base, l[1], l[0]); err != nil {
				return err
			}
		}
	}
	if !files {
		return nil
	}
	fds, err := os.ReadDir(base + "fd")
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return err
		}
		return nil // the thread ended
	}
	for _, fd := range fds {
		if err := v.link(base, "open file", "fd/"+fd.Name()); err != nil {
			return err
		}
	}
	return nil
}

// link adds the /proc link base+name to v: what it names, and what it
// leads to. A name that is no path (a pipe, a socket) is no file of a
// directory. One the kernel cannot spell (a path longer than PATH_MAX)
// is still known by what it leads to; one that leads nowhere either
// hides the process, which could be working anywhere.
func (v *procView) link(base, what, name string) error {
	p := base + name
	target, err := os.Readlink(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // closed, or its thread ended
	case errors.Is(err, fs.ErrPermission):
		return err
	case err != nil:
		id, ok := statOf(p)
		if !ok {
			return fmt.Errorf("%w: cannot tell what its %s is: %v", fs.ErrPermission, what, err)
		}
		v.held = append(v.held, heldFile{what: what, path: "(a path too long to read)", id: id, hasID: true})
		return nil
	case !strings.HasPrefix(target, "/"):
		return nil
	}
	f := heldFile{what: what, path: target}
	f.id, f.hasID = statOf(p)
	v.held = append(v.held, f)
	return nil
}

// kcmp(2)'s kinds (linux/kcmp.h): whether two threads share a file
// table, or a working and root directory.
const (
	kcmpFiles = 2
	kcmpFS    = 3
)

// shares: tid shares pid's kind (kcmpFiles, kcmpFS), as kcmp(2) says; a
// kernel without it, or a thread it cannot compare, shares nothing, and
// is read as it is.
func shares(pid, tid, kind int) bool {
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(pid), uintptr(tid), uintptr(kind), 0, 0, 0)
	return errno == 0 && r == 0
}

// running: pid is a process that has not ended: it, or a thread of it,
// is not a zombie (its first thread can end while others work on).
func running(pid int) bool {
	if live(statFields(pid)) {
		return true
	}
	tids, _ := os.ReadDir(procPath(pid, "task"))
	for _, t := range tids {
		if live(statFieldsAt(procPath(pid, "task/"+t.Name()+"/stat"))) {
			return true
		}
	}
	return false
}

func live(stat []string) bool { return len(stat) > 0 && stat[0] != "Z" && stat[0] != "X" }

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
func statFields(pid int) []string { return statFieldsAt(procstat.Path(pid)) }

// statFieldsAt is statFields of the stat file at p (a thread's).
func statFieldsAt(p string) []string {
	f, _ := procstat.Read(p)
	return f
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
