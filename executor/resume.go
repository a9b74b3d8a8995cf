package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/ssh"
)

// ActiveSessionError: a session of the task still runs (exit 10).
type ActiveSessionError struct {
	TaskID, SessionID string
	Starting          bool // its launch has not recorded a controller yet
}

func (e *ActiveSessionError) Error() string {
	if e.Starting {
		return fmt.Sprintf("task %s: session %s is still starting; wait for it (`kandev-exec session show %s`), then stop it or resume again",
			e.TaskID, e.SessionID, e.SessionID)
	}
	return fmt.Sprintf("task %s: session %s is still running; stop it first (`kandev-exec session stop %s`) or follow it (`kandev-exec session logs -f %s`)",
		e.TaskID, e.SessionID, e.SessionID, e.SessionID)
}

// ExitCode: a conflict with the running session.
func (e *ActiveSessionError) ExitCode() (int, string) { return 10, "conflict" }

// Resume starts a new session in the task's preserved directory, once
// every earlier session is proven finished. If the host cannot tell (SSH
// fails), nothing is started.
func (e *Executor) Resume(ctx context.Context, prefix string, command []string, progress func(string)) (*Task, *Session, error) {
	t, _, err := e.GetTask(ctx, prefix)
	if err != nil {
		return nil, nil, err
	}
	switch t.Phase {
	case PhaseAllocating, PhasePreparing, PhaseReady:
	default:
		return nil, nil, &UsageError{Msg: fmt.Sprintf("task %s is %s: it cannot be resumed", t.ID, t.Phase)}
	}
	// What an interrupted launch left is settled first (recover.go).
	ts, _, err := e.RecoverTasks(ctx, []*Task{t}, true)
	if err != nil {
		return nil, nil, err
	}
	t = ts[0]
	o := LaunchOptions{Profile: t.Profile, Agent: t.Agent, Env: t.LaunchEnv, Command: command}
	if len(command) == 0 {
		o.Agent = "" // the stored command already includes the preset's
	}
	lp, err := e.planLaunch(ctx, o, t.Command)
	if err != nil {
		return nil, nil, err
	}
	if t.Agent != "" && len(command) == 0 {
		// Keep the preset's environment even when reusing its command.
		if lp.agent, err = e.agentPreset(ctx, t.Agent); err != nil {
			return nil, nil, err
		}
	}
	for _, id := range t.Sessions {
		if err := e.ensureFinished(ctx, t, id); err != nil {
			return nil, nil, err
		}
	}
	s, err := e.startSession(ctx, t, lp, progress, false)
	if t2, _, gerr := getRecord[Task](ctx, e.cfg.Store, KindTask, t.ID); gerr == nil {
		t = t2
	}
	return t, s, err
}

// ensureFinished proves an earlier session is no longer running.
func (e *Executor) ensureFinished(ctx context.Context, t *Task, id string) error {
	s, _, err := getRecord[Session](ctx, e.cfg.Store, KindSession, id)
	if err != nil {
		return err
	}
	if isFinal(s.State) {
		return nil
	}
	cannotTell := func(err error) error {
		return fmt.Errorf("task %s: cannot tell whether session %s still runs, so no new session was started: %w", t.ID, id, err)
	}
	if s.SessionDir == "" {
		return e.settleUnrecorded(ctx, t, s, cannotTell)
	}
	a, err := e.attachSession(ctx, s)
	if err != nil {
		return cannotTell(err)
	}
	defer a.Close()
	st, err := e.liveness(ctx, a)
	switch {
	case errors.Is(err, errControllerGone):
		_, err = e.finalFromHost(ctx, a)
	case err == nil && (st.State == controller.StateRunning || st.State == controller.StateStarting):
		return &ActiveSessionError{TaskID: t.ID, SessionID: id}
	case err == nil:
		_, err = e.recordFinal(ctx, id, st)
	}
	if err != nil {
		return cannotTell(a.linkErr(err, "checking", "nothing was started", ""))
	}
	return nil
}

// settleUnrecorded handles a session whose launch never recorded a
// controller: recent, it may still be under way in another process;
// older, its launch was interrupted, and it is marked failed once the
// host shows no controller in its would-be session dir.
func (e *Executor) settleUnrecorded(ctx context.Context, t *Task, s *Session, cannotTell func(error) error) error {
	if time.Since(s.StartedAt) < PrepareTimeout+time.Minute {
		return &ActiveSessionError{TaskID: t.ID, SessionID: s.ID, Starting: true}
	}
	if t.TaskDir != "" {
		probe := *s
		probe.SessionDir = path.Join(t.TaskDir, ".kandev", "sessions", s.ID)
		a, err := e.attachSession(ctx, &probe)
		if err != nil {
			return cannotTell(err)
		}
		defer a.Close()
		id, err := e.probeController(ctx, a, "probe")
		if err != nil {
			return cannotTell(err)
		}
		if id.Alive {
			return fmt.Errorf("task %s: session %s's launch was interrupted, but pid %d in its session dir %s is alive; check it (`kandev-exec task exec %s -- ps -p %d`) before resuming",
				t.ID, s.ID, id.PID, probe.SessionDir, t.ID, id.PID)
		}
	}
	_, err := e.updateSession(ctx, s.ID, "session.failed", func(x *Session) error {
		now := time.Now().UTC().Truncate(time.Second)
		x.State, x.Error, x.EndedAt = SessionFailed, "launch interrupted before its controller was recorded", &now
		return nil
	})
	return err
}

// Exec runs argv in the task directory through the profile's login shell,
// with stdout and stderr kept apart. It returns the remote exit status;
// 255 with an error means the transport failed, as with ssh(1); -1 with
// an error means no remote status applies (unknown task, no directory
// yet, interrupted).
func (e *Executor) Exec(ctx context.Context, prefix string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	t, _, err := e.GetTask(ctx, prefix)
	if err != nil {
		return -1, err
	}
	if t.TaskDir == "" {
		return -1, &UsageError{Msg: fmt.Sprintf("task %s has no prepared directory yet (phase %s): `kandev-exec task resume %s` prepares it", t.ID, t.Phase, t.ID)}
	}
	shell := "sh"
	if p, err := e.profileOf(ctx, t); err == nil {
		shell = shellOf(p)
	}
	h, _, err := e.getHost(ctx, t.Host)
	if err != nil {
		return -1, err
	}
	c, err := e.dialHost(ctx, h)
	if err != nil {
		return 255, err
	}
	defer c.Close()
	// A command may run for long: a dead link must end it, not hang it.
	wd := c.StartKeepalive(e.cfg.KeepaliveInterval, e.cfg.KeepaliveDeadline)
	defer wd.Stop()
	script := "cd -- " + ssh.ShellQuote(t.TaskDir) + " && exec " + ssh.ShellQuote(shell) + " -l -c " + ssh.ShellQuote(shellJoin(argv))
	err = c.Stream(ctx, script, stdin, stdout, stderr)
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.Signal == "":
		return ee.Code, nil
	case ctx.Err() != nil:
		return -1, ctx.Err()
	}
	if werr := wd.Err(); werr != nil {
		return 255, &ssh.Error{Host: t.Host, Hop: t.Host, Class: ssh.ClassTimeout, Err: fmt.Errorf("task %s: %w; the command's fate on the host is unknown", t.ID, werr)}
	}
	return 255, fmt.Errorf("task %s: %w", t.ID, err)
}
