// Package host holds the `host` verbs: add, set, test, trust, ls, show, rm,
// and the status verbs: cordon, uncordon, drain, quarantine, readmit.
package host

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// NewCmdHost is the `host` noun.
func NewCmdHost(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "host",
		Short: "Add, test, trust, list, cordon, drain and quarantine SSH hosts",
	}
	c.AddCommand(NewCmdAdd(f, nil), NewCmdSet(f, nil), NewCmdTest(f, nil), NewCmdTrust(f, nil),
		NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdRemove(f, nil),
		NewCmdCordon(f, nil), NewCmdUncordon(f, nil), NewCmdDrain(f, nil), NewCmdQuarantine(f, nil), NewCmdReadmit(f, nil),
		NewCmdDisconnect(f, nil), NewCmdMaster(f))
	return c
}

// hostNames serves completion from local state only: no dial.
func hostNames(ex *executor.Executor, ctx context.Context) ([]string, error) {
	return ex.HostNames(ctx)
}
