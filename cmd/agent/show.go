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
	return &cobra.Command{
		Use:               "show NAME",
		Short:             "Show an agent preset as YAML that `agent apply -f` accepts",
		Args:              cmdutil.ExactArgs(1, "agent show needs a NAME"),
		ValidArgsFunction: completeAgents(f, 1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return showRun(c.Context(), opts)
		},
	}
}

// agentYAML is the preset file's layout, in its order.
type agentYAML struct {
	Name    string          `yaml:"name"`
	Command []string        `yaml:"command"`
	Env     profile.EnvYAML `yaml:"env"`
}

func showRun(ctx context.Context, o *ShowOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	v, err := ex.ShowAgent(ctx, o.Name)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, v)
	}
	a := v.Agent
	return profile.WriteYAML(o.IO.Out, agentYAML{Name: a.Name, Command: a.Command, Env: a.Env}, v.Revision, v.UpdatedAt)
}
