// Package host holds the `host` verbs: add, test, trust, ls, show, rm.
package host

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// NewCmdHost is the `host` noun.
func NewCmdHost(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "host",
		Short: "Add, test, trust and list SSH hosts",
	}
	c.AddCommand(NewCmdAdd(f, nil), NewCmdTest(f, nil), NewCmdTrust(f, nil),
		NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdRemove(f, nil))
	return c
}

// completeHosts completes host names from local state only: no dial.
func completeHosts(f *cmdutil.Factory, max int) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if max > 0 && len(args) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ex, err := f.Executor()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names, err := ex.HostNames(cmdContext())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
