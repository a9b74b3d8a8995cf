// Package session holds the `session` verbs: ls, show, logs, stop, forward.
package session

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// NewCmdSession is the `session` noun.
func NewCmdSession(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "session", Short: "List, follow, stop and forward to task sessions"}
	c.AddCommand(NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdLogs(f, nil), NewCmdStop(f, nil), NewCmdForward(f, nil))
	return c
}

func completeSessions(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ex, err := f.Executor()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ids, err := ex.SessionIDs(context.Background())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}
