//go:build !linux

package reclaim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// lsofWhat names lsof's descriptor field (-F f) as a hold.
var lsofWhat = map[string]string{"cwd": "working directory", "rtd": "root directory", "txt": "mapped file", "mem": "mapped file"}

// running: pid is a process that has not ended (launchd reaps at once).
func running(pid int) bool { return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// afterExec: lsof names no parent, and a child of this helper is taken as
// any other process.
func (h *host) afterExec(p holder, _ string, _ *Evidence) holder { return p }

// procGroup tells nothing here: lsof hides no process it lists, so no
// process needs telling apart as the proof's own.
func procGroup(int) (ppid, pgid int, ok bool) { return 0, 0, false }

// readProcs asks lsof (there is no /proc here) what the processes of
// uid hold: working and root directories, open and mapped files, by
// name. Without lsof nothing can be told, and the caller keeps the
// directory.
func readProcs(ctx context.Context, uid int) *procTable {
	lsof, err := exec.LookPath("lsof")
	if err != nil {
		lsof = "/usr/sbin/lsof"
		if _, err := os.Stat(lsof); err != nil {
			return &procTable{unknown: "this host has no lsof to tell which processes use it"}
		}
	}
	out, err := exec.CommandContext(ctx, lsof, "-nP", "-w", "-u", strconv.Itoa(uid), "-F", "pcfn").Output()
	if err != nil && len(out) == 0 {
		return &procTable{unknown: fmt.Sprintf("lsof failed: %v", err)}
	}
	self := os.Getpid()
	var found []procView
	what := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		v := line[1:]
		if line[0] == 'p' {
			pid, _ := strconv.Atoi(v)
			found = append(found, procView{pid: pid})
			continue
		}
		if len(found) == 0 {
			continue
		}
		cur := &found[len(found)-1]
		switch line[0] {
		case 'c':
			cur.comm = v
		case 'f':
			what = lsofWhat[v]
			if what == "" {
				what = "open file"
			}
		case 'n':
			if cur.pid != self {
				cur.held = append(cur.held, heldFile{what: what, path: v})
			}
		}
	}
	t := &procTable{}
	for _, p := range found {
		if len(p.held) > 0 {
			t.procs = append(t.procs, p)
		}
	}
	return t
}
