package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
)

// StartedSession is the session prefix names, once its controller was
// started (a *NotStartedError before that): what a command that follows
// or waits for an agent checks before its own failures count as the
// tool's.
func (e *Executor) StartedSession(ctx context.Context, prefix string) (*records.Session, error) {
	return e.startedSession(ctx, prefix)
}

// WaitTimeoutError: the wait's bound passed with the agent still running
// (exit 8, or 255 `pending` by the rule for commands that follow an agent).
type WaitTimeoutError struct {
	SessionID string
	Timeout   time.Duration
}

func (e *WaitTimeoutError) Error() string {
	return fmt.Sprintf("session %s is still running after %s; wait again: `kandev-exec session wait %s`", e.SessionID, e.Timeout, e.SessionID)
}

// Waiting backs off between dials of a host whose link died, up to
// waitBackoffMax, until the wait's bound.
const (
	waitBackoffMin = 500 * time.Millisecond
	waitBackoffMax = 10 * time.Second
	noTokenPoll    = 2 * time.Second
)

// WaitSession blocks until the session's agent has ended and returns the
// session as recorded then; one that already ended returns at once.
// Waiting holds one connection to the host: a link that dies is dialled
// again, with backoff, and is never taken for the end. timeout (0: none)
// bounds the wait: past it a *WaitTimeoutError, or the link's failure
// when the host was unreachable then.
func (e *Executor) WaitSession(ctx context.Context, s *records.Session, timeout time.Duration) (*records.Session, error) {
	if isFinal(s.State) {
		return s, nil
	}
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	delay := waitBackoffMin
	var down error // the link's failure while it is down
	for {
		final, connected, err := e.waitOnce(wctx, s)
		switch {
		case err == nil:
			return final, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case wctx.Err() != nil && !connected && down != nil:
			return nil, down
		case wctx.Err() != nil && !connected && linkDown(err):
			return nil, err
		case wctx.Err() != nil:
			return nil, &WaitTimeoutError{SessionID: s.ID, Timeout: timeout}
		case !linkDown(err):
			return nil, err
		}
		if connected {
			delay = waitBackoffMin // it was up: the next dial comes soon
		}
		if down == nil {
			e.observeUnreachable(ctx, err, s.ID)
		}
		down = err
		select {
		case <-wctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, waitBackoffMax)
	}
}

// linkDown: err says the host cannot be reached or the link died (or a
// step's own deadline passed on it), so dialling again may help.
func linkDown(err error) bool {
	var se *ssh.Error
	if errors.As(err, &se) {
		return se.Class == ssh.ClassNetwork || se.Class == ssh.ClassTimeout
	}
	var lost *ssh.LostError
	var closed *ssh.HandshakeClosedError
	return errors.As(err, &lost) || errors.As(err, &closed) || errors.Is(err, context.DeadlineExceeded)
}

// waitOnce waits on one connection; connected says it was made.
func (e *Executor) waitOnce(ctx context.Context, s *records.Session) (*records.Session, bool, error) {
	a, err := e.attachSession(ctx, s)
	if err != nil {
		return nil, false, err
	}
	defer a.Close()
	final, err := e.waitAttached(ctx, a)
	return final, true, a.linkErr(err, "waiting for", "the agent keeps running on the host",
		fmt.Sprintf("`kandev-exec session wait %s` again once the host answers", s.ID))
}

// waitAttached waits for the agent's end on a's connection: the
// controller's log stream ends with the agent; without this machine's
// token the host is asked on the same connection now and then.
func (e *Executor) waitAttached(ctx context.Context, a *attach) (*records.Session, error) {
	for {
		st, err := e.liveness(ctx, a)
		var noToken *NoTokenError
		switch {
		case errors.Is(err, errControllerGone):
			s, _, err := e.finalFromHost(ctx, a)
			return s, err
		case errors.As(err, &noToken):
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(noTokenPoll):
			}
			continue
		case err != nil:
			return nil, err
		}
		var end *controller.Status
		if _, end, err = a.ctrl.LogsThenStatus(ctx, controller.LogPos{Offset: st.LogBytes}, true, io.Discard, nil); err == nil {
			if st, err = a.endStatus(ctx, end); err == nil {
				return e.recordFinal(ctx, a.s.ID, st, lostNoEnd)
			}
		}
		if ctx.Err() != nil || a.hc.wd.Check() != nil {
			return nil, err
		}
		// The controller may have died mid-wait: prove says so.
		if lerr := e.prove(ctx, a); !errors.Is(lerr, errControllerGone) {
			return nil, err
		}
	}
}
