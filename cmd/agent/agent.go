// Package agent holds the `agent` verbs: apply, ls, show, rm. An agent
// preset is a command and its env, the tier-2 `agent profile` origin.
package agent

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// NewCmdAgent is the `agent` noun.
func NewCmdAgent(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "agent",
		Short: "Manage agent presets: a command and its env",
	}
	c.AddCommand(NewCmdApply(f, nil), NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdRemove(f, nil))
	return c
}

func completeAgents(f *cmdutil.Factory, max int) cobra.CompletionFunc {
	return cmdutil.CompleteNames(f, max, (*executor.Executor).AgentNames)
}
