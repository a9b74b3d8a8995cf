package agent

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/profile"
	"github.com/kdlbs/kandev-exec/executor"
)

// ApplyOptions are `agent apply`'s inputs.
type ApplyOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	File     string
}

// NewCmdApply is `agent apply -f FILE`.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update an agent preset from a YAML file; prints what changed",
		Long: `Create or update an agent preset (name, command, env) from a YAML file (or
stdin), decoded as strictly as a profile. A file may be at most 1 MiB and
hold at most 4096 env keys.`,
		Example: `  # claude.yaml:
  #   name: claude
  #   command: [claude, --dangerously-skip-permissions]
  #   env: {ANTHROPIC_API_KEY: {secret: anthropic}}
  kandev-exec agent apply -f claude.yaml`,
		Args: cmdutil.ExactArgs(0, "agent apply takes the file with -f FILE"),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return applyRun(c.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "agent preset YAML `FILE` (- for stdin)")
	return c
}

func applyRun(ctx context.Context, o *ApplyOptions) error {
	name, data, err := profile.ReadManifest(o.IO, o.File)
	if err != nil {
		return err
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	res, err := ex.ApplyAgent(ctx, name, data)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, res)
	}
	profile.PrintApply(o.IO.Out, res)
	return nil
}
