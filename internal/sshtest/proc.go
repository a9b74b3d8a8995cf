package sshtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killTree kills the descendants of root, leaves first, so that each parent is still alive to
// reap its child; killing the whole tree at once would orphan zombies on hosts whose PID 1 never
// reaps (containers). A process-group kill would not do either: sshd session children call setsid.
// Where /proc is absent it does nothing.
func killTree(root int) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		table := procTable()
		var tree []int
		for queue := table.children[root]; len(queue) > 0; queue = queue[1:] {
			tree = append(tree, queue[0])
			queue = append(queue, table.children[queue[0]]...)
		}
		if len(tree) == 0 {
			return
		}
		late := time.Now().After(deadline)
		for _, p := range tree {
			_ = syscall.Kill(p, syscall.SIGCONT) // a test may have stopped a session; it must run to reap.
			if !table.zombie[p] && (late || len(table.children[p]) == 0) {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		if late {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type processTable struct {
	children map[int][]int // by parent pid, zombies included
	zombie   map[int]bool
}

func procTable() processTable {
	t := processTable{children: map[int][]int{}, zombie: map[int]bool{}}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Format: "pid (comm) state ppid ..."; comm may contain spaces and parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			t.children[ppid] = append(t.children[ppid], pid)
			t.zombie[pid] = fields[0] == "Z"
		}
	}
	return t
}
