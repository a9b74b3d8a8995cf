package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/ssh"
)

// attach is a live connection to a session's host and controller. Every
// attach runs a keepalive watchdog, so no session operation can hang on a
// dead link.
type attach struct {
	s      *Session
	t      *Task
	c      *ssh.Client
	wd     *ssh.Watchdog
	ctrl   *controller.Client // nil when this state dir holds no token
	helper string
}

func (a *attach) Close() {
	a.wd.Stop()
	a.c.Close()
}

// NotStartedError: the session has no controller to ask, so there is
// nothing to follow or stop.
type NotStartedError struct{ S *Session }

func (e *NotStartedError) Error() string {
	if e.S.State == SessionStarting {
		return fmt.Sprintf("session %s is still starting (no controller recorded yet); `kandev-exec session show %s` in a moment", e.S.ID, e.S.ID)
	}
	return fmt.Sprintf("session %s never started its agent: %s; see `kandev-exec task show %s`", e.S.ID, e.S.Error, e.S.TaskID)
}

// startedSession reads a session that has (or had) a controller.
func (e *Executor) startedSession(ctx context.Context, prefix string) (*Session, error) {
	s, _, err := e.GetSession(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if s.SessionDir == "" {
		return s, &NotStartedError{S: s}
	}
	return s, nil
}

// attachSession dials the session's host (refused hosts may still be
// inspected: quarantine blocks launches, never recovery).
func (e *Executor) attachSession(ctx context.Context, s *Session) (*attach, error) {
	t, _, err := getRecord[Task](ctx, e.cfg.Store, KindTask, s.TaskID)
	if err != nil {
		return nil, err
	}
	h, _, err := e.getHost(ctx, s.Host)
	if err != nil {
		return nil, err
	}
	c, err := e.dialHost(ctx, h)
	if err != nil {
		return nil, err
	}
	a := &attach{s: s, t: t, c: c, wd: c.StartKeepalive(e.cfg.KeepaliveInterval, e.cfg.KeepaliveDeadline)}
	if token, err := e.loadToken(s.ID); err == nil && s.RemotePort > 0 {
		a.ctrl = e.controllerClient(c, s, token)
	}
	return a, nil
}

// linkErr turns a failure caused by the connection dying under an
// operation into an unreachable error (exit 7) that says what became of
// the session; any other error is returned as is.
func (a *attach) linkErr(err error, doing, outcome, hint string) error {
	if err == nil {
		return nil
	}
	class, why := ssh.ClassNetwork, "the connection closed"
	var lost *ssh.LostError
	if werr := a.wd.Err(); errors.As(werr, &lost) {
		class, why = ssh.ClassTimeout, fmt.Sprintf("no reply to keepalives for %s", lost.Silent)
	} else {
		select {
		case <-a.c.Done():
		default:
			return err
		}
	}
	return &ssh.Error{Host: a.s.Host, Hop: a.s.Host, Class: class, Err: fmt.Errorf("connection lost while %s session %s (%s); %s", doing, a.s.ID, why, outcome), Hint: hint}
}

// errControllerGone marks a controller that is provably not running.
var errControllerGone = errors.New("controller is not running")

// liveness asks the controller itself (token-authenticated health); when
// that fails it asks the host whether the recorded process still exists
// and is ours. An SSH failure is never taken for "gone", and a process
// that does not prove it is ours is never touched.
func (e *Executor) liveness(ctx context.Context, a *attach) (controller.Status, error) {
	if a.ctrl != nil {
		if _, err := a.ctrl.Health(ctx); err == nil {
			return a.ctrl.Status(ctx)
		}
	}
	id, err := e.probeController(ctx, a, "probe")
	if err != nil {
		return controller.Status{}, err
	}
	// Without a recorded start time (a launch interrupted after starting
	// it) a live pid proves nothing either way.
	if id.Alive && (id.Ours || a.s.StartTime == 0) {
		why := "does not answer"
		switch {
		case a.s.StartTime == 0:
			why = "was never recorded as this session's controller"
		case a.ctrl == nil:
			why = "cannot be asked: this state dir holds no token for it"
		}
		return controller.Status{}, fmt.Errorf("session %s: controller pid %d is alive but %s; not touching it (check the host: `kandev-exec task exec %s -- ps -p %d`)",
			a.s.ID, id.PID, why, a.t.ID, id.PID)
	}
	return controller.Status{}, errControllerGone
}

func (e *Executor) probeController(ctx context.Context, a *attach, verb string) (controller.Identity, error) {
	var id controller.Identity
	helper, err := e.helperPathOnHost(ctx, a)
	if err != nil {
		return id, err
	}
	args := []string{"controller", verb, "--session-dir", a.s.SessionDir, "--start-time", fmt.Sprint(a.s.StartTime)}
	err = callHelper(ctx, a.c, a.s.Host, helper, args, struct{}{}, &id)
	return id, err
}

func (e *Executor) helperPathOnHost(ctx context.Context, a *attach) (string, error) {
	if a.helper != "" {
		return a.helper, nil
	}
	info, err := detect(ctx, a.c)
	if err != nil {
		return "", err
	}
	p, _, err := e.EnsureHelper(ctx, a.c, a.t.Root, info.Platform)
	a.helper = p
	return p, err
}

// finalStates are states the host can no longer change.
func isFinal(state string) bool {
	switch state {
	case SessionExited, SessionStopped, SessionLost, SessionFailed:
		return true
	}
	return false
}

// recordFinal stores what the controller (or its status file) said. An
// empty state means the host keeps no record of the session's end: it is
// lost, unless it was already known to have ended.
func (e *Executor) recordFinal(ctx context.Context, id string, st controller.Status) (*Session, error) {
	apply := func(x *Session) {
		switch st.State {
		case controller.StateRunning, controller.StateStarting:
			x.State = SessionRunning
			return
		case controller.StateExited, controller.StateStopped:
			x.State, x.ExitCode = st.State, st.ExitCode
			if st.EndedAt != nil {
				x.EndedAt = st.EndedAt
			}
		default:
			if isFinal(x.State) {
				return
			}
			x.State = SessionLost
			x.Error = "the controller is gone and recorded no end; the agent may have died with it"
		}
		if x.EndedAt == nil {
			now := time.Now().UTC().Truncate(time.Second)
			x.EndedAt = &now
		}
	}
	cur, _, err := getRecord[Session](ctx, e.cfg.Store, KindSession, id)
	if err != nil {
		return nil, err
	}
	next := *cur
	apply(&next)
	if reflect.DeepEqual(&next, cur) {
		return cur, nil
	}
	return e.updateSession(ctx, id, "session."+next.State, func(x *Session) error {
		apply(x)
		return nil
	})
}

// finalFromHost reads status.json on the host once the controller is
// proven gone; a controller that died without writing a final state
// leaves the session lost.
func (e *Executor) finalFromHost(ctx context.Context, a *attach) (*Session, error) {
	out, _, err := a.c.Run(ctx, "cat -- "+ssh.ShellQuote(a.s.SessionDir+"/status.json")+" 2>/dev/null || true", nil)
	if err != nil {
		return nil, err
	}
	var st controller.Status
	if jsonErr := json.Unmarshal(out, &st); jsonErr != nil || (st.State != controller.StateExited && st.State != controller.StateStopped) {
		st = controller.Status{}
	}
	return e.recordFinal(ctx, a.s.ID, st)
}

// RefreshSession asks the host how the session is doing and records it.
func (e *Executor) RefreshSession(ctx context.Context, prefix string) (*Session, error) {
	s, err := e.startedSession(ctx, prefix)
	if err != nil {
		var ns *NotStartedError
		if errors.As(err, &ns) {
			return s, nil // no controller: the record is all there is
		}
		return nil, err
	}
	a, err := e.attachSession(ctx, s)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	st, err := e.liveness(ctx, a)
	if errors.Is(err, errControllerGone) {
		s, err = e.finalFromHost(ctx, a)
	} else if err == nil {
		s, err = e.recordFinal(ctx, a.s.ID, st)
	}
	return s, a.linkErr(err, "asking about", "its state is unknown", fmt.Sprintf("`kandev-exec session show %s` again once the host answers", a.s.ID))
}

// StreamLogs copies the session's log to w; with follow it keeps
// streaming until the agent exits. It returns the session as recorded
// afterwards (still running when not following).
func (e *Executor) StreamLogs(ctx context.Context, prefix string, follow bool, w io.Writer) (*Session, error) {
	s, err := e.startedSession(ctx, prefix)
	if err != nil {
		return nil, err
	}
	a, err := e.attachSession(ctx, s)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	s, err = e.streamLogs(ctx, a, follow, w)
	return s, a.linkErr(err, "following", "the agent keeps running on the host",
		fmt.Sprintf("`kandev-exec session logs -f %s` again once the host answers", a.s.ID))
}

func (e *Executor) streamLogs(ctx context.Context, a *attach, follow bool, w io.Writer) (*Session, error) {
	var offset int64
	st, err := e.liveness(ctx, a)
	if err == nil {
		offset, err = a.ctrl.Logs(ctx, 0, follow, w)
		if err == nil {
			st, err = a.ctrl.Status(ctx)
		}
		if err != nil && ctx.Err() == nil {
			// The controller may have died mid-stream: if it is gone,
			// the log file has the rest.
			if _, lerr := e.liveness(ctx, a); errors.Is(lerr, errControllerGone) {
				err = lerr
			}
		}
	}
	if errors.Is(err, errControllerGone) {
		tail := fmt.Sprintf("tail -c +%d -- %s", offset+1, ssh.ShellQuote(a.s.SessionDir+"/controller.log"))
		if err := a.c.Stream(ctx, tail+" 2>/dev/null || true", nil, w, io.Discard); err != nil {
			return nil, err
		}
		return e.finalFromHost(ctx, a)
	}
	if err != nil {
		return nil, err
	}
	return e.recordFinal(ctx, a.s.ID, st)
}

// StopSession stops the agent gracefully (then kills its process group);
// the task directory stays, so the task can be resumed.
func (e *Executor) StopSession(ctx context.Context, prefix string) (*Session, error) {
	s, err := e.startedSession(ctx, prefix)
	if err != nil {
		var ns *NotStartedError
		if errors.As(err, &ns) && isFinal(s.State) {
			return s, nil // nothing ever ran
		}
		return nil, err
	}
	a, err := e.attachSession(ctx, s)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	st, err := e.liveness(ctx, a)
	switch {
	case errors.Is(err, errControllerGone):
		s, err = e.finalFromHost(ctx, a)
	case err == nil:
		if st, err = a.ctrl.Stop(ctx); err == nil {
			s, err = e.recordFinal(ctx, a.s.ID, st)
		}
	}
	return s, a.linkErr(err, "stopping", "it may not have stopped", fmt.Sprintf("`kandev-exec session show %s` once the host answers", a.s.ID))
}

// ForwardSession listens on 127.0.0.1:local and carries each connection
// to 127.0.0.1:remote on the session's host until ctx ends or the link
// dies.
func (e *Executor) ForwardSession(ctx context.Context, prefix string, local, remote int, ready func(sessionID, addr string), onErr func(error)) error {
	s, _, err := e.GetSession(ctx, prefix)
	if err != nil {
		return err
	}
	a, err := e.attachSession(ctx, s)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		return &UsageError{Msg: fmt.Sprintf("cannot listen on 127.0.0.1:%d: %v", local, err)}
	}
	ready(s.ID, ln.Addr().String())
	err = a.c.Forward(ctx, ln, fmt.Sprintf("127.0.0.1:%d", remote), onErr)
	if ctx.Err() != nil {
		return nil
	}
	return a.linkErr(err, "forwarding for", "the forward ended; the agent keeps running on the host",
		fmt.Sprintf("`kandev-exec session forward %s %d` again once the host answers", a.s.ID, remote))
}

// ParseForward reads [LOCAL:]REMOTE.
func ParseForward(spec string) (local, remote int, err error) {
	l, r, ok := strings.Cut(spec, ":")
	if !ok {
		l, r = "0", spec
	}
	if _, err := fmt.Sscan(l, &local); err != nil || local < 0 || local > 65535 {
		return 0, 0, &UsageError{Msg: fmt.Sprintf("bad local port in %q: want [LOCAL:]REMOTE", spec)}
	}
	if _, err := fmt.Sscan(r, &remote); err != nil || remote < 1 || remote > 65535 {
		return 0, 0, &UsageError{Msg: fmt.Sprintf("bad remote port in %q: want [LOCAL:]REMOTE", spec)}
	}
	return local, remote, nil
}
