package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ListOptions are `agent ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
}

// NewCmdList is `agent ls`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	return cmdutil.NewListCmd(f, "agent", "List agent presets", &opts.JSON, cmdutil.Seam(opts, runF, listRun))
}

func listRun(ctx context.Context, o *ListOptions) error {
	return cmdutil.ListVerb[executor.AgentView]{
		List:   (*executor.Executor).ListAgents,
		Empty:  "No agent presets yet: kandev-exec agent apply -f FILE.yaml",
		Header: "NAME\tCOMMAND\tENV\tREVISION\tUPDATED",
		Row: func(v executor.AgentView) string {
			a := v.Agent
			return fmt.Sprintf("%s\t%s\t%d\t%d\t%s", a.Name, strings.Join(a.Command, " "), len(a.Env), v.Revision, cmdutil.Ago(v.UpdatedAt))
		},
	}.Run(ctx, o.IO, o.Executor, o.JSON)
}
