package executor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/hostops"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// PrepareScriptError is a prepare script that failed; Tail is its output
// with every secret value masked.
type PrepareScriptError struct {
	ExitCode int
	TimedOut bool
	Tail     string
}

func (e *PrepareScriptError) Error() string {
	what := fmt.Sprintf("prepare script exited with status %d", e.ExitCode)
	if e.TimedOut {
		what = "prepare script timed out"
	}
	if tail := strings.TrimSpace(e.Tail); tail != "" {
		return what + "; output tail:\n" + tail
	}
	return what
}

func (e *Executor) prepareTaskDir(ctx context.Context, tc *taskClaim, c *ssh.Client, t *records.Task, lp *launchPlan, helper remoteHelper, info remoteInfo) (string, error) {
	if _, err := tc.update(ctx, "task.preparing", func(x *records.Task) error {
		if x.Phase == records.PhaseAllocating {
			x.Phase = records.PhasePreparing
		}
		return nil
	}); err != nil {
		return "", err
	}
	inst, err := e.installationID(ctx)
	if err != nil {
		return "", err
	}
	req := taskdir.PrepareRequest{Root: info.Root, TaskDir: t.DirName,
		Owner:      taskdir.Owner{InstallationID: inst, TaskID: t.ID, OperationID: t.OperationID, Created: t.CreatedAt},
		TaskBranch: t.Branch, BaseBranch: t.BaseBranch, TimeoutSeconds: int(prepareTimeout(lp.profile).Seconds())}
	for i, r := range lp.profile.Repositories {
		spec := taskdir.Repository{Name: r.Name, URL: r.URL, Branch: r.Branch}
		if i == 0 {
			// The task's base branch is --branch's, else this one's.
			spec.Branch = t.BaseBranch
			if t.Repo != "" {
				spec.URL = t.Repo
			}
		}
		req.Repositories = append(req.Repositories, spec)
	}
	if len(req.Repositories) == 0 && t.Repo != "" {
		req.Repositories = []taskdir.Repository{{Name: "primary", URL: t.Repo, Branch: t.BaseBranch}}
	}
	ctx, cancel := context.WithTimeout(ctx, prepareTimeout(lp.profile)+30*time.Second)
	defer cancel()
	var resp taskdir.PrepareResult
	if err := callHelperOp(ctx, c, t.Host, helper, hostops.OpPrepare, req, &resp); err != nil {
		return "", err
	}
	// Recorded now, so a failed prepare script can be inspected with
	// `task exec`; the phase stays preparing until the script passes.
	if _, err := tc.update(ctx, "task.prepared", func(x *records.Task) error {
		if x.TaskDir == "" {
			// The first prepare that succeeds made the task branch: nothing
			// has run in it yet.
			x.BaseCommit = resp.Head
		}
		x.TaskDir = resp.TaskDirAbs
		return nil
	}); err != nil {
		return "", err
	}
	return resp.TaskDirAbs, nil
}

func (e *Executor) runPrepareScript(ctx context.Context, c *ssh.Client, t *records.Task, lp *launchPlan, helper remoteHelper, dir string, env map[string]string, redact []string) error {
	req := taskdir.RunScriptRequest{Dir: dir, Shell: shellOf(lp.profile), Script: lp.profile.PrepareScript,
		Env: env, Redact: redact, TimeoutSeconds: int(prepareTimeout(lp.profile).Seconds())}
	ctx, cancel := context.WithTimeout(ctx, prepareTimeout(lp.profile)+30*time.Second)
	defer cancel()
	var resp taskdir.RunScriptResult
	if err := callHelperOp(ctx, c, t.Host, helper, hostops.OpRunScript, req, &resp); err != nil {
		return err
	}
	if resp.ExitCode != 0 || resp.TimedOut {
		return &PrepareScriptError{ExitCode: resp.ExitCode, TimedOut: resp.TimedOut, Tail: resp.OutputTail}
	}
	return nil
}
