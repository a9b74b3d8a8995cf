package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/crashpoint"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// Destroy, once the drain allows it: the profile's cleanup script against
// the intact directory, then reclamation if the profile opts in. The
// proof that nothing of value is lost is the host's (reclaim/): a skip
// keeps the directory and is a correct end; a failure is retried.

// destroyStep runs the cleanup script and the reclamation, and records
// where the task ends: absent, archived (directory kept, with the
// reason), or cleanup_pending (retried).
func (a *attempt) destroyStep(ctx context.Context, t *records.Task, p *profiles.Profile) (*records.Task, error) {
	// An earlier attempt that got as far as reclaiming ran the script
	// already: its directory may be gone since.
	if p.CleanupScript != "" && t.TaskDir != "" && t.Teardown.Step != records.StepReclaim {
		a.step(StepCleanup)
		out, err := a.cleanupScript(ctx, t, p)
		if err != nil {
			return a.fail(ctx, t, "cleanup script", err)
		}
		crashpoint.Hit("cleanup.ran")
		if t, err = a.tc.update(ctx, "task.destroying", func(x *records.Task) error {
			x.Teardown.CleanupOutput, x.Teardown.Step = out, records.StepReclaim
			return nil
		}); err != nil {
			return t, err
		}
	}
	a.step(StepReclaim)
	if !p.ReclaimTaskDir {
		return a.tc.update(ctx, "task.archived", func(x *records.Task) error {
			x.Teardown.Step, x.Teardown.Reclaim = records.StepReclaim, records.ReclaimDisabled
			x.Teardown.Reason = fmt.Sprintf("profile %s does not set reclaim_task_dir: the directory stays", p.Name)
			return x.Move(records.PhaseArchived)
		})
	}
	r, err := a.reclaimDir(ctx, t)
	if err != nil {
		return a.fail(ctx, t, records.StepReclaim, err)
	}
	crashpoint.Hit("reclaim.applied")
	switch r.Outcome {
	case reclaim.Removed:
		// Apply removed it and then saw neither it nor a half-removed
		// copy: with this checkpoint of the current claim, absent.
		return a.tc.update(ctx, "task.absent", func(x *records.Task) error {
			x.Teardown.Step, x.Teardown.Reclaim, x.Teardown.Reason = records.StepReclaim, records.ReclaimRemoved, r.Detail
			x.Teardown.ReclaimRemains, x.Teardown.Proof = nil, proofRecord(*r)
			return x.Move(records.PhaseAbsent)
		})
	case reclaim.Skipped:
		return a.tc.update(ctx, "task.archived", func(x *records.Task) error {
			x.Teardown.Step, x.Teardown.Reclaim = records.StepReclaim, records.ReclaimSkipped
			x.Teardown.Reason = string(r.Reason)
			if r.Detail != "" {
				x.Teardown.Reason += ": " + r.Detail
			}
			return x.Move(records.PhaseArchived)
		})
	}
	return a.fail(ctx, t, records.StepReclaim, fmt.Errorf("%s: %s", r.Reason, r.Detail), r.Remains...)
}

// cleanupScript runs the profile's cleanup script in the task directory,
// bounded by what is left of the budget, and returns its output tail with
// every secret masked.
func (a *attempt) cleanupScript(ctx context.Context, t *records.Task, p *profiles.Profile) (string, error) {
	if err := a.connectHelper(ctx, t); err != nil {
		return "", err
	}
	env, redact, err := a.envOf(t, p)
	if err != nil {
		return "", err
	}
	limit := max(a.remaining()-10*time.Second, time.Second)
	req := taskdir.RunScriptRequest{Dir: t.TaskDir, Shell: shellOf(p), Script: p.CleanupScript, Env: env, Redact: redact,
		TimeoutSeconds: int(limit.Seconds())}
	cctx, cancel := context.WithTimeout(ctx, limit+30*time.Second)
	defer cancel()
	var res taskdir.RunScriptResult
	if err := a.hc.call(cctx, t.Root, protocol.OpRunScript, req, &res); err != nil {
		return "", err
	}
	if res.TimedOut {
		return res.OutputTail, fmt.Errorf("timed out after %s; output tail:\n%s", limit, res.OutputTail)
	}
	if res.ExitCode != 0 {
		return res.OutputTail, fmt.Errorf("exited with status %d; output tail:\n%s", res.ExitCode, res.OutputTail)
	}
	return res.OutputTail, nil
}

// reclaimDir asks the host to prove the task directory safe to remove
// and, if it is, to remove it: one helper call.
func (a *attempt) reclaimDir(ctx context.Context, t *records.Task) (*reclaim.Result, error) {
	if err := a.connectHelper(ctx, t); err != nil {
		return nil, err
	}
	inst, err := records.InstallationID(ctx, a.e.cfg.Store, newID("i"))
	if err != nil {
		return nil, err
	}
	req := reclaim.Request{
		Targets: []reclaim.Target{{Root: a.hc.info.Root, Dir: t.DirName, InstallationID: inst, TaskID: t.ID, Enabled: true,
			Upstreams: upstreamsOf(t), Remains: t.Teardown.ReclaimRemains}},
		TimeoutSeconds: int(max(a.remaining(), 10*time.Second).Seconds()),
	}
	var rep reclaim.Report
	if err := a.hc.call(ctx, t.Root, protocol.OpReclaimApply, req, &rep); err != nil {
		return nil, err
	}
	if len(rep.Results) != 1 {
		return nil, fmt.Errorf("the host answered %d results for one directory", len(rep.Results))
	}
	return &rep.Results[0], nil
}
