package cmdutil

// Helpers every noun shares: completion from local state (record names,
// and tasks and sessions described) and the confirmation before a
// destructive step.

import (
	"context"
	"fmt"

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

// CompleteTasks completes a task by ID and by name, each with a short
// description as gh gives one ("ID\tdescription"): the other of the two,
// its phase and its host. A name several tasks share is left out, since
// it would not resolve.
func CompleteTasks(f *Factory, max int) cobra.CompletionFunc {
	return CompleteNames(f, max, func(ex *executor.Executor, ctx context.Context) ([]string, error) {
		ts, err := ex.ListTasks(ctx, "")
		if err != nil {
			return nil, err
		}
		named := map[string]int{}
		for _, t := range ts {
			named[t.Name]++
		}
		var out []string
		for _, t := range ts {
			where := fmt.Sprintf("%s on %s", t.Phase, t.Host)
			if t.Name == t.ID || named[t.Name] > 1 {
				out = append(out, t.ID+"\t"+where)
				continue
			}
			out = append(out, t.ID+"\t"+t.Name+", "+where, t.Name+"\t"+t.ID+", "+where)
		}
		return out, nil
	})
}

// CompleteSessions completes a session ID with its state, its task's name
// and its host.
func CompleteSessions(f *Factory, max int) cobra.CompletionFunc {
	return CompleteNames(f, max, func(ex *executor.Executor, ctx context.Context) ([]string, error) {
		ss, err := ex.ListSessions(ctx, "")
		if err != nil {
			return nil, err
		}
		ts, err := ex.ListTasks(ctx, "")
		if err != nil {
			return nil, err
		}
		names := map[string]string{}
		for _, t := range ts {
			names[t.ID] = t.Name
		}
		out := make([]string, 0, len(ss))
		for _, s := range ss {
			out = append(out, fmt.Sprintf("%s\t%s, task %s on %s", s.ID, s.State, orDefault(names[s.TaskID], s.TaskID), s.Host))
		}
		return out, nil
	})
}

// ConfirmDestructive asks question on a terminal (doing names the action
// for the error without one), unless --yes said so already. Without a
// terminal --yes is required; a "no" is an interruption.
func ConfirmDestructive(ios *IOStreams, yes bool, question, doing string) error {
	if yes {
		return nil
	}
	if !ios.CanPrompt() {
		return WithHint(FlagErrorf("--yes required to %s when not running interactively", doing),
			"nothing was asked, as there is no terminal: run the same command with --yes (or KANDEV_EXEC_YES=1) once you are sure")
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

// Bytes is a size as people read it: 512 B, 1.5 KiB, 240.0 MiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
