package executor

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/kdlbs/kandev-exec/internal/hostops"
	"github.com/kdlbs/kandev-exec/records"

	"github.com/kdlbs/kandev-exec/controller"
)

// isFinal: states the host can no longer change.
func isFinal(state records.SessionState) bool {
	switch state {
	case records.SessionExited, records.SessionStopped, records.SessionLost, records.SessionFailed:
		return true
	}
	return false
}

const lostNoEnd = "the controller is gone and recorded no end; the agent may have died with it"

// recordFinal stores what the controller (or its status file) said. An
// empty state means the host keeps no record of the session's end: it is
// lost (lostWhy says more), unless it was already known to have ended.
func (e *Executor) recordFinal(ctx context.Context, id string, st controller.Status, lostWhy string) (*records.Session, error) {
	apply := func(x *records.Session) {
		x.LogLostBytes = max(x.LogLostBytes, st.LogLostBytes)
		switch st.State {
		case controller.StateRunning, controller.StateStarting:
			x.State = records.SessionRunning
			return
		case controller.StateExited, controller.StateStopped:
			x.State, x.ExitCode, x.Signal = records.SessionState(st.State), st.ExitCode, st.Signal
			if st.EndedAt != nil {
				x.EndedAt = st.EndedAt
			}
		default:
			if isFinal(x.State) && x.State != records.SessionLost {
				return
			}
			x.State, x.Error = records.SessionLost, lostWhy
		}
		if x.EndedAt == nil {
			now := time.Now().UTC().Truncate(time.Second)
			x.EndedAt = &now
		}
	}
	cur, _, err := records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, id)
	if err != nil {
		return nil, err
	}
	next := *cur
	apply(&next)
	if reflect.DeepEqual(&next, cur) {
		return cur, nil
	}
	return e.updateSession(ctx, id, "session."+string(next.State), func(x *records.Session) error {
		apply(x)
		return nil
	})
}

// finalFromHost reads status.json on the host once liveness found the
// controller gone. A controller that died without writing a final state
// leaves the session lost; if its agent's process group lives on, its id
// comes back as orphan: the agent runs unsupervised.
func (e *Executor) finalFromHost(ctx context.Context, a *attach) (s *records.Session, orphan int, err error) {
	helper, err := e.helperOnHost(ctx, a)
	if err != nil {
		return nil, 0, err
	}
	var files hostops.SessionFiles
	if err := callHelperOp(ctx, a.c, a.s.Host, helper, hostops.OpSessionFiles, hostops.SessionRequest{SessionDir: a.s.SessionDir}, &files); err != nil {
		return nil, 0, err
	}
	if st := files.Status; st != nil && (st.State == controller.StateExited || st.State == controller.StateStopped) {
		s, err = e.recordFinal(ctx, a.s.ID, *st, "")
		return s, 0, err
	}
	why := lostNoEnd
	if a.orphan > 0 {
		why = fmt.Sprintf("the controller is gone, but process group %d (the agent's) still runs unsupervised; check it on the host (`kandev-exec task exec %s -- pgrep -l -g %d`) and stop it there",
			a.orphan, a.t.ID, a.orphan)
	}
	s, err = e.recordFinal(ctx, a.s.ID, controller.Status{}, why)
	return s, a.orphan, err
}

// OrphanError: an earlier session's agent outlived its controller, so a
// new session in the same directory would run beside it (exit 10).
type OrphanError struct {
	TaskID, SessionID string
	PGID              int
}

func (e *OrphanError) Error() string {
	return fmt.Sprintf("task %s: session %s lost its controller, but its agent (process group %d) still runs in the task directory; stop it on the host first (`kandev-exec task exec %s -- pgrep -l -g %d`)",
		e.TaskID, e.SessionID, e.PGID, e.TaskID, e.PGID)
}
