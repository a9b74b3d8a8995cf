package executor

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
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

// lostMissing: the host answered, and the session's directory is gone.
const lostMissing = "the session's directory is gone from the host, and its controller with it (it stops without it); how the agent ended is not known"

const lostNoEnd = "the controller is gone and recorded no end; the agent may have died with it"

// StaleAfter is the age past which a recorded session state says when it
// was recorded (`session ls`, `task show`), and past which an answer from
// the host that changes nothing is still written down, as checked_at: a
// refresh writes each unchanged session at most once a minute.
const StaleAfter = time.Minute

// recordFinal stores what the controller (or its status file) said, and
// when: checked_at. An empty state means the host keeps no record of the
// session's end: it is lost (lostWhy says more), unless it was already
// known to have ended.
func (e *Executor) recordFinal(ctx context.Context, id string, st controller.Status, lostWhy string) (*records.Session, error) {
	return e.recordObserved(ctx, id, st, lostWhy, "")
}

// recordObserved is recordFinal with the observation made, "" for the
// state the host's answer moves the session to.
func (e *Executor) recordObserved(ctx context.Context, id string, st controller.Status, lostWhy, observed string) (*records.Session, error) {
	now := time.Now().UTC().Truncate(time.Second)
	cur, _, err := records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, id)
	if err != nil {
		return nil, err
	}
	next := *cur
	if err := applyFinal(&next, st, lostWhy, observed, now); err != nil {
		return nil, err
	}
	changed := !reflect.DeepEqual(&next, cur)
	if !changed && cur.CheckedAt != nil && now.Sub(*cur.CheckedAt) < StaleAfter {
		return cur, nil
	}
	event := "session." + string(next.State)
	if !changed {
		event = "session.checked"
	}
	return e.updateSession(ctx, id, event, func(x *records.Session) error {
		x.CheckedAt, x.ObservedAt = &now, &now
		return applyFinal(x, st, lostWhy, observed, now)
	})
}

// applyFinal moves x to what the host said of its session at now (see
// recordObserved), and keeps what was observed.
func applyFinal(x *records.Session, st controller.Status, lostWhy, observed string, now time.Time) error {
	err := moveFinal(x, st, lostWhy, now)
	x.Observation = observed
	if observed == "" {
		x.Observation = string(x.State)
	}
	return err
}

func moveFinal(x *records.Session, st controller.Status, lostWhy string, now time.Time) error {
	x.LogLostBytes = max(x.LogLostBytes, st.LogLostBytes)
	if st.MaxRuntimeAt != nil {
		x.MaxRuntimeAt = st.MaxRuntimeAt
	}
	var to records.SessionState
	switch st.State {
	case controller.StateRunning, controller.StateStarting:
		return x.Move(records.SessionRunning)
	case controller.StateExited, controller.StateStopped:
		x.ExitCode, x.Signal, x.GroupKilled, x.StopReason = st.ExitCode, st.Signal, st.GroupKilled, st.StopReason
		x.EndedProcesses = nil
		for _, p := range st.EndedProcesses {
			x.EndedProcesses = append(x.EndedProcesses, records.Process{PID: p.PID, Name: p.Name})
		}
		if st.EndedAt != nil {
			x.EndedAt = st.EndedAt
		}
		to = records.SessionState(st.State)
	default:
		if isFinal(x.State) && x.State != records.SessionLost {
			return nil
		}
		x.Error, to = lostWhy, records.SessionLost
	}
	if x.EndedAt == nil {
		x.EndedAt = &now
	}
	return x.Move(to)
}

// finalFromHost reads status.json on the host once liveness found the
// controller gone, and records what it says (settleGone). If the agent's
// process group lives on, its id comes back as orphan: the agent runs
// unsupervised.
func (e *Executor) finalFromHost(ctx context.Context, a *attach) (s *records.Session, orphan int, err error) {
	var files protocol.SessionFiles
	if err := a.call(ctx, protocol.OpSessionFiles, protocol.SessionRequest{SessionDir: a.s.SessionDir}, &files); err != nil {
		return nil, 0, err
	}
	if endedOnHost(files) {
		orphan = 0
	} else {
		orphan = a.orphan
	}
	s, err = e.recordGone(ctx, a.s.ID, a.t.ID, files, orphan)
	return s, orphan, err
}

// recordGone records how a session whose controller is gone ended, from
// what its directory holds: the end its controller wrote down, else lost
// (saying so when its agent's process group, orphan, still runs).
func (e *Executor) recordGone(ctx context.Context, sessionID, taskID string, files protocol.SessionFiles, orphan int) (*records.Session, error) {
	if endedOnHost(files) {
		return e.recordFinal(ctx, sessionID, *files.Status, "")
	}
	if files.Missing {
		return e.recordObserved(ctx, sessionID, controller.Status{}, lostMissing, records.ObservedMissing)
	}
	why := lostNoEnd
	if orphan > 0 {
		why = fmt.Sprintf("the controller is gone, but process group %d (the agent's) still runs unsupervised; check it on the host (`kandev-exec task exec %s -- pgrep -l -g %d`) and stop it there",
			orphan, taskID, orphan)
	}
	return e.recordFinal(ctx, sessionID, controller.Status{}, why)
}

// endedOnHost: the controller wrote down how its agent ended.
func endedOnHost(files protocol.SessionFiles) bool {
	st := files.Status
	return st != nil && (st.State == controller.StateExited || st.State == controller.StateStopped)
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
