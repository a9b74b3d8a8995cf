package task

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ResumeOptions are `task resume`'s inputs.
type ResumeOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Follow   bool
	ID       string
	Command  []string
}

// NewCmdResume is `task resume ID [-- CMD...]`.
func NewCmdResume(f *cmdutil.Factory, runF func(context.Context, *ResumeOptions) error) *cobra.Command {
	opts := &ResumeOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "resume ID [-- CMD...]",
		Short: "Start a new session in the task's preserved directory",
		Long: `Start a new session in the task's preserved directory, once every earlier
session is proven finished. The profile is read as it is now: its prepare
script and environment, and, for a task that has no checkout yet (a launch
that failed before one), its repository and base branch too, unless the
launch gave them with --repo or --branch. A task with a checkout keeps the
repository and base branch it was made from, and says so when the profile
now names others.`,
		Args:              cmdutil.CommandArgs(1, false, "a task ID"),
		ValidArgsFunction: completeTasks(f),
		RunE: func(c *cobra.Command, args []string) error {
			opts.ID, opts.Command, opts.JSON = args[0], args[1:], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return resumeRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "stream the agent's output and exit with its exit code")
	return c
}

func resumeRun(ctx context.Context, o *ResumeOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if t, _, err := ex.GetTask(ctx, o.ID); err == nil {
		warnUnmasked(ctx, o.IO, ex, executor.EnvOptions{Profile: t.Profile, Agent: t.Agent, Launch: t.LaunchEnv}, o.JSON)
	}
	p := cmdutil.NewProgress(o.IO, o.JSON)
	t, s, err := ex.Resume(ctx, o.ID, o.Command, executor.Reports{Progress: p.Step, Warn: p.Warn, Output: p.Output})
	p.Done(err == nil)
	if err != nil {
		return launchFailed(err, t)
	}
	return afterStart(ctx, o.IO, ex, t, s, o.Follow, o.JSON, nil)
}
