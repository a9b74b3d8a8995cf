package profile

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/profiles"
)

// ApplyOptions are `profile apply`'s inputs.
type ApplyOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	File     string
	DryRun   bool
}

// NewCmdApply is `profile apply -f FILE [--dry-run]`.
func NewCmdApply(f *cmdutil.Factory, runF func(context.Context, *ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update a profile from a YAML file; prints what changed",
		Long: `Create or update a profile from a YAML file (or stdin), decoded strictly: an
unknown key, a wrong type or a host that ` + "`host add`" + ` never added is an error
naming file and line (a YAML syntax error: file, line and column), and a profile with neither repositories nor a
prepare_script is refused (a task would have nothing to run in). A file may
be at most 1 MiB and hold at most 4096 env keys (env and every repository's
secrets together). --dry-run makes the same checks and says what would
change, writing nothing. Every key: ` + "`kandev-exec help profile`" + `.

A profile file:

` + indent(profiles.ExampleProfile),
		Example: `  kandev-exec profile apply -f prod.yaml --dry-run
  kandev-exec profile apply -f prod.yaml
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
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "check the file and print what would change, without writing")
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
	apply := ex.ApplyProfile
	if o.DryRun {
		apply = ex.PlanProfile
	}
	res, err := apply(ctx, name, data)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, res)
	}
	PrintApply(o.IO.Out, res)
	return nil
}

// indent shifts each line of text right by two spaces, for help text.
func indent(text string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n  ")
}
