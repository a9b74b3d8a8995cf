package controller

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// killWait is how long a SIGKILLed agent gets to be reaped.
const killWait = 5 * time.Second

// startAgent runs `<shell> -l -c <command>` in the task dir, in its own
// process group, with stdout and stderr appended to controller.log.
func (s *server) startAgent() error {
	cmd := exec.Command(s.req.Shell, "-l", "-c", s.req.Command)
	cmd.Dir = s.req.TaskDir
	cmd.Env = agentEnv(s.req.Env)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	// Its own group, so stop reaches everything it spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		err = fmt.Errorf("start agent: %w", err)
		s.event("%v", err)
		s.mu.Lock()
		now := time.Now().UTC()
		s.st.State, s.st.Error, s.st.EndedAt = StateExited, err.Error(), &now
		_ = s.writeStatusLocked()
		s.mu.Unlock()
		return err
	}
	s.agentPGID = cmd.Process.Pid
	s.mu.Lock()
	s.st.State, s.st.AgentPID = StateRunning, cmd.Process.Pid
	err := s.writeStatusLocked()
	s.mu.Unlock()
	s.event("agent started, pid %d", cmd.Process.Pid)
	go s.waitAgent(cmd)
	return err
}

// agentEnv is the controller's environment plus the request's, which wins
// (exec dedups keeping the last value). Keys are sorted for determinism.
func agentEnv(extra map[string]string) []string {
	env := os.Environ()
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

func (s *server) waitAgent(cmd *exec.Cmd) {
	_ = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
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

// stop ends the agent's process group: SIGTERM, then SIGKILL once the grace
// has passed. Concurrent and repeated calls share one stop. It also clears
// processes the agent left behind after exiting on its own.
func (s *server) stop() Status {
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
	s.event("stopping: SIGTERM to agent process group %d", s.agentPGID)
	s.signalGroup(syscall.SIGTERM)
	deadline := time.Now().Add(s.grace)
	for !s.settled() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !s.settled() {
		s.event("stop grace %s passed: SIGKILL to agent process group %d", s.grace, s.agentPGID)
		s.signalGroup(syscall.SIGKILL)
	}
	select {
	case <-s.exited:
	case <-time.After(killWait):
		s.event("agent not reaped %s after SIGKILL", killWait)
	}
}

// settled: the agent has exited and nothing live is left in its group.
func (s *server) settled() bool {
	select {
	case <-s.exited:
	default:
		return false
	}
	return s.groupGone.Load() || !groupAlive(s.agentPGID)
}

func (s *server) signalGroup(sig syscall.Signal) {
	if s.groupGone.Load() {
		return
	}
	if err := syscall.Kill(-s.agentPGID, sig); errors.Is(err, syscall.ESRCH) {
		s.groupGone.Store(true)
	}
}
