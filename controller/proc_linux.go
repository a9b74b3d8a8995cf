package controller

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/kdlbs/kandev-exec/internal/procstat"
)

// procStat reads a process's start time (field 22 of /proc/<pid>/stat, clock
// ticks since boot) and whether it is alive; a zombie is not.
func procStat(pid int) (start uint64, alive bool, err error) {
	f, err := procstat.Of(pid)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, false, nil // ESRCH: it went away while being read
	}
	if err != nil {
		return 0, false, err
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return start, f[0] != "Z" && f[0] != "X", nil
}

// procArgs returns a process's argv.
func procArgs(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}

// groupAlive reports whether any live process is in process group pgid.
// kill(2) alone also counts zombies, which an init that never reaps (some
// containers) keeps forever, so the group is scanned when kill says yes.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	want := strconv.Itoa(pgid)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := procstat.Of(pid); err == nil && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}
