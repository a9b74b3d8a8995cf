package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/logview"
	"github.com/kdlbs/kandev-exec/records"
)

// attach is a session reached on its host, over a connection (conn.go)
// that may serve other sessions too (a drain's).
type attach struct {
	s     *records.Session
	t     *records.Task
	hc    *hostConn
	token string             // the session's controller token, "" when this state dir holds none
	ctrl  *controller.Client // nil without a token
	// orphan is the agent's live process group, once its controller is
	// found gone.
	orphan int
}

// NotStartedError: the session has no controller to ask, so there is
// nothing to follow or stop.
type NotStartedError struct{ S *records.Session }

func (e *NotStartedError) Error() string {
	if e.S.State == records.SessionStarting {
		return fmt.Sprintf("session %s is still starting (its launch has not recorded a controller yet); `kandev-exec session show %s` in a moment", e.S.ID, e.S.ID)
	}
	return fmt.Sprintf("session %s never started its agent: %s; see `kandev-exec task show %s`", e.S.ID, e.S.Error, e.S.TaskID)
}

// startedSession reads a session whose controller was started. One
// still starting whose launch was interrupted is settled first (asking
// the host); one whose launch is under way belongs to it until it ends.
func (e *Executor) startedSession(ctx context.Context, prefix string) (*records.Session, error) {
	s, _, err := e.GetSession(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if s.State == records.SessionStarting {
		t, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, s.TaskID)
		if err != nil {
			return nil, err
		}
		if _, _, err := e.RecoverTasks(ctx, []*records.Task{t}, true); err != nil {
			return s, err
		}
		if s, _, err = records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, s.ID); err != nil {
			return nil, err
		}
	}
	if s.SessionDir == "" || s.State == records.SessionStarting {
		return s, &NotStartedError{S: s}
	}
	return s, nil
}

// attachSession connects to the session's host; closing it closes the
// connection.
func (e *Executor) attachSession(ctx context.Context, s *records.Session) (*attach, error) {
	t, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, s.TaskID)
	if err != nil {
		return nil, err
	}
	h, _, err := e.getHost(ctx, s.Host)
	if err != nil {
		return nil, err
	}
	hc, err := e.connect(ctx, h)
	if err != nil {
		return nil, err
	}
	return attachOn(hc, t, s), nil
}

// attachOn is an attach over a connection already made, which its owner
// closes.
func attachOn(hc *hostConn, t *records.Task, s *records.Session) *attach {
	a := &attach{s: s, t: t, hc: hc}
	if token, err := hc.e.vault.LoadToken(s.ID); err == nil && s.RemotePort > 0 {
		a.token, a.ctrl = token, hc.controller(t.Root, s.RemotePort, token)
	}
	return a
}

func (a *attach) Close() { a.hc.Close() }

// call sends one request about the session to the helper.
func (a *attach) call(ctx context.Context, op string, req, res any) error {
	return a.hc.call(ctx, a.t.Root, op, req, res)
}

// linkErr is linkLost for an operation on the session.
func (a *attach) linkErr(err error, doing, outcome, hint string) error {
	return a.hc.linkLost(err, fmt.Sprintf("%s session %s", doing, a.s.ID), outcome, hint)
}

// NoTokenError: the controller runs and proves to be the session's, but
// this machine holds no token for it (another operator launched it, on a
// shared store): it can be inspected on the host and stopped, not asked.
type NoTokenError struct {
	SessionID string
	PID       int
}

func (e *NoTokenError) Error() string {
	return fmt.Sprintf("session %s: its controller (pid %d) runs, but its token is on the machine that launched it, so it cannot be asked from here", e.SessionID, e.PID)
}

// errControllerGone marks a controller that is provably not running.
var errControllerGone = errors.New("controller is not running")

// liveness is the controller's status by a signed request, which proves
// it in the same exchange; when that does not answer, prove, then the
// status.
func (e *Executor) liveness(ctx context.Context, a *attach) (controller.Status, error) {
	if a.ctrl != nil {
		if st, err := a.ctrl.StatusSigned(ctx); err == nil {
			return st, nil
		}
	}
	if err := e.prove(ctx, a); err != nil {
		return controller.Status{}, err
	}
	return a.ctrl.Status(ctx)
}

// prove asks the controller itself (token-authenticated health); when
// that fails it asks the host whether the recorded process still exists
// and is ours. An SSH failure is never taken for "gone", and a process
// that does not prove it is ours is never touched. Nil: the controller
// answered as the session's, so a.ctrl may be handed the token.
func (e *Executor) prove(ctx context.Context, a *attach) error {
	if a.ctrl != nil {
		_, err := a.ctrl.Health(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, controller.ErrBusy):
			// Alive and answering, just full: another local user may be
			// holding its connections. Nothing to probe or settle.
			return fmt.Errorf("session %s: its controller refuses new connections, having as many open as it serves (another user on the host may be holding them); try again: %w", a.s.ID, err)
		}
	}
	id, err := e.probeController(ctx, a, protocol.OpControllerProbe)
	if err != nil {
		return err
	}
	// Without a recorded start time (a launch interrupted after starting
	// it) a live pid proves nothing either way.
	if id.Alive && id.Ours && a.ctrl == nil {
		return &NoTokenError{SessionID: a.s.ID, PID: id.PID}
	}
	if id.Alive && (id.Ours || a.s.StartTime == 0) {
		why := "does not answer"
		switch {
		case a.s.StartTime == 0:
			why = "was never recorded as this session's controller"
		}
		return fmt.Errorf("session %s: controller pid %d is alive but %s; not touching it (check the host: `kandev-exec task exec %s -- ps -p %d`)",
			a.s.ID, id.PID, why, a.t.ID, id.PID)
	}
	a.orphan = id.Orphan
	return errControllerGone
}

func (e *Executor) probeController(ctx context.Context, a *attach, op string) (controller.Identity, error) {
	var id controller.Identity
	err := a.call(ctx, op, protocol.SessionRequest{SessionDir: a.s.SessionDir, StartTime: a.s.StartTime}, &id)
	return id, err
}

// RefreshSession asks the host how the session is doing and records it.
func (e *Executor) RefreshSession(ctx context.Context, prefix string) (*records.Session, error) {
	s, err := e.startedSession(ctx, prefix)
	if err != nil {
		var ns *NotStartedError
		if errors.As(err, &ns) {
			return s, nil // no controller: the record is all there is
		}
		return s, err
	}
	a, err := e.attachSession(ctx, s)
	if err != nil {
		if o := e.observeUnreachable(ctx, err, s.ID)[s.ID]; o != nil {
			s = o
		}
		return s, err // as recorded: the host could not be asked
	}
	defer a.Close()
	recorded := s
	st, err := e.liveness(ctx, a)
	if errors.Is(err, errControllerGone) {
		s, _, err = e.finalFromHost(ctx, a)
	} else if err == nil {
		s, err = e.recordFinal(ctx, a.s.ID, st, lostNoEnd)
	}
	if s == nil {
		s = recorded
	}
	err = a.linkErr(err, "asking about", "its state is unknown", fmt.Sprintf("`kandev-exec session show %s` again once the host answers", a.s.ID))
	if o := e.observeUnreachable(ctx, err, s.ID)[s.ID]; o != nil {
		s = o
	}
	return s, err
}

// StreamLogs copies the session's log to w; with follow it keeps
// streaming until the agent exits. It returns the session as recorded
// afterwards (still running when not following).
func (e *Executor) StreamLogs(ctx context.Context, prefix string, follow bool, w io.Writer) (*records.Session, error) {
	return e.ShowLogs(ctx, prefix, LogOptions{Follow: follow}, w)
}

// ShowLogs is StreamLogs shaped by o (tail, since, timestamps, offset).
// With o.Reconnect a follow whose link is lost reconnects (followLogs)
// and goes on from the byte it had.
func (e *Executor) ShowLogs(ctx context.Context, prefix string, o LogOptions, w io.Writer) (*records.Session, error) {
	s, err := e.startedSession(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if !o.Follow || !o.Reconnect {
		s, _, err := e.logsOnce(ctx, s, o, w, time.Time{}, nil)
		return s, err
	}
	return e.followLogs(ctx, s, o, w)
}

// logsOnce connects (by dialBy, when set), calls attached, and shows the
// log; it reports whether the connection was made.
func (e *Executor) logsOnce(ctx context.Context, s *records.Session, o LogOptions, w io.Writer, dialBy time.Time, attached func()) (*records.Session, bool, error) {
	dialCtx := ctx
	if !dialBy.IsZero() {
		var cancel context.CancelFunc
		dialCtx, cancel = context.WithDeadline(ctx, dialBy)
		defer cancel()
	}
	a, err := e.attachSession(dialCtx, s)
	if err != nil {
		return nil, false, err
	}
	defer a.Close()
	if attached != nil {
		attached()
	}
	s, err = e.streamLogs(ctx, a, o, w)
	return s, true, a.linkErr(err, "following", "the agent keeps running on the host",
		fmt.Sprintf("`kandev-exec session logs -f %s` again once the host answers", a.s.ID))
}

func (e *Executor) streamLogs(ctx context.Context, a *attach, o LogOptions, w io.Writer) (*records.Session, error) {
	var pos controller.LogPos
	if o.Reached != nil {
		defer func() { o.Reached(pos.Generation, pos.Offset) }()
	}
	var view *logview.Writer
	var st controller.Status
	skipped := func(sk controller.Skip) {
		if o.Notice != nil {
			o.Notice(noticeSkip(a.s.ID, sk))
		}
		if o.Skipped != nil {
			o.Skipped(sk)
		}
	}
	var end *controller.Status
	err, asked := controller.ErrUnproved, true // asked: a proved controller was asked for the log
	switch {
	case a.ctrl != nil && !o.wantsSize():
		// One signed request proves the controller in its answer's head,
		// before any of the log is shown; one that proves nothing is
		// proved or found gone as below.
		pos.Offset, view = o.view(w, -1)
		pos.Generation = o.Generation
		pos, end, err = a.ctrl.LogsThenStatusSigned(ctx, pos, o.Follow, view, skipped)
	case a.ctrl != nil:
		// The same, with the log's length in the head for the view; a
		// controller that sends none is asked as below.
		ask := controller.LogPos{Generation: o.Generation, Offset: o.ask()}
		var at controller.LogPos
		at, end, err = a.ctrl.LogsSpanSigned(ctx, ask, o.Follow, func(sp controller.LogSpan) io.Writer {
			_, view = o.view(w, sp.Size)
			return view
		}, skipped)
		if view != nil {
			pos = at // opened: the answer was read
		}
	}
	if errors.Is(err, controller.ErrUnproved) {
		err, asked = e.prove(ctx, a), false
		size := int64(-1)
		if err == nil && o.wantsSize() {
			st, err = a.ctrl.Status(ctx)
			size = st.LogBytes
		}
		if err == nil {
			if view == nil {
				pos.Offset, view = o.view(w, size)
				pos.Generation = o.Generation
			}
			pos, end, err = a.ctrl.LogsThenStatus(ctx, pos, o.Follow, view, skipped)
			asked = true
		}
	}
	if asked {
		if err == nil {
			st, err = a.endStatus(ctx, end)
		}
		if err != nil && ctx.Err() == nil && !isLogRefusal(err) {
			// The controller may have died mid-stream: if it is gone,
			// the log file has the rest.
			if lerr := e.prove(ctx, a); errors.Is(lerr, errControllerGone) {
				err = lerr
			}
		}
	}
	var noToken *NoTokenError
	if errors.Is(err, errControllerGone) || errors.As(err, &noToken) {
		// The log file on the host has it (already masked): the rest of
		// it, or, without a token, what it holds so far.
		if view == nil {
			pos.Offset, view = o.view(w, -1)
			pos.Generation = o.Generation
		}
		if pos, err = e.hostLog(ctx, a, pos, view); err != nil {
			return nil, err
		}
		if err := view.Close(); err != nil {
			return nil, err
		}
		if noToken != nil {
			if o.Follow {
				return a.s, fmt.Errorf("%w: the log so far is shown", noToken)
			}
			return a.s, nil
		}
		s, _, err := e.finalFromHost(ctx, a)
		return s, err
	}
	if err != nil {
		if view != nil {
			_ = view.Close() // what it held back was received: print it
		}
		return nil, logRefused(a.s.ID, err)
	}
	if err := view.Close(); err != nil {
		return nil, err
	}
	return e.recordFinal(ctx, a.s.ID, st, lostNoEnd)
}

// endStatus is the status a log answer ended with, or, when it came
// without one, the controller's status asked for.
func (a *attach) endStatus(ctx context.Context, end *controller.Status) (controller.Status, error) {
	if end != nil {
		return *end, nil
	}
	return a.ctrl.Status(ctx)
}

// StopSession stops the agent gracefully (then kills its process group);
// the task directory stays, so the task can be resumed.
func (e *Executor) StopSession(ctx context.Context, prefix string) (*records.Session, error) {
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
	return e.stopAttached(ctx, a)
}

// stopAttached stops the attached session: its controller stops the
// agent gracefully, then its process group; one already gone is settled
// from what it left on the host.
func (e *Executor) stopAttached(ctx context.Context, a *attach) (*records.Session, error) {
	s := a.s
	if a.ctrl != nil {
		// A signed stop proves the controller as it stops it; one that
		// does not answer is proved (or found gone) as below.
		if st, err := a.ctrl.StopSigned(ctx); err == nil {
			s, err = e.recordFinal(ctx, a.s.ID, st, lostNoEnd)
			return s, a.linkErr(err, "stopping", "it may not have stopped", fmt.Sprintf("`kandev-exec session show %s` once the host answers", a.s.ID))
		}
	}
	err := e.prove(ctx, a) // Stop answers with the status
	var noToken *NoTokenError
	switch {
	case errors.Is(err, errControllerGone):
		s, _, err = e.finalFromHost(ctx, a)
	case errors.As(err, &noToken):
		// Another machine launched it: the host stops the controller it
		// proved to be the session's (SIGTERM, which stops the agent
		// gracefully, then SIGKILL past its grace), then reads how it ended.
		var id controller.Identity
		if id, err = e.probeController(ctx, a, protocol.OpControllerKill); err == nil {
			if id.Alive && id.Ours {
				err = fmt.Errorf("session %s: its controller (pid %d) did not stop; check the host: `kandev-exec task exec %s -- ps -p %d`", s.ID, id.PID, a.t.ID, id.PID)
			} else {
				a.orphan = id.Orphan
				s, _, err = e.finalFromHost(ctx, a)
			}
		}
	case err == nil:
		var st controller.Status
		if st, err = a.ctrl.Stop(ctx); err == nil {
			s, err = e.recordFinal(ctx, a.s.ID, st, lostNoEnd)
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
	// A server that forwards nothing would refuse every connection
	// carried: say so before listening.
	if err := a.hc.c.ForwardingAllowed(ctx); err != nil {
		return a.linkErr(err, "forwarding for", "nothing was forwarded", "")
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		return &UsageError{Msg: fmt.Sprintf("cannot listen on 127.0.0.1:%d: %v", local, err)}
	}
	ready(s.ID, ln.Addr().String())
	err = a.hc.c.Forward(ctx, ln, fmt.Sprintf("127.0.0.1:%d", remote), onErr)
	if ctx.Err() != nil {
		return nil
	}
	return a.linkErr(err, "forwarding for", "the forward ended; the agent keeps running on the host",
		fmt.Sprintf("`kandev-exec session forward %s %d:%d` again once the host answers", a.s.ID, local, remote))
}

// ParseForward reads [LOCAL:]REMOTE.
func ParseForward(spec string) (local, remote int, err error) {
	l, r, ok := strings.Cut(spec, ":")
	if !ok {
		l, r = "0", spec
	}
	if local, err = strconv.Atoi(l); err != nil || local < 0 || local > 65535 {
		return 0, 0, &UsageError{Msg: fmt.Sprintf("bad local port in %q: want [LOCAL:]REMOTE", spec)}
	}
	if remote, err = strconv.Atoi(r); err != nil || remote < 1 || remote > 65535 {
		return 0, 0, &UsageError{Msg: fmt.Sprintf("bad remote port in %q: want [LOCAL:]REMOTE", spec)}
	}
	return local, remote, nil
}
