package helper

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// PruneOptions are `helper prune`'s inputs.
type PruneOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Host     string
	DryRun   bool
}

// NewCmdPrune is `helper prune --host H [--dry-run]`.
func NewCmdPrune(f *cmdutil.Factory, runF func(context.Context, *PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "prune --host=H [--dry-run]",
		Short: "Remove the old helper versions no process on a host runs",
		Long: `Each kandev-exec version leaves its helper under <root>/bin/<sha256>/ on the
hosts it reaches. helper prune looks under every root of the host (its own,
its profiles' and its tasks') and removes the versions that nothing runs,
proven on the host: no process of the login user runs or holds anything
there (a session's controller runs the helper it was started with), and
none that could is hidden from the check.

Kept, with the reason: the version this kandev-exec uses (current), the one
answering (serving), one a process runs (in_use), one changed in the last
hour (too_recent: another kandev-exec may have just put it there), and
anything that is not plainly a helper directory of the login user's alone
(unsafe_path: a link, a file, another name; not_private: another owner, or
writable by others). --dry-run says what would go and removes nothing.

A root the host refuses (one not the login user's alone) is one failed row,
and the other roots are still pruned: exit 3.`,
		Example: `  kandev-exec helper prune --host prod --dry-run
  kandev-exec helper prune --host prod`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if opts.Host == "" {
				return cmdutil.FlagErrorf("--host is required: the host whose helpers to prune (`kandev-exec host ls` lists them)")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return pruneRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Host, "host", "", "the host whose old helpers to remove (required)")
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what would be removed, and remove nothing")
	_ = c.RegisterFlagCompletionFunc("host", cmdutil.CompleteNames(f, 0, func(ex *executor.Executor, ctx context.Context) ([]string, error) {
		return ex.HostNames(ctx)
	}))
	return c
}

func pruneRun(ctx context.Context, o *PruneOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	p := cmdutil.NewProgress(o.IO, o.JSON)
	rows, err := ex.PruneHelpers(ctx, executor.PruneHelpersOptions{Host: o.Host, DryRun: o.DryRun, Progress: p.Step})
	p.Done(err == nil)
	if err != nil {
		return err
	}
	failed := 0
	var first *executor.HelperPruneRow
	for i := range rows {
		if r := &rows[i]; r.Err != nil {
			r.Reason = cmdutil.Classify(r.Err).Code
		}
		if rows[i].Action == executor.ReclaimFailed {
			if failed++; first == nil {
				first = &rows[i]
			}
		}
	}
	if o.JSON {
		if err := cmdutil.WriteJSON(o.IO.Out, rows); err != nil {
			return err
		}
	} else {
		printPruned(o.IO.Out, rows)
		printPruneSummary(o.IO, rows, o.DryRun)
	}
	switch {
	case failed == 0:
		return nil
	case failed < len(rows):
		return &cmdutil.PartialError{Failed: failed, Total: len(rows), What: "rows"}
	case first.Err != nil:
		info := cmdutil.Classify(first.Err)
		return &cmdutil.ExitCodeError{Code: info.Exit, JSON: info.Code, Msg: first.Detail, Printed: true}
	}
	return &cmdutil.ExitCodeError{Code: cmdutil.ExitError.Status, JSON: cmdutil.ExitError.Code, Msg: first.Detail, Printed: true}
}

// printPruned prints a row per version; what a host named is escaped.
func printPruned(w io.Writer, rows []executor.HelperPruneRow) {
	if len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tROOT\tVERSION\tSIZE\tACTION\tREASON")
	for _, r := range rows {
		size := cmdutil.Bytes(r.Bytes)
		if r.SHA256 == "" {
			size = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Host, cmdutil.Safe(r.Root), cmdutil.Dash(cmdutil.Safe(r.SHA256)), size, r.Action, cmdutil.Dash(r.Reason))
	}
	tw.Flush()
}

// printPruneSummary says what was freed (or would be), then each failed
// root's error and what each kept version's reason means.
func printPruneSummary(ios *cmdutil.IOStreams, rows []executor.HelperPruneRow, dryRun bool) {
	count := map[string]int{}
	var freed int64
	for _, r := range rows {
		count[r.Action]++
		if r.Action == executor.ReclaimRemoved || r.Action == executor.ReclaimRemove {
			freed += r.Bytes
		}
	}
	switch {
	case len(rows) == 0:
		fmt.Fprintln(ios.ErrOut, "No helper versions on this host")
	case dryRun:
		fmt.Fprintf(ios.ErrOut, "Would free %s: remove %d versions, keep %d; run it again without --dry-run to remove them\n",
			cmdutil.Bytes(freed), count[executor.ReclaimRemove], count[executor.ReclaimKeep])
	default:
		fmt.Fprintf(ios.ErrOut, "Freed %s: removed %d versions, kept %d; %d failed\n",
			cmdutil.Bytes(freed), count[executor.ReclaimRemoved], count[executor.ReclaimSkipped], count[executor.ReclaimFailed])
	}
	for _, r := range rows {
		if r.Action != executor.ReclaimFailed && r.Reason != "in_use" && r.Reason != "not_private" && r.Reason != "unsafe_path" {
			continue
		}
		what := cmp.Or(r.SHA256, r.Root)
		fmt.Fprintf(ios.ErrOut, "%s %s: %s\n", r.Host, cmdutil.Safe(what), cmdutil.SafeText(r.Detail))
		if r.Err != nil {
			if hint := cmdutil.Classify(r.Err).Hint; hint != "" {
				fmt.Fprintf(ios.ErrOut, "  hint: %s\n", cmdutil.SafeText(hint))
			}
		}
	}
}
