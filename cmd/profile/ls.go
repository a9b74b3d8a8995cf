package profile

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ListOptions are `profile ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
}

// NewCmdList is `profile ls`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List profiles",
		Args:    cmdutil.ExactArgs(0, "profile ls takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return listRun(c.Context(), opts)
		},
	}
}

func listRun(ctx context.Context, o *ListOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	ps, err := ex.ListProfiles(ctx)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No profiles yet: kandev-exec profile apply -f FILE.yaml")
		return nil
	}
	tw := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHOST\tSHELL\tREPOSITORIES\tENV\tREVISION\tUPDATED")
	for _, v := range ps {
		p := v.Profile
		repos := make([]string, len(p.Repositories))
		for i, r := range p.Repositories {
			repos[i] = r.Name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", p.Name, p.Host, p.Shell, cmdutil.Dash(strings.Join(repos, ",")),
			len(p.Env), v.Revision, cmdutil.Ago(v.UpdatedAt))
	}
	return tw.Flush()
}
