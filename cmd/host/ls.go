package host

import (
	"context"
	"fmt"

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
	return cmdutil.NewListCmd(f, "host", "List hosts", &opts.JSON, cmdutil.Seam(opts, runF, listRun))
}

func listRun(ctx context.Context, o *ListOptions) error {
	return cmdutil.ListVerb[executor.HostView]{
		List:   (*executor.Executor).ListHosts,
		Empty:  "No hosts yet: kandev-exec host add NAME --alias ALIAS",
		Header: "NAME\tADDRESS\tUSER\tPROXY JUMP\tSTATUS\tFINGERPRINT\tADDED\tREASON",
		Row: func(h executor.HostView) string {
			fp := h.Fingerprint
			switch {
			case h.Trust == "ca":
				fp = "CA " + h.CAFingerprint
			case fp == "":
				fp = "(not trusted)"
			}
			reason := ""
			if h.Status != string(records.HostAdmitted) {
				reason = h.StatusReason
			}
			return fmt.Sprintf("%s\t%s:%d\t%s\t%s\t%s\t%s\t%s\t%s", h.Name, h.Hostname, h.Port, h.User, cmdutil.Dash(h.ProxyJump), h.Status, fp,
				cmdutil.Ago(h.CreatedAt), cmdutil.SafeText(cmdutil.Dash(reason)))
		},
	}.Run(ctx, o.IO, o.Executor, o.JSON)
}
