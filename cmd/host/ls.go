package host

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// ListOptions are `host ls`'s inputs.
type ListOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
}

// NewCmdList is `host ls`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Executor: f.Executor}
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List hosts",
		Args:    cmdutil.ExactArgs(0, "host ls takes no arguments"),
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
	hosts, err := ex.ListHosts(ctx)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, hosts)
	}
	if len(hosts) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No hosts yet: kandev-exec host add NAME --alias ALIAS")
		return nil
	}
	tw := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADDRESS\tUSER\tPROXY JUMP\tSTATUS\tFINGERPRINT\tADDED\tREASON")
	for _, h := range hosts {
		fp := h.Fingerprint
		if fp == "" {
			fp = "(not trusted)"
		}
		reason := ""
		if h.Status != string(records.HostAdmitted) {
			reason = h.StatusReason
		}
		fmt.Fprintf(tw, "%s\t%s:%d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, h.Hostname, h.Port, h.User, cmdutil.Dash(h.ProxyJump), h.Status, fp,
			cmdutil.Ago(h.CreatedAt), cmdutil.SafeText(cmdutil.Dash(reason)))
	}
	return tw.Flush()
}
