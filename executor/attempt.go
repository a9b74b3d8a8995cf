package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
)

// attempt is one run of a cleanup job, under the task's claim. It keeps
// one connection to the host for all its steps, dialled only when a step
// needs the host.
type attempt struct {
	e        *Executor
	tc       *taskClaim
	job      *records.CleanupJob
	deadline time.Time
	progress func(string)

	hc *hostConn // once a step needed the host
}

func (a *attempt) step(s string) {
	if a.progress != nil {
		a.progress(s)
	}
}

// remaining is what is left of the attempt's budget.
func (a *attempt) remaining() time.Duration { return max(time.Until(a.deadline), 0) }

// connect connects to the task's host (quarantine does not block
// teardown) and starts looking for the helper there, which every helper
// call waits for (openHelper): the drain's talk with the controllers
// goes on meanwhile.
func (a *attempt) connect(ctx context.Context, t *records.Task) error {
	if a.hc != nil {
		return nil
	}
	h, _, err := a.e.getHost(ctx, t.Host)
	if err != nil {
		return err
	}
	hc, err := a.e.connect(ctx, h)
	if err != nil {
		return err
	}
	hc.openHelper(ctx, t.Root)
	a.hc = hc
	return nil
}

// connectHelper is connect, once the helper is found or put in place.
func (a *attempt) connectHelper(ctx context.Context, t *records.Task) error {
	if err := a.connect(ctx, t); err != nil {
		return err
	}
	return a.hc.conv.wait(ctx)
}

func (a *attempt) close() {
	if a.hc != nil {
		a.hc.Close()
	}
}

// run tears the task down as far as it can now: drain, then destroy. It
// returns the task as recorded, and an error when the job must retry.
func (a *attempt) run(ctx context.Context) (*records.Task, error) {
	defer a.close()
	t, _, err := records.Get[records.Task](ctx, a.e.cfg.Store, records.KindTask, a.job.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Phase == records.PhaseAbsent {
		return t, nil // an earlier attempt finished before it could say so
	}
	p, err := a.e.teardownProfile(ctx, t)
	if err != nil {
		return t, err
	}
	// What an interrupted launch left is settled first: a session left
	// starting is either running (and drained below) or failed.
	if t, err = a.e.recoverHeld(ctx, a.tc, t); err != nil {
		return t, err
	}
	if t.Phase != records.PhaseDestroying {
		// A task left destroying was drained by an earlier attempt, and
		// nothing can have started in it since: no launch or resume takes
		// a task that is not launchable.
		if t, err = a.drainStep(ctx, t); err != nil {
			return t, err
		}
	}
	return a.destroyStep(ctx, t, p)
}

// drainStep drains every session and records the outcome: destroying
// when it allows, else cleanup_pending and the host quarantined.
func (a *attempt) drainStep(ctx context.Context, t *records.Task) (*records.Task, error) {
	a.step(StepDraining)
	t, err := a.tc.update(ctx, "task.draining", func(x *records.Task) error {
		td := &records.Teardown{Trigger: a.job.Trigger, ClaimID: a.tc.ID(), Step: records.StepDrain}
		if x.Teardown != nil {
			td.ReclaimRemains = x.Teardown.ReclaimRemains // an interrupted removal outlives its attempt
		}
		x.Teardown = td
		return x.Move(records.PhaseDraining)
	})
	if err != nil {
		return t, err
	}
	outcome, receipts, detail := a.drain(ctx, t)
	if !outcome.Destroys() {
		a.e.quarantineHost(ctx, t.Host, fmt.Sprintf("the drain of task %s was %s: %s", t.ID, outcome, detail),
			actor("task "+string(a.job.Trigger)+" "+t.ID))
		t2, err := a.tc.update(ctx, "task.cleanup_pending", func(x *records.Task) error {
			x.Teardown.Drain, x.Teardown.Reason = outcome, detail
			return x.Move(records.PhaseCleanupPending)
		})
		if err != nil {
			return t, err
		}
		return t2, fmt.Errorf("drain %s: %s", outcome, detail)
	}
	return a.tc.update(ctx, "task.destroying", func(x *records.Task) error {
		x.Teardown.Drain, x.Teardown.Receipts, x.Teardown.Reason = outcome, receipts, detail
		x.Teardown.Step = records.StepCleanup
		return x.Move(records.PhaseDestroying)
	})
}

// fail records a destroy step that could not finish: cleanup_pending,
// directory as it was (a failed reclamation says so, and what a removal
// cut short left, when it says), the job retries.
func (a *attempt) fail(ctx context.Context, t *records.Task, step string, err error, remains ...string) (*records.Task, error) {
	t2, uerr := a.tc.update(context.WithoutCancel(ctx), "task.cleanup_pending", func(x *records.Task) error {
		x.Teardown.Reason = fmt.Sprintf("%s: %v", step, err)
		if step == records.StepReclaim {
			x.Teardown.Reclaim = records.ReclaimFailed
		}
		if len(remains) > 0 {
			x.Teardown.ReclaimRemains = remains
		}
		return x.Move(records.PhaseCleanupPending)
	})
	if uerr != nil {
		return t, fmt.Errorf("%s: %w (and recording it failed: %v)", step, err, uerr)
	}
	return t2, fmt.Errorf("%s: %w", step, err)
}

// envOf is the environment the task's scripts get, resolved like a
// launch's, without an agent and without a session.
func (a *attempt) envOf(t *records.Task, p *profiles.Profile) (map[string]string, []string, error) {
	launch, err := profiles.ParseLaunchEnv(t.LaunchEnv)
	if err != nil {
		return nil, nil, err
	}
	runtime := map[string]string{profiles.EnvTaskID: t.ID, profiles.EnvSessionID: "", profiles.EnvTaskDir: t.TaskDir}
	defs := profiles.Assemble(runtime, p, nil, launch)
	env, _, err := profiles.Resolve(defs, a.e.vault.Reveal)
	if err != nil {
		return nil, nil, err
	}
	return env, redactions(defs, env), nil
}
