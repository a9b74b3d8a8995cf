// Package profile holds the `profile` verbs: apply, ls, show, rm, env. It
// also exports what `agent` shares with it: reading and reporting a
// declarative file, and rendering env entries as YAML.
package profile

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// NewCmdProfile is the `profile` noun.
func NewCmdProfile(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "profile",
		Short: "Manage executor profiles and inspect the environment a launch gets",
	}
	c.AddCommand(NewCmdApply(f, nil), NewCmdList(f, nil), NewCmdShow(f, nil),
		NewCmdRemove(f, nil), NewCmdEnv(f, nil))
	return c
}

func completeProfiles(f *cmdutil.Factory, max int) cobra.CompletionFunc {
	return cmdutil.CompleteNames(f, max, (*executor.Executor).ProfileNames)
}
