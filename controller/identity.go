package controller

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Identity is what can be proved about a recorded controller without its
// token, for processes we cannot reach over the API.
type Identity struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	Alive     bool   `json:"alive"`
	// Ours: alive, started at the recorded time, and its argv names the
	// controller and this session dir. Only then may it be signalled.
	Ours bool `json:"ours"`
	// Orphan is the agent's process group when the controller is gone but
	// status.json left the agent running and the group still has live
	// members: it runs unsupervised. Nothing proves it is ours, so it is
	// only reported, never signalled.
	Orphan int `json:"orphan,omitempty"`
}

// killMargin is added to the session's stop grace: the time a controller
// gets after SIGTERM to stop its agent and exit before it is SIGKILLed.
const killMargin = 5 * time.Second

// Probe reads controller.pid and checks the process against recordedStart.
// A missing pid file is an error wrapping os.ErrNotExist.
func Probe(sessionDir string, recordedStart uint64) (Identity, error) {
	dir := filepath.Clean(sessionDir)
	pid, err := readPID(dir)
	if err != nil {
		return Identity{}, err
	}
	id, err := identify(pid, dir, recordedStart)
	// Without a recorded start time a live pid may be ours: no verdict.
	if err == nil && (!id.Alive || recordedStart != 0 && !id.Ours) {
		id.Orphan = orphanGroup(dir)
	}
	return id, err
}

// orphanGroup is the agent's process group if status.json says the agent
// never ended and the group still has live members.
func orphanGroup(dir string) int {
	st, err := ReadStatusFile(dir)
	if err != nil || st.AgentPID <= 0 || st.EndedAt != nil || !groupAlive(st.AgentPID) {
		return 0
	}
	return st.AgentPID
}

// KillIfOurs stops the recorded controller only if Probe proves it ours:
// SIGTERM to its process group (it then stops its agent gracefully), and
// SIGKILL if it is still ours after the session's stop grace plus a margin.
// Anything else is never signalled. It returns the identity as left.
func KillIfOurs(sessionDir string, recordedStart uint64) (Identity, error) {
	dir := filepath.Clean(sessionDir)
	id, err := Probe(dir, recordedStart)
	if err != nil || !id.Ours {
		return id, err
	}
	if err := signalController(id.PID, syscall.SIGTERM); err != nil {
		return id, err
	}
	grace := 10 * time.Second
	if st, err := ReadStatusFile(dir); err == nil {
		if d, err := time.ParseDuration(st.StopGrace); err == nil {
			grace = d
		}
	}
	if id, err = waitNotOurs(id.PID, dir, recordedStart, grace+killMargin); err != nil || !id.Ours {
		return id, err
	}
	if err := signalController(id.PID, syscall.SIGKILL); err != nil {
		return id, err
	}
	return waitNotOurs(id.PID, dir, recordedStart, killMargin)
}

// waitNotOurs polls until the process no longer proves ours or d passes.
func waitNotOurs(pid int, dir string, recordedStart uint64, d time.Duration) (Identity, error) {
	deadline := time.Now().Add(d)
	for {
		id, err := identify(pid, dir, recordedStart)
		if err != nil || !id.Ours || time.Now().After(deadline) {
			return id, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signalController signals the controller's process group (it is a session
// leader when started by Start), or just the pid if it leads no group.
func signalController(pid int, sig syscall.Signal) error {
	target := pid
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		target = -pid
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal controller %d: %w", pid, err)
	}
	return nil
}

func identify(pid int, dir string, recordedStart uint64) (Identity, error) {
	id := Identity{PID: pid}
	start, alive, err := procStat(pid)
	if err != nil || !alive {
		return id, err
	}
	id.StartTime, id.Alive = start, true
	if recordedStart == 0 || start != recordedStart {
		return id, nil
	}
	args, err := procArgs(pid)
	if err != nil {
		// It exited between the two reads, or is not readable: not proved.
		return id, nil
	}
	id.Ours = isControllerArgs(args, dir)
	return id, nil
}

// SealedController is the pid and start time of a session's controller
// while it runs sealed by a drain, its agent stopped for good; pid 0
// otherwise. files is where the session's directory is now, ran the one
// the controller was started with: they differ once the task directory
// is renamed for its removal. Only a controller that runs can be told
// apart from another process: one ending has no argv left to read, so a
// caller that must recognise it then asks Incarnation of what this said
// before.
func SealedController(files, ran string) (pid int, start uint64) {
	pid, err := readPID(files)
	if err != nil {
		return 0, 0
	}
	st, err := ReadStatusFile(files)
	if err != nil || !st.Sealed || st.ControllerPID != pid {
		return 0, 0
	}
	start, alive, err := procStat(pid)
	if err != nil || !alive {
		return 0, 0
	}
	if args, err := procArgs(pid); err != nil || !isControllerArgs(args, filepath.Clean(ran)) {
		return 0, 0
	}
	return pid, start
}

// Incarnation reports whether pid is still the process that started at
// start: running, ending or ended unreaped, and not another that took
// its pid since.
func Incarnation(pid int, start uint64) bool {
	now, _, err := procStat(pid)
	return err == nil && start != 0 && now == start
}

// isControllerArgs matches whole arguments, so that a session dir that is a
// prefix of another does not match it.
func isControllerArgs(args []string, dir string) bool {
	return slices.Contains(args, "controller") &&
		(slices.Contains(args, dir) || slices.Contains(args, "--session-dir="+dir))
}

func readPID(dir string) (int, error) { return readNumber(dir, pidFile) }
