package controller

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/redact"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// killWait is how long a SIGKILLed agent gets to be reaped.
const killWait = 5 * time.Second

// groupPoll is how often the agent's process group is checked for members
// once the agent has been reaped (see watchGroup).
const groupPoll = 250 * time.Millisecond

// startAgent runs `<shell> -l -c <command>` in the task dir, in its own
// process group, with stdout and stderr appended to controller.log, the
// request's redact values masked.
func (s *server) startAgent() error {
	cmd := exec.Command(s.req.Shell, "-l", "-c", s.req.Command)
	cmd.Dir = s.req.TaskDir
	cmd.Env = taskdir.Environ(s.req.Env)
	// Our own pipe rather than an io.Writer, so Wait returns when the agent
	// exits even if something it left behind still holds the output open.
	out, w, err := os.Pipe()
	if err == nil {
		cmd.Stdout, cmd.Stderr = w, w
		// Its own group, so stop reaches everything it spawned.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err = cmd.Start()
		w.Close()
		if err != nil {
			out.Close()
		}
	}
	if err != nil {
		err = fmt.Errorf("start agent: %w", err)
		s.event("%v", err)
		s.mu.Lock()
		now := time.Now().UTC().Truncate(time.Second) // recorded and shown to the second
		s.st.State, s.st.Error, s.st.EndedAt = StateExited, err.Error(), &now
		_ = s.writeStatusLocked()
		s.mu.Unlock()
		return err
	}
	s.agentPGID = cmd.Process.Pid
	s.lastOutput.Store(time.Now().UnixNano())
	s.mu.Lock()
	s.st.State, s.st.AgentPID = StateRunning, cmd.Process.Pid
	if s.maxRuntime > 0 {
		at := time.Now().Add(s.maxRuntime).UTC().Truncate(time.Second)
		s.st.MaxRuntimeAt = &at
	}
	err = s.writeStatusLocked()
	s.mu.Unlock()
	s.event("agent started, pid %d", cmd.Process.Pid)
	// Copied only now: the pipe holds what the agent printed meanwhile,
	// so its output follows the line that says it started.
	go s.copyOutput(out)
	go s.waitAgent(cmd)
	go s.endGroup()
	go s.enforceBounds()
	return err
}

// agentEnv is the controller's environment plus the request's, which wins
// (exec dedups keeping the last value). Keys are sorted for determinism.
// outputWait is how long the agent's exit waits for the rest of its output,
// so that it is in the log before the exit line.
const outputWait = 200 * time.Millisecond

// copyOutput appends the agent's output to the log through the redactor,
// and what it held back once the output ends.
func (s *server) copyOutput(r *os.File) {
	defer close(s.outDone)
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.lastOutput.Store(time.Now().UnixNano())
			s.logMu.Lock()
			_, _ = s.mask.Write(buf[:n])
			s.rotateLocked()
			s.logMu.Unlock()
		}
		if err != nil {
			break
		}
	}
	s.logMu.Lock()
	_ = s.mask.Flush()
	s.logMu.Unlock()
}

// awaitOutput waits a little for the agent's output to end. Processes the
// agent left behind may keep it open; their output is logged as it comes.
func (s *server) awaitOutput() {
	select {
	case <-s.outDone:
	case <-time.After(outputWait):
	}
}

func (s *server) waitAgent(cmd *exec.Cmd) {
	_ = cmd.Wait()
	s.awaitOutput() // shorter than groupPoll
	// From here the agent's pid is free and its group id may be reused
	// once the group empties: keep watching, so that is noticed in time.
	s.groupLive()
	go s.watchGroup()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Second) // recorded and shown to the second
	s.st.EndedAt = &now
	s.st.State = StateExited
	if s.stopping {
		s.st.State = StateStopped
	}
	if ws.Signaled() {
		s.st.Signal = unix.SignalName(ws.Signal())
		s.event("agent ended by %s", s.st.Signal)
	} else {
		code := ws.ExitStatus()
		s.st.ExitCode = &code
		s.event("agent exited with code %d", code)
	}
	_ = s.writeStatusLocked()
	// Closed after the event line, so a log follower gets it.
	close(s.exited)
}

// endGroup ends, once the agent has exited on its own, what it left
// behind in its group: the session is over, and only the controller
// lingers for readers of its final status.
func (s *server) endGroup() {
	<-s.exited
	s.stop(s.grace)
}

// stop ends the agent's process group: SIGTERM, then SIGKILL once grace
// has passed. Concurrent and repeated calls share one stop; a call with a
// shorter grace (a drain's bound) brings the SIGKILL forward. It also
// clears processes the agent left behind after exiting on its own.
func (s *server) stop(grace time.Duration) Status {
	s.mu.Lock()
	if at := time.Now().Add(grace); s.killAt.IsZero() || at.Before(s.killAt) {
		s.killAt, s.killGrace = at, grace
	}
	s.mu.Unlock()
	s.stopOnce.Do(func() { go s.runStop() })
	<-s.stopDone
	return s.status()
}

func (s *server) runStop() {
	defer close(s.stopDone)
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	if s.settled() {
		return
	}
	s.noteMembers()
	s.signalGroup(syscall.SIGTERM, "stopping: SIGTERM to agent process group %d")
	for !s.settled() && time.Now().Before(s.killDeadline()) {
		time.Sleep(50 * time.Millisecond)
	}
	if !s.settled() {
		s.mu.Lock()
		grace := s.killGrace
		s.mu.Unlock()
		if s.signalGroup(syscall.SIGKILL, "stop grace "+grace.String()+" passed: SIGKILL to agent process group %d") {
			s.mu.Lock()
			s.killed, s.st.GroupKilled = true, true
			s.mu.Unlock()
		}
	}
	select {
	case <-s.exited:
	case <-time.After(killWait):
		s.event("agent not reaped %s after SIGKILL", killWait)
	}
	s.mu.Lock()
	_ = s.writeStatusLocked()
	s.mu.Unlock()
}

// noteMembers records, and logs, which processes the stop is about to end.
func (s *server) noteMembers() {
	if !s.groupLive() {
		return
	}
	ps := groupMembers(s.agentPGID)
	if len(ps) == 0 {
		return
	}
	names := make([]string, len(ps))
	for i := range ps {
		ps[i].Name = s.masked(ps[i].Name) // the agent names its processes
		names[i] = fmt.Sprintf("%d (%s)", ps[i].PID, ps[i].Name)
	}
	s.event("ending the agent's processes: %s", strings.Join(names, ", "))
	s.mu.Lock()
	s.st.EndedProcesses = ps
	_ = s.writeStatusLocked()
	s.mu.Unlock()
}

func (s *server) killDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killAt
}

// settled: the agent has exited and nothing live is left in its group.
func (s *server) settled() bool {
	select {
	case <-s.exited:
	default:
		return false
	}
	return !s.groupLive()
}

// groupLive reports whether the agent's process group has live members and
// is provably still the agent's. The kernel never reuses a pgid while any
// process is in that group (the unreaped agent itself holds it until
// waitAgent), so while the group is continuously observed non-empty the id
// is ours. The first time it is observed empty, it is marked gone for good:
// a later non-empty group with that id may be a stranger that did setsid
// and got pid == pgid, and must never be signalled. watchGroup keeps the
// observations continuous after the agent is reaped; reusing the id within
// one groupPoll would take the pid space wrapping around in that time.
func (s *server) groupLive() bool {
	if s.groupGone.Load() {
		return false
	}
	if s.alive(s.agentPGID) {
		return true
	}
	if !s.groupGone.Swap(true) {
		s.event("every process of the agent has ended")
	}
	return false
}

// watchGroup polls the group after the agent was reaped until it is
// observed empty or the controller is done.
func (s *server) watchGroup() {
	t := time.NewTicker(groupPoll)
	defer t.Stop()
	for s.groupLive() {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// signalGroup signals the agent's group only if it is still provably the
// agent's, logging what (format, given the pgid) once it does; the check
// right before kill leaves no gap for reuse to slip in. It reports whether
// the signal was sent.
func (s *server) signalGroup(sig syscall.Signal, format string) bool {
	if !s.groupLive() {
		return false
	}
	s.event(format, s.agentPGID)
	if err := s.kill(-s.agentPGID, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			s.groupGone.Store(true)
		}
		return false
	}
	return true
}

// masked is text with the request's secret values masked, as the agent's
// output is.
func (s *server) masked(text string) string {
	var b strings.Builder
	m := redact.NewWriter(&b, s.req.Redact)
	_, _ = m.Write([]byte(text))
	_ = m.Flush()
	return b.String()
}
