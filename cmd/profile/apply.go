package profile

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ApplyOptions are `profile apply`'s inputs.
type ApplyOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	File     string
}

// NewCmdApply is `profile apply -f FILE`.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update a profile from a YAML file; prints what changed",
		Long: `Create or update a profile from a YAML file (or stdin), decoded strictly: an
unknown key, a wrong type or a host that ` + "`host add`" + ` never added is an error
naming file and line. A file may be at most 1 MiB and hold at most 4096 env
keys (env and every repository's secrets together).`,
		Example: `  kandev-exec profile apply -f prod.yaml
  kandev-exec profile show prod | kandev-exec profile apply -f -`,
		Args: cmdutil.ExactArgs(0, "profile apply takes the file with -f FILE"),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return applyRun(c.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "profile YAML `FILE` (- for stdin)")
	return c
}

func applyRun(ctx context.Context, o *ApplyOptions) error {
	name, data, err := ReadManifest(o.IO, o.File)
	if err != nil {
		return err
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	res, err := ex.ApplyProfile(ctx, name, data)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, res)
	}
	PrintApply(o.IO.Out, res)
	return nil
}
