package profile

import (
	"context"
	"fmt"
	"strings"

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
	return cmdutil.NewListCmd(f, "profile", "List profiles", &opts.JSON, cmdutil.Seam(opts, runF, listRun))
}

func listRun(ctx context.Context, o *ListOptions) error {
	return cmdutil.ListVerb[executor.ProfileView]{
		List:   (*executor.Executor).ListProfiles,
		Empty:  "No profiles yet: kandev-exec profile apply -f FILE.yaml",
		Header: "NAME\tHOST\tSHELL\tREPOSITORIES\tENV\tREVISION\tUPDATED",
		Row: func(v executor.ProfileView) string {
			p := v.Profile
			repos := make([]string, len(p.Repositories))
			for i, r := range p.Repositories {
				repos[i] = r.Name
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%s", p.Name, p.Host, p.Shell, cmdutil.Dash(strings.Join(repos, ",")),
				len(p.Env), v.Revision, cmdutil.Ago(v.UpdatedAt))
		},
	}.Run(ctx, o.IO, o.Executor, o.JSON)
}
