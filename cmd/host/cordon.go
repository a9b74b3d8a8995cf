package host

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// CordonOptions are `host cordon`'s inputs.
type CordonOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
	Reason   string
}

// NewCmdCordon is `host cordon NAME --reason R`.
func NewCmdCordon(f *cmdutil.Factory, runF func(context.Context, *CordonOptions) error) *cobra.Command {
	opts := &CordonOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "cordon NAME --reason R",
		Short: "Take no new launches on a host; its sessions keep running",
		Long: `Mark the host so that task launch and task resume refuse it (exit 9, naming
the reason). Its running sessions, recovery, inspection (session logs, task
exec) and teardown (task archive, sweep) are not affected. Cordoning twice
changes nothing. ` + "`host drain`" + ` cordons and also stops the sessions;
` + "`host uncordon`" + ` undoes it.`,
		Example:           `  kandev-exec host cordon prod --reason "kernel upgrade tonight"`,
		Args:              cmdutil.ExactArgs(1, "host cordon needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			if err := cmdutil.RequireFlags(c, "reason"); err != nil {
				return err
			}
			opts.Name, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return cordonRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Reason, "reason", "", "why (recorded with who and when, shown by host ls and show)")
	return c
}

func cordonRun(ctx context.Context, o *CordonOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	res, err := ex.CordonHost(ctx, o.Name, o.Reason)
	if err != nil {
		return err
	}
	return printChange(o.IO, o.JSON, res, fmt.Sprintf("Cordoned host %s: no new launches; its sessions keep running (`kandev-exec host drain %s` stops them)", res.Name, res.Name))
}

// UncordonOptions are `host uncordon`'s inputs.
type UncordonOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
}

// NewCmdUncordon is `host uncordon NAME`.
func NewCmdUncordon(f *cmdutil.Factory, runF func(context.Context, *UncordonOptions) error) *cobra.Command {
	opts := &UncordonOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:   "uncordon NAME",
		Short: "Let a cordoned or drained host take launches again",
		Long: `Let the host take launches again. A drain under way stops at its next step
(the sessions it stopped stay stopped). A quarantined host is not lifted
here: that takes ` + "`host readmit`" + `, after a fresh probe.`,
		Args:              cmdutil.ExactArgs(1, "host uncordon needs a NAME"),
		ValidArgsFunction: cmdutil.CompleteNames(f, 1, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return uncordonRun(c.Context(), opts)
		},
	}
}

func uncordonRun(ctx context.Context, o *UncordonOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	res, err := ex.UncordonHost(ctx, o.Name)
	if err != nil {
		return err
	}
	return printChange(o.IO, o.JSON, res, fmt.Sprintf("Uncordoned host %s: it takes launches again", res.Name))
}

// printChange prints a status change: the host as JSON, or done (or the
// note saying why nothing changed) for people.
func printChange(ios *cmdutil.IOStreams, asJSON bool, res *executor.HostStatusChange, done string) error {
	if asJSON {
		return cmdutil.WriteJSON(ios.Out, res)
	}
	if !res.Changed {
		fmt.Fprintln(ios.Out, cmdutil.SafeText(res.Note))
		return nil
	}
	fmt.Fprintln(ios.Out, done)
	return nil
}
