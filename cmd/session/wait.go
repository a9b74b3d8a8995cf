package session

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// NewCmdWait is `session wait ID [--timeout D]`.
func NewCmdWait(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	c := newVerb(f, "wait ID", "Wait until a session's agent has ended, and exit with its status", 1, runF, waitRun,
		func(c *cobra.Command, o *Options) {
			c.Flags().DurationVar(&o.Timeout, "timeout", 0, cmdutil.WaitTimeoutUsage)
		})
	c.Long = cmdutil.WaitHelp("the session's agent")
	c.Example = `  kandev-exec session wait s3xk2 --timeout 2h
  kandev-exec session wait s3xk2 --json --jq .exit_code`
	return c
}

func waitRun(ctx context.Context, o *Options) error {
	if o.Timeout < 0 {
		return cmdutil.FlagErrorf("--timeout must not be negative, got %s", o.Timeout)
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	return cmdutil.WaitFor(ctx, o.IO, ex, o.ID, o.Timeout, o.JSON)
}
