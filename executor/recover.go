package executor

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/kdlbs/kandev-exec/records"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/state"
)

// A launch records its intent, claimed, before anything happens on the
// host, and holds the task's claim until it ends (claims.go). If it dies
// mid-way, its claim can be taken: the next command that looks takes it
// and settles what the launch left. A session whose controller answers
// with the saved token is adopted; one the host shows never started is
// marked failed. While the claim is held the launch is under way, and
// nothing is settled.

// controllerStartBound is past the longest `controller start` runs: the
// program lookup, the ready handshake and the proof the helper asks for
// are bounded by 15 s each.
const controllerStartBound = time.Minute

func sessionDirOf(taskDir, sessionID string) string {
	return path.Join(taskDir, ".kandev", "sessions", sessionID)
}

// RecoverTasks settles what interrupted launches left in ts's records and
// returns the tasks as now recorded. Without remote it settles only what
// the records prove (no controller start was attempted) and returns the
// sessions that need the host to tell; with remote it asks the host.
func (e *Executor) RecoverTasks(ctx context.Context, ts []*records.Task, remote bool) ([]*records.Task, []*records.Session, error) {
	sessions, _, err := records.List[records.Session](ctx, e.cfg.Store, records.KindSession)
	if err != nil {
		return ts, nil, err
	}
	byID := map[string]*records.Session{}
	for _, s := range sessions {
		byID[s.ID] = s
	}
	var pending []*records.Session
	out := make([]*records.Task, len(ts))
	for i, t := range ts {
		out[i] = t
		changed, p, err := e.recoverTask(ctx, t, byID, remote)
		pending = append(pending, p...)
		if err != nil {
			return out, pending, err
		}
		if changed {
			if t2, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, t.ID); err == nil {
				out[i] = t2
			}
		}
	}
	return out, pending, nil
}

func (e *Executor) recoverTask(ctx context.Context, t *records.Task, byID map[string]*records.Session, remote bool) (changed bool, pending []*records.Session, err error) {
	if !needsRecovery(t, byID) {
		return false, nil, nil
	}
	tc, err := e.claimTask(ctx, t.ID)
	var busy *TaskBusyError
	if errors.As(err, &busy) {
		return false, nil, nil // its launch is under way
	}
	if err != nil {
		return false, nil, err
	}
	defer tc.release(ctx)
	kctx, stop := e.keep(ctx, tc.Held)
	defer stop()
	changed, pending, err = e.recoverClaimed(kctx, tc, t, byID, remote)
	return changed, pending, lostClaim(kctx, err)
}

// recoverHeld settles t under a claim this process already holds, and
// returns it as now recorded.
func (e *Executor) recoverHeld(ctx context.Context, tc *taskClaim, t *records.Task) (*records.Task, error) {
	sessions, _, err := records.List[records.Session](ctx, e.cfg.Store, records.KindSession)
	if err != nil {
		return t, err
	}
	byID := map[string]*records.Session{}
	for _, s := range sessions {
		byID[s.ID] = s
	}
	if !needsRecovery(t, byID) {
		return t, nil
	}
	if _, _, err := e.recoverClaimed(ctx, tc, t, byID, true); err != nil {
		return t, err
	}
	t2, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, t.ID)
	return t2, err
}

// needsRecovery: a launch left the task without its session recorded, or
// left a session starting.
func needsRecovery(t *records.Task, byID map[string]*records.Session) bool {
	if t.Phase == records.PhaseAllocating && len(t.Sessions) == 0 && t.Error == "" {
		return true
	}
	for _, id := range t.Sessions {
		if s := byID[id]; s != nil && s.State == records.SessionStarting {
			return true
		}
	}
	return false
}

// recoverClaimed settles, under the task's claim, what the launch that
// held it before left.
func (e *Executor) recoverClaimed(ctx context.Context, tc *taskClaim, t *records.Task, byID map[string]*records.Session, remote bool) (changed bool, pending []*records.Session, err error) {
	if t.Phase == records.PhaseAllocating && len(t.Sessions) == 0 && t.Error == "" {
		_, err := tc.update(ctx, "task.error", func(x *records.Task) error {
			if len(x.Sessions) > 0 || x.Error != "" {
				return errSettled
			}
			x.Error = "launch interrupted before its session was recorded"
			return nil
		})
		return true, nil, ignoreSettled(err)
	}
	for _, id := range t.Sessions {
		s := byID[id]
		if s == nil || s.State != records.SessionStarting {
			continue
		}
		switch {
		case s.ControllerStartAt == nil:
			e.markFailed(ctx, tc, s.ID, fmt.Sprintf("launch interrupted while the task was %s, before any controller start (%s)", t.Phase, launcherGone(s)))
		case !remote:
			pending = append(pending, s)
			continue
		default:
			if err := e.settleOnHost(ctx, tc, t, s); err != nil {
				return true, pending, err
			}
		}
		changed = true
	}
	return changed, pending, nil
}

// launcherGone says why the launch is known to have ended: its claim
// could be taken.
func launcherGone(s *records.Session) string {
	switch {
	case s.Launcher == nil:
		return "no launcher recorded"
	case state.ProvablyGone(*s.Launcher):
		return fmt.Sprintf("kandev-exec pid %d is gone", s.Launcher.PID)
	}
	return fmt.Sprintf("kandev-exec pid %d on %s let its claim on the task lapse", s.Launcher.PID, s.Launcher.Host)
}

func ignoreSettled(err error) error {
	if err == errSettled {
		return nil
	}
	return err
}

// settleOnHost looks in the session's would-be directory: no pid file
// means no controller ever ran; a controller that answers with the saved
// token is adopted; a pid that is alive but does not answer is left alone.
func (e *Executor) settleOnHost(ctx context.Context, tc *taskClaim, t *records.Task, s *records.Session) error {
	cannotTell := func(err error) error {
		return fmt.Errorf("task %s on %s: session %s's launch was interrupted, and the host cannot tell what became of it: %w", t.ID, t.Host, s.ID, err)
	}
	h, _, err := e.getHost(ctx, t.Host)
	if err != nil {
		return cannotTell(err)
	}
	hc, err := e.connect(ctx, h)
	if err != nil {
		return cannotTell(err)
	}
	defer hc.Close()
	dir := sessionDirOf(t.TaskDir, s.ID)
	var files protocol.SessionFiles
	if err := hc.call(ctx, t.Root, protocol.OpSessionFiles, protocol.SessionRequest{SessionDir: dir}, &files); err != nil {
		return cannotTell(err)
	}
	if files.PID == 0 {
		// `controller start` may still be at work on the host after its
		// client died; it gives up well within the bound.
		if s.ControllerStartAt != nil && time.Since(*s.ControllerStartAt) < controllerStartBound {
			return cannotTell(fmt.Errorf("its controller start began %s ago and may still finish; ask again in a minute", time.Since(*s.ControllerStartAt).Round(time.Second)))
		}
		e.markFailed(ctx, tc, s.ID, fmt.Sprintf("launch interrupted before its controller started (%s)", launcherGone(s)))
		return nil
	}
	if token, err := e.vault.LoadToken(s.ID); err == nil && files.Port > 0 {
		if hl, err := hc.controller(t.Root, files.Port, token).Health(ctx); err == nil {
			return ignoreSettled(e.adopt(ctx, s.ID, dir, files.Port, hl))
		}
	}
	var id controller.Identity
	if err := hc.call(ctx, t.Root, protocol.OpControllerProbe, protocol.SessionRequest{SessionDir: dir}, &id); err != nil {
		return cannotTell(err)
	}
	if id.Alive {
		return cannotTell(fmt.Errorf("pid %d from %s is alive but does not answer; not touching it (check: `kandev-exec task exec %s -- ps -p %d`)", id.PID, dir, t.ID, id.PID))
	}
	var st controller.Status
	if files.Status != nil {
		st = *files.Status
	}
	return ignoreSettled(e.settleGone(ctx, s.ID, dir, st))
}

// adopt records a controller that proved itself with the saved token.
func (e *Executor) adopt(ctx context.Context, id, dir string, port int, hl controller.Health) error {
	_, err := e.updateSession(ctx, id, "session.adopted", func(x *records.Session) error {
		if x.State != records.SessionStarting {
			return errSettled
		}
		x.PID, x.StartTime, x.RemotePort, x.SessionDir = hl.PID, hl.StartTime, port, dir
		return x.Move(records.SessionRunning)
	})
	return err
}

// settleGone records a session whose controller ran and is gone: how the
// agent ended if the controller wrote it down, else lost.
func (e *Executor) settleGone(ctx context.Context, id, dir string, st controller.Status) error {
	_, err := e.updateSession(ctx, id, "session.settled", func(x *records.Session) error {
		if x.State != records.SessionStarting {
			return errSettled
		}
		x.SessionDir, x.EndedAt = dir, st.EndedAt
		if x.EndedAt == nil {
			now := time.Now().UTC().Truncate(time.Second)
			x.EndedAt = &now
		}
		switch st.State {
		case controller.StateExited, controller.StateStopped:
			x.ExitCode = st.ExitCode
			return x.Move(records.SessionState(st.State))
		}
		x.Error = "launch interrupted; its controller is gone and recorded no end"
		return x.Move(records.SessionLost)
	})
	return err
}
