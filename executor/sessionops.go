package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/ssh"
)

// attach is a live connection to a session's host and controller.
type attach struct {
	s      *Session
	t      *Task
	c      *ssh.Client
	ctrl   *controller.Client
	helper string
}

func (a *attach) Close() { a.c.Close() }

// attachSession dials the session's host (refused hosts may still be
// inspected: quarantine blocks launches, never recovery).
func (e *Executor) attachSession(ctx context.Context, prefix string) (*attach, error) {
	s, _, err := e.GetSession(ctx, prefix)
	if err != nil {
		return nil, err
	}
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
	a := &attach{s: s, t: t, c: c}
	if s.RemotePort > 0 {
		token, err := e.loadToken(s.ID)
		if err == nil {
			a.ctrl = e.controllerClient(c, s, token)
		}
	}
	return a, nil
}

// errControllerGone marks a controller that is provably not running.
var errControllerGone = errors.New("controller is not running")

// liveness asks the controller itself (token-authenticated health); when
// that fails it asks the host whether the recorded process still exists
// and is ours. An SSH failure is never taken for "gone".
func (e *Executor) liveness(ctx context.Context, a *attach) (controller.Status, error) {
	if a.ctrl != nil {
		if _, err := a.ctrl.Health(ctx); err == nil {
			return a.ctrl.Status(ctx)
		}
	}
	if a.s.SessionDir == "" {
		return controller.Status{}, errControllerGone // never started
	}
	id, err := e.probeController(ctx, a, "probe")
	if err != nil {
		return controller.Status{}, err
	}
	if id.Alive && id.Ours {
		return controller.Status{}, fmt.Errorf("session %s: controller pid %d is alive but does not answer; not touching it", a.s.ID, id.PID)
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

// recordFinal stores what the controller (or its status file) said.
func (e *Executor) recordFinal(ctx context.Context, id string, st controller.Status, fallback string) (*Session, error) {
	return e.updateSession(ctx, id, "session."+fallback, func(x *Session) error {
		switch st.State {
		case "exited", "stopped":
			x.State = st.State
		case "running", "starting":
			x.State = SessionRunning
			return nil
		default:
			x.State = fallback
		}
		x.ExitCode = st.ExitCode
		if st.EndedAt != nil {
			x.EndedAt = st.EndedAt
		} else if x.EndedAt == nil {
			now := time.Now().UTC().Truncate(time.Second)
			x.EndedAt = &now
		}
		return nil
	})
}

// readStatusFile reads status.json on the host when the controller is
// gone; a session whose controller died without writing a final state is
// lost.
func (e *Executor) finalFromHost(ctx context.Context, a *attach) (*Session, error) {
	out, _, err := a.c.Run(ctx, "cat -- "+ssh.ShellQuote(a.s.SessionDir+"/status.json")+" 2>/dev/null || true", nil)
	if err != nil {
		return nil, err
	}
	var st controller.Status
	if jsonErr := json.Unmarshal(out, &st); jsonErr != nil || (st.State != "exited" && st.State != "stopped") {
		st = controller.Status{}
	}
	return e.recordFinal(ctx, a.s.ID, st, SessionLost)
}

// RefreshSession asks the host how the session is doing and records it.
func (e *Executor) RefreshSession(ctx context.Context, prefix string) (*Session, error) {
	a, err := e.attachSession(ctx, prefix)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	st, err := e.liveness(ctx, a)
	if errors.Is(err, errControllerGone) {
		return e.finalFromHost(ctx, a)
	}
	if err != nil {
		return nil, err
	}
	return e.recordFinal(ctx, a.s.ID, st, SessionLost)
}

// StreamLogs copies the session's log from offset to w; with follow it
// keeps streaming until the agent exits, under a keepalive watchdog so a
// dead link is an error, not a hang. It returns the final session record
// when the agent has finished.
func (e *Executor) StreamLogs(ctx context.Context, prefix string, follow bool, w io.Writer) (*Session, error) {
	a, err := e.attachSession(ctx, prefix)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	wd := a.c.StartKeepalive(e.cfg.KeepaliveInterval, e.cfg.KeepaliveDeadline)
	defer wd.Stop()
	_, err = e.liveness(ctx, a)
	if errors.Is(err, errControllerGone) {
		// The controller is gone: the log file is all there is.
		if err := a.c.Stream(ctx, "cat -- "+ssh.ShellQuote(a.s.SessionDir+"/controller.log"), nil, w, io.Discard); err != nil {
			return nil, lostOr(wd, err)
		}
		return e.finalFromHost(ctx, a)
	}
	if err != nil {
		return nil, lostOr(wd, err)
	}
	if _, err := a.ctrl.Logs(ctx, 0, follow, w); err != nil {
		return nil, lostOr(wd, err)
	}
	st, err := a.ctrl.Status(ctx)
	if err != nil {
		return nil, lostOr(wd, err)
	}
	if !follow && (st.State == "running" || st.State == "starting") {
		return a.s, nil
	}
	return e.recordFinal(ctx, a.s.ID, st, SessionLost)
}

// lostOr prefers the watchdog's verdict: a dead link is exit code 7.
func lostOr(wd *ssh.Watchdog, err error) error {
	if werr := wd.Err(); werr != nil {
		return &ssh.Error{Class: ssh.ClassTimeout, Err: werr, Hint: "the agent keeps running on the host; `kandev-exec session logs -f` again when the link is back"}
	}
	return err
}

// StopSession stops the agent gracefully (then kills its process group);
// the task directory stays, so the task can be resumed.
func (e *Executor) StopSession(ctx context.Context, prefix string) (*Session, error) {
	a, err := e.attachSession(ctx, prefix)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	_, err = e.liveness(ctx, a)
	if errors.Is(err, errControllerGone) {
		return e.finalFromHost(ctx, a)
	}
	if err != nil {
		return nil, err
	}
	st, err := a.ctrl.Stop(ctx)
	if err != nil {
		return nil, err
	}
	return e.recordFinal(ctx, a.s.ID, st, SessionStopped)
}

// ForwardSession listens on 127.0.0.1:local and carries each connection
// to 127.0.0.1:remote on the session's host until ctx ends or the link
// dies.
func (e *Executor) ForwardSession(ctx context.Context, prefix string, local, remote int, ready func(addr string), onErr func(error)) error {
	a, err := e.attachSession(ctx, prefix)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		return &UsageError{Msg: fmt.Sprintf("cannot listen on 127.0.0.1:%d: %v", local, err)}
	}
	wd := a.c.StartKeepalive(e.cfg.KeepaliveInterval, e.cfg.KeepaliveDeadline)
	defer wd.Stop()
	ready(ln.Addr().String())
	err = a.c.Forward(ctx, ln, fmt.Sprintf("127.0.0.1:%d", remote), onErr)
	if ctx.Err() != nil {
		return nil
	}
	return lostOr(wd, err)
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
