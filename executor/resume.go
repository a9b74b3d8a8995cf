package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/records"
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

// Resume starts a new session in the task's preserved directory, once
// every earlier session is proven finished. If the host cannot tell (SSH
// fails), nothing is started.
func (e *Executor) Resume(ctx context.Context, prefix string, command []string, r Reports) (*records.Task, *records.Session, error) {
	t, _, err := e.GetTask(ctx, prefix)
	if err != nil {
		return nil, nil, err
	}
	if !t.Phase.Launchable() {
		return nil, nil, &UsageError{Msg: fmt.Sprintf("task %s is %s: it cannot be resumed", t.ID, t.Phase)}
	}
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
	// Under the task's claim: two resumes at once would both find the
	// earlier sessions finished, and an archive must not run beside one.
	tc, err := e.claimTask(ctx, t.ID)
	if err != nil {
		return nil, nil, err
	}
	defer tc.release(ctx)
	ctx, stop := e.keep(ctx, tc.Held)
	defer stop()
	// What an interrupted launch left is settled first (recover.go); the
	// task as now recorded decides.
	if t, err = e.recoverHeld(ctx, tc, t); err != nil {
		return nil, nil, err
	}
	if !t.Phase.Launchable() {
		return nil, nil, &UsageError{Msg: fmt.Sprintf("task %s is %s: it cannot be resumed", t.ID, t.Phase)}
	}
	// An archive asked for but not begun is called off: the task is
	// being worked on again.
	if err := e.cancelJob(ctx, t.ID); err != nil {
		return nil, nil, err
	}
	for _, id := range t.Sessions {
		if err := e.ensureFinished(ctx, t, id); err != nil {
			return nil, nil, err
		}
	}
	if t, err = takeProfile(ctx, tc, t, lp, r.Warn); err != nil {
		return nil, nil, err
	}
	s, err := e.startSession(ctx, tc, t, lp, r)
	err = lostClaim(ctx, err)
	if t2, _, gerr := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, t.ID); gerr == nil {
		t = t2
	}
	return t, s, err
}

// ensureFinished proves an earlier session is no longer running.
func (e *Executor) ensureFinished(ctx context.Context, t *records.Task, id string) error {
	s, _, err := records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, id)
	if err != nil {
		return err
	}
	// A lost session's agent may have outlived its controller: ask again.
	if isFinal(s.State) && (s.State != records.SessionLost || s.SessionDir == "") {
		return nil
	}
	cannotTell := func(err error) error {
		return fmt.Errorf("task %s: cannot tell whether session %s still runs, so no new session was started: %w", t.ID, id, err)
	}
	if s.State == records.SessionStarting {
		// Interrupted launches were settled above: this one is under way.
		return &ActiveSessionError{TaskID: t.ID, SessionID: id, Starting: true}
	}
	a, err := e.attachSession(ctx, s)
	if err != nil {
		return cannotTell(err)
	}
	defer a.Close()
	st, err := e.liveness(ctx, a)
	switch {
	case errors.Is(err, errControllerGone):
		var orphan int
		if _, orphan, err = e.finalFromHost(ctx, a); err == nil && orphan > 0 {
			return &OrphanError{TaskID: t.ID, SessionID: id, PGID: orphan}
		}
	case err == nil && (st.State == controller.StateRunning || st.State == controller.StateStarting):
		return &ActiveSessionError{TaskID: t.ID, SessionID: id}
	case err == nil:
		_, err = e.recordFinal(ctx, id, st, lostNoEnd)
	}
	if err != nil {
		return cannotTell(a.linkErr(err, "checking", "its state is unknown", ""))
	}
	return nil
}

// takeProfile: a task that never got a checkout takes the primary
// repository and base branch of its profile as the profile is now (a
// launch that failed on a wrong branch is fixed in the profile), except
// what the launch's --repo or --branch gave. One with a checkout keeps
// what it was made from, and says so (warn) when the profile now differs.
func takeProfile(ctx context.Context, tc *taskClaim, t *records.Task, lp *launchPlan, warn func(string)) (*records.Task, error) {
	if len(lp.profile.Repositories) == 0 {
		return t, nil
	}
	now := lp.profile.Repositories[0]
	repo, base := t.Repo, t.BaseBranch
	if !t.RepoGiven {
		repo = now.URL
	}
	if !t.BaseGiven {
		base = now.Branch
	}
	if repo == t.Repo && base == t.BaseBranch {
		return t, nil
	}
	if t.TaskDir != "" {
		if warn != nil {
			warn(fmt.Sprintf("task %s keeps repository %s and base branch %s from its launch: its checkout was made from them (profile %s now says %s, %s; a new task takes that: `kandev-exec task launch --profile %s`)",
				t.ID, t.Repo, orDefault(t.BaseBranch), lp.profile.Name, repo, orDefault(base), lp.profile.Name))
		}
		return t, nil
	}
	return tc.update(ctx, "task.profile", func(x *records.Task) error {
		x.Repo, x.BaseBranch = repo, base
		return nil
	})
}

// orDefault names an empty base branch: origin's default.
func orDefault(branch string) string {
	if branch == "" {
		return "(origin's default)"
	}
	return branch
}
