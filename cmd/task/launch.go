package task

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// LaunchOptions are `task launch`'s inputs.
type LaunchOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Follow   bool
	Launch   executor.LaunchOptions
}

// NewCmdLaunch is `task launch --profile P [...] [-- CMD [ARG...]]`.
func NewCmdLaunch(f *cmdutil.Factory, runF func(context.Context, *LaunchOptions) error) *cobra.Command {
	opts := &LaunchOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "launch --profile P [flags] [-- CMD [ARG...]]",
		Short: "Launch a task: its own checkout on the host and an agent session in it",
		Long: `Launch a task on the profile's host: upload the helper if needed, prepare
<root>/tasks/<task>/ (clone or fetch, task branch, prepare script), and start
a session controller that runs the command and outlives this connection.
The command is the --agent preset's command plus ARGs, or CMD without --agent.

The command's program is looked up on the host first, the way it will run
(the profile's shell as a login shell, with the agent's environment): a
missing one fails the launch before anything is checked out. With a prepare
script, which may install it, the launch warns and looks again after the
script; a path inside the checkout (./agent.sh) is looked up after the
checkout. No agent starts without its program. A failed launch keeps its task:
` + "`task show`" + ` says why, ` + "`task resume`" + ` retries in the same directory. Ctrl-C
before the controller starts stops the checkout or the prepare script on the
host (exit 130); after, the agent keeps running. A launch
cut short (a crash, a kill) is settled by the next ` + "`task ls`, `task show`" + ` or
` + "`task resume`" + `.

With --follow the command exits as the agent did (its code, 128+N for signal
N); once the agent started, a failure of this tool (the host unreachable, the
session lost) is 255, the error naming it, and Ctrl-C is 130.

With --idempotency-key KEY the launch happens once per KEY: running it again
with the same request starts nothing and answers as the first launch ended
(its exit code, or its task and session; "reused": true with --json), after
waiting for it or settling it if it was cut short. KEY with another request
is exit 10.`,
		Example: `  kandev-exec task launch --profile prod -- claude -p "fix the flaky test"
  kandev-exec task launch --profile prod --agent claude --follow -- -p "fix it"
  kandev-exec task launch --profile prod --idempotency-key "$CI_JOB_ID" --json -- ./agent.sh`,
		Args: cmdutil.CommandArgs(0, false, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.JSON, opts.Launch.Command = f.JSON(), args
			if opts.Launch.Profile == "" {
				return cmdutil.FlagErrorf("--profile is required")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return launchRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Launch.Profile, "profile", "", "executor profile (required)")
	fl.StringVar(&opts.Launch.Agent, "agent", "", "agent preset: its command and env")
	fl.StringVar(&opts.Launch.Repo, "repo", "", "primary repository URL (overrides the profile's)")
	fl.StringVar(&opts.Launch.Branch, "branch", "", "base branch for the task branch (default: the profile's)")
	fl.StringVar(&opts.Launch.Name, "name", "", "a name for the task, unique among live tasks (exit 10 when taken)")
	fl.StringArrayVar(&opts.Launch.Env, "env", nil, "KEY=VALUE for the agent (repeatable; literals only)")
	fl.BoolVarP(&opts.Follow, "follow", "f", false, "stream the agent's output and exit with its exit code")
	fl.DurationVar(&opts.Launch.MaxRuntime, "max-runtime", 0, "stop the agent after `D` (may only shorten the profile's max_runtime)")
	fl.StringVar(&opts.Launch.IdempotencyKey, "idempotency-key", "", "launch once per KEY: a retry with it answers as the first launch ended")
	_ = c.RegisterFlagCompletionFunc("profile", cmdutil.CompleteNames(f, 0, func(ex *executor.Executor, ctx context.Context) ([]string, error) { return ex.ProfileNames(ctx) }))
	_ = c.RegisterFlagCompletionFunc("agent", cmdutil.CompleteNames(f, 0, func(ex *executor.Executor, ctx context.Context) ([]string, error) { return ex.AgentNames(ctx) }))
	return c
}

func launchRun(ctx context.Context, o *LaunchOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	warnUnmasked(ctx, o.IO, ex, executor.EnvOptions{Profile: o.Launch.Profile, Agent: o.Launch.Agent, Launch: o.Launch.Env}, o.JSON)
	p := cmdutil.NewProgress(o.IO, o.JSON)
	o.Launch.Progress, o.Launch.Warn, o.Launch.Output = p.Step, p.Warn, p.Output
	o.Launch.Outcome = launchOutcome
	ans, err := ex.LaunchOnce(ctx, o.Launch)
	p.Done(err == nil && ans.Failed == nil)
	if err == nil && ans.Failed != nil {
		err = reusedFailure(ans.Failed)
	}
	if err != nil {
		err = launchFailed(err, ans.Task)
		if ans.Task != nil && o.JSON {
			if werr := writeLaunched(o.IO, ans.Task, ans.Session, &ans.Reused); werr != nil {
				return werr
			}
		}
		return err
	}
	if ans.Reused && !o.JSON {
		fmt.Fprintf(o.IO.ErrOut, "Launched earlier with idempotency key %s: nothing new started\n", cmdutil.SafeText(o.Launch.IdempotencyKey))
	}
	return afterStart(ctx, o.IO, ex, ans.Task, ans.Session, o.Follow, o.JSON, &ans.Reused)
}

// launchOutcome is how a failed launch is reported, kept for a retry with
// its idempotency key.
func launchOutcome(err error, t *records.Task) records.LaunchOutcome {
	err = launchFailed(err, t)
	info := cmdutil.Classify(err)
	return records.LaunchOutcome{Exit: info.Exit, Code: info.Code, Message: err.Error(), Hint: info.Hint}
}

// reusedFailure reports again how the launch an idempotency key belongs
// to failed.
func reusedFailure(out *records.LaunchOutcome) error {
	err := error(&cmdutil.ExitCodeError{Code: out.Exit, JSON: out.Code, Msg: out.Message})
	if out.Hint != "" {
		err = cmdutil.WithHint(err, out.Hint)
	}
	return err
}

// writeLaunched is a launch's or a resume's JSON document; a launch says
// whether it was reused.
func writeLaunched(ios *cmdutil.IOStreams, t *records.Task, s *records.Session, reused *bool) error {
	doc := map[string]any{"task": viewOf(t, nil)}
	if reused != nil {
		doc["reused"] = *reused
	}
	if s != nil {
		doc["session"] = executor.ViewOf(s)
	}
	return cmdutil.WriteJSON(ios.Out, doc)
}

// afterStart reports a started session, and follows it when asked.
func afterStart(ctx context.Context, ios *cmdutil.IOStreams, ex *executor.Executor, t *records.Task, s *records.Session, follow, asJSON bool, reused *bool) error {
	if !follow {
		if asJSON {
			return writeLaunched(ios, t, s, reused)
		}
		fmt.Fprintf(ios.Out, "Task %s: session %s running on %s in %s\n", t.ID, s.ID, t.Host, cmdutil.Safe(t.TaskDir))
		fmt.Fprintf(ios.ErrOut, "Follow it: kandev-exec session logs -f %s\n", s.ID)
		return nil
	}
	var logs io.Writer = ios.Out
	if asJSON {
		logs = ios.ErrOut // stdout carries the final JSON only
	}
	final, err := ex.StreamLogs(ctx, s.ID, true, logs)
	if err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			fmt.Fprintf(ios.ErrOut, "\nStopped following; the agent keeps running: kandev-exec session logs -f %s\n", s.ID)
		}
		if asJSON {
			if werr := writeLaunched(ios, t, s, reused); werr != nil {
				return werr
			}
		}
		return cmdutil.ToolFailed(err)
	}
	if asJSON {
		if err := writeLaunched(ios, t, final, reused); err != nil {
			return err
		}
	}
	return cmdutil.AgentExit(final)
}

func launchFailed(err error, t *records.Task) error {
	if t == nil {
		return err
	}
	var le *executor.LaunchError
	if errors.As(err, &le) && le.Step == executor.StepConnectingCtrl {
		return cmdutil.WithHint(err, fmt.Sprintf("the agent was started and may be running: `kandev-exec session logs -f %s` once %s answers", le.SessionID, le.Host))
	}
	if errors.As(err, new(*executor.InterruptedError)) {
		return cmdutil.WithHint(err, fmt.Sprintf("no agent was started; `kandev-exec task resume %s` carries on in the same task directory", t.ID))
	}
	return cmdutil.WithHint(err, fmt.Sprintf("the task record stays for inspection: `kandev-exec task show %s`; after fixing the cause, `kandev-exec task resume %s`", t.ID, t.ID))
}
