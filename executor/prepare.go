package executor

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// PrepareScriptError is a prepare script that failed; Tail is its output
// with every secret value masked.
type PrepareScriptError struct {
	ExitCode int
	TimedOut bool
	Tail     string // its last whole lines
	Log      string // where the host keeps the whole output
}

func (e *PrepareScriptError) Error() string {
	what := fmt.Sprintf("prepare script exited with status %d", e.ExitCode)
	if e.TimedOut {
		what = "prepare script timed out"
	}
	if tail := strings.TrimSpace(e.Tail); tail != "" {
		what += "; output tail:\n" + tail
	}
	if e.Log != "" {
		what += "\n(the whole output is kept in " + e.Log + " on the host)"
	}
	return what
}

// prepareRequest records that the task is being prepared and returns the
// request that makes or reuses its directory on the host. The root goes
// as the profile or host sets it: the helper resolves and checks it
// again, and recordPrepared holds the answer to the root the bootstrap
// checked.
func (e *Executor) prepareRequest(ctx context.Context, tc *taskClaim, t *records.Task, lp *launchPlan) (taskdir.PrepareRequest, error) {
	repos := repositoriesOf(t, lp)
	if _, err := tc.update(ctx, "task.preparing", func(x *records.Task) error {
		if x.Phase == records.PhaseAllocating {
			if err := x.Move(records.PhasePreparing); err != nil {
				return err
			}
		}
		// Recorded before anything is cloned: these URLs are what a
		// later reclamation counts as pushed.
		x.Repositories = nil
		for i, r := range repos {
			at := r.Name
			if i == 0 {
				at = "."
			}
			x.Repositories = append(x.Repositories, records.TaskRepository{Path: at, URL: r.URL})
		}
		return nil
	}); err != nil {
		return taskdir.PrepareRequest{}, err
	}
	inst, err := records.InstallationID(ctx, e.cfg.Store, newID("i"))
	if err != nil {
		return taskdir.PrepareRequest{}, err
	}
	return taskdir.PrepareRequest{Root: t.Root, TaskDir: t.DirName,
		Owner:        taskdir.Owner{InstallationID: inst, TaskID: t.ID, OperationID: t.OperationID, Created: t.CreatedAt},
		Repositories: repos, TaskBranch: t.Branch, BaseBranch: t.BaseBranch,
		TimeoutSeconds: int(prepareTimeout(lp.profile).Seconds())}, nil
}

// repositoriesOf is what prepare checks out for t: the profile's
// repositories, the primary's URL and base branch as the task was
// launched with them.
func repositoriesOf(t *records.Task, lp *launchPlan) []taskdir.Repository {
	var repos []taskdir.Repository
	for i, r := range lp.profile.Repositories {
		spec := taskdir.Repository{Name: r.Name, URL: r.URL, Branch: r.Branch}
		if i == 0 {
			// The task's base branch is --branch's, else this one's.
			spec.Branch = t.BaseBranch
			if t.Repo != "" {
				spec.URL = t.Repo
			}
		}
		repos = append(repos, spec)
	}
	if len(repos) == 0 && t.Repo != "" {
		repos = []taskdir.Repository{{Name: "primary", URL: t.Repo, Branch: t.BaseBranch}}
	}
	return repos
}

// stepBound is how long a launch waits for the answer to prepare or
// run-script: past the helper's own timeout, which it reports.
func stepBound(p *profiles.Profile) time.Duration { return prepareTimeout(p) + 30*time.Second }

// recordPrepared records the task directory prepare made, once it is the
// task's under root, the physical root the bootstrap checked.
func (e *Executor) recordPrepared(ctx context.Context, tc *taskClaim, t *records.Task, root string, res taskdir.PrepareResult) (string, error) {
	if want := path.Join(root, "tasks", t.DirName); res.TaskDirAbs != want {
		return "", fmt.Errorf("prepare on %s: the helper prepared %q, not %s under the workdir root the bootstrap checked", t.Host, res.TaskDirAbs, want)
	}
	// Recorded now, so a failed prepare script can be inspected with
	// `task exec`; the phase stays preparing until the script passes.
	if _, err := tc.update(ctx, "task.prepared", func(x *records.Task) error {
		if x.TaskDir == "" {
			// The first prepare that succeeds made the task branch: nothing
			// has run in it yet.
			x.BaseCommit = res.Head
		}
		x.TaskDir = res.TaskDirAbs
		return nil
	}); err != nil {
		return "", err
	}
	return res.TaskDirAbs, nil
}

// PrepareLog is the file in a task directory's .kandev/ that keeps the
// last prepare script's whole output, masked and bounded.
const PrepareLog = "prepare.log"

// runPrepareScript runs the profile's prepare script in dir, through the
// launch's helper, passing each line of its output to output as it comes.
func runPrepareScript(cv *remote.Conversation, lp *launchPlan, dir string, env map[string]string, redact []string, output func(string)) error {
	req := taskdir.RunScriptRequest{Dir: dir, Shell: shellOf(lp.profile), Script: lp.profile.PrepareScript,
		Env: env, Redact: redact, TimeoutSeconds: int(prepareTimeout(lp.profile).Seconds()), Log: PrepareLog}
	if err := cv.Send(protocol.OpRunScript, req); err != nil {
		return err
	}
	var resp taskdir.RunScriptResult
	lines := func(p protocol.Progress) {
		if p.Step == protocol.StepOutput {
			output(p.Line)
		}
	}
	if err := cv.Next(stepBound(lp.profile), &resp, lines); err != nil {
		return err
	}
	if resp.ExitCode != 0 || resp.TimedOut {
		return &PrepareScriptError{ExitCode: resp.ExitCode, TimedOut: resp.TimedOut, Tail: resp.OutputTail,
			Log: path.Join(dir, ".kandev", PrepareLog)}
	}
	return nil
}
