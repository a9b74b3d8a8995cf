// Package procstat reads what /proc/<pid>/stat says of a Linux process:
// its state, parent, group and start time. It is the one parser of that
// file, for the controller's and the reclaim proof's process checks and
// for the state store's claim holders.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Path is the stat file of process pid.
func Path(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/stat" }

// Read returns the fields of the stat file at path (a process's, or a
// thread's under task/) after the command name, which may hold spaces
// and parentheses: f[0] is field 3, the state; f[1] the parent, f[2] the
// process group, f[19] the start time.
func Read(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed %s", path)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("malformed %s", path)
	}
	return f, nil
}

// Of is Read of process pid's stat file.
func Of(pid int) ([]string, error) { return Read(Path(pid)) }

// Start is when process pid started, in clock ticks since boot (field
// 22): with the pid, it names one process, not another that takes the
// pid once it has ended. false for a process gone or unreadable.
func Start(pid int) (uint64, bool) {
	f, err := Of(pid)
	if err != nil {
		return 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, err == nil
}
