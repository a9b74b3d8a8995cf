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
)

// opaque: processes of the login user that the kernel keeps from them
// and that never work in a task directory: OpenSSH's per-connection
// processes, which drop to the user after starting as root, and
// ssh-agent, which makes itself unreadable and works in /.
var opaque = map[string]bool{"sshd": true, "sshd-session": true, "ssh-agent": true}

// processesUsing reads /proc: the working and root directory, open
// descriptors and mapped files of each process of uid.
func processesUsing(_ context.Context, dir string, uid int) ([]holder, string) {
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
		p := inspectProc(pid, dir)
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
func inspectProc(pid int, dir string) holder {
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
	add := func(what, path string) {
		if under(path, dir) {
			p.holds = append(p.holds, hold{what: what, path: strings.TrimSuffix(path, " (deleted)")})
		}
	}
	for _, l := range [][2]string{{"cwd", "working directory"}, {"root", "root directory"}} {
		target, err := os.Readlink(procPath(pid, l[0]))
		if hide(err) {
			return p
		}
		add(l[1], target)
	}
	fds, err := os.ReadDir(procPath(pid, "fd"))
	if hide(err) {
		return p
	}
	for _, fd := range fds {
		target, err := os.Readlink(procPath(pid, "fd/"+fd.Name()))
		if hide(err) {
			return p
		}
		add("open file", target)
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
			add("mapped file", path)
		}
	}
	return p
}

// running: pid is a process that has not ended (a zombie has).
func running(pid int) bool {
	b, err := os.ReadFile(procPath(pid, "stat"))
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// ancestors are pid's parent, its parent's, and so on up to the init.
func ancestors(pid int) map[int]bool {
	out := map[int]bool{}
	for pid > 1 {
		b, err := os.ReadFile(procPath(pid, "stat"))
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			break
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			break
		}
		if pid, err = strconv.Atoi(f[1]); err != nil || out[pid] {
			break
		}
		out[pid] = true
	}
	return out
}
