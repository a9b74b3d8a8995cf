package controller

import (
	"bytes"
	"os"
	"strconv"

	"github.com/kdlbs/kandev-exec/internal/procstat"
)

// groupMembers lists the live processes of process group pgid with their
// names (the kernel's comm, never the arguments, which may carry secrets).
func groupMembers(pgid int) []Process {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := strconv.Itoa(pgid)
	var ps []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procstat.Of(pid)
		if err != nil || f[2] != want || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ps = append(ps, Process{PID: pid, Name: procName(pid)})
	}
	return ps
}

// procName is the command name between the parentheses of /proc/<pid>/stat.
func procName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return ""
	}
	return string(b[i+1 : j])
}
