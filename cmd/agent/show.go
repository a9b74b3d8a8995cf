package agent

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/profile"
	"github.com/kdlbs/kandev-exec/executor"
)

// ShowOptions are `agent show`'s inputs.
type ShowOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
}

// NewCmdShow is `agent show NAME`.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Executor: f.Executor}
	return cmdutil.NewShowCmd(f, "agent", "Show an agent preset as YAML that `agent apply -f` accepts", completeAgents(f, 1),
		&opts.Name, &opts.JSON, cmdutil.Seam(opts, runF, showRun))
}

// agentYAML is the preset file's layout, in its order.
type agentYAML struct {
	Name    string          `yaml:"name"`
	Command []string        `yaml:"command"`
	Env     profile.EnvYAML `yaml:"env"`
}

func showRun(ctx context.Context, o *ShowOptions) error {
	return cmdutil.ShowVerb[executor.AgentView]{
		Show: (*executor.Executor).ShowAgent,
		Text: func(ios *cmdutil.IOStreams, v executor.AgentView) error {
			a := v.Agent
			return profile.WriteYAML(ios.Out, agentYAML{Name: a.Name, Command: a.Command, Env: a.Env}, v.Revision, v.UpdatedAt)
		},
	}.Run(ctx, o.IO, o.Executor, o.JSON, o.Name)
}
