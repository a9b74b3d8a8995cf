package controller

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// Running is a controller running in one of a task directory's session
// directories, proved to be that directory's controller (its argv names
// it) at StartTime: what a stop must find again before it signals.
type Running struct {
	Session   string    `json:"session"` // the session directory's name
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"`
	StartedAt time.Time `json:"started_at"` // as its status.json says; zero when unreadable
	Command   string    `json:"command"`    // the agent's command line, as its process shows it
}

// RunningIn lists the controllers running in taskDir's session
// directories. Nothing is signalled; a process that does not prove to be
// a directory's controller is not listed.
func RunningIn(taskDir string) []Running {
	base := taskdir.SessionsPath(taskDir)
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []Running
	for _, d := range entries {
		if !d.IsDir() {
			continue // a link or a file is no session directory of ours
		}
		dir := filepath.Join(base, d.Name())
		pid, err := readPID(dir)
		if err != nil {
			continue
		}
		start, alive, err := procStat(pid)
		if err != nil || !alive {
			continue
		}
		if id, err := identify(pid, dir, start); err != nil || !id.Ours {
			continue
		}
		r := Running{Session: d.Name(), PID: pid, StartTime: start}
		if st, err := ReadStatusFile(dir); err == nil {
			r.StartedAt = st.StartedAt
			if args, err := procArgs(st.AgentPID); err == nil && st.AgentPID > 0 {
				r.Command = agentCommand(args)
			}
		}
		out = append(out, r)
	}
	return out
}

// agentCommand is the command a login shell runs (`sh -l -c CMD`), or
// the whole argv of anything else.
func agentCommand(args []string) string {
	if len(args) >= 4 && args[1] == "-l" && args[2] == "-c" {
		return args[3]
	}
	return strings.Join(args, " ")
}
