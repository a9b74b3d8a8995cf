package cmd

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// newCmdHelp is cobra's help plus the `exit-codes` topic.
func newCmdHelp(root *cobra.Command, f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command | exit-codes]",
		Short: "Help about any command, or the exit codes",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == "exit-codes" {
				return printExitCodes(f)
			}
			target, rest, err := root.Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return cmdutil.FlagErrorf("unknown help topic %q: try `kandev-exec help`", strings.Join(args, " "))
			}
			return target.Help()
		},
	}
}

func printExitCodes(f *cmdutil.Factory) error {
	if f.JSON() {
		type row struct {
			Code    int    `json:"code"`
			Name    string `json:"name"`
			Meaning string `json:"meaning"`
		}
		rows := []row{}
		for _, e := range cmdutil.ExitCodes {
			rows = append(rows, row{e.Status, e.Code, e.Meaning})
		}
		return cmdutil.WriteJSON(f.IO.Out, rows)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tJSON CODE\tMEANING")
	for _, e := range cmdutil.ExitCodes {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", e.Status, cmdutil.Dash(e.Code), e.Meaning)
	}
	fmt.Fprintln(tw, "\ntask exec returns the remote command's status; 255 means the transport failed, as with ssh(1).")
	return tw.Flush()
}
