package cmdutil

// Helpers every noun shares: completion from local state and the
// confirmation before a destructive step.

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/executor"
)

// CompleteNames completes record names from local state only (no dial),
// for the first max arguments (0 = a flag value).
func CompleteNames(f *Factory, max int, names func(*executor.Executor, context.Context) ([]string, error)) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if max > 0 && len(args) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ex, err := f.Executor()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		// Completion callbacks run without a command context.
		list, err := names(ex, context.Background())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return list, cobra.ShellCompDirectiveNoFileComp
	}
}

// ConfirmDestructive asks question on a terminal (doing names the action
// for the error without one), unless --yes said so already. Without a
// terminal --yes is required; a "no" is an interruption.
func ConfirmDestructive(ios *IOStreams, yes bool, question, doing string) error {
	if yes {
		return nil
	}
	if !ios.CanPrompt() {
		return FlagErrorf("--yes required to %s when not running interactively", doing)
	}
	ok, err := ios.Confirm(question)
	if err != nil {
		return err
	}
	if !ok {
		return ErrInterrupted
	}
	return nil
}

// Dash stands in for an empty table cell.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
