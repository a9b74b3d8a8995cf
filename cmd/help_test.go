package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// No flag's help states its default twice (--connect-timeout said
// "(default: ConnectTimeout from the ssh config, else 10s) (default 10s)").
func TestEveryFlagShowsOneDefault(t *testing.T) {
	root := NewCmdRoot(cmdutil.NewFactory(&cmdutil.IOStreams{}, "test"))
	check := func(c *cobra.Command) {
		for _, line := range strings.Split(c.Flags().FlagUsages()+c.InheritedFlags().FlagUsages(), "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s: %s", c.CommandPath(), strings.TrimSpace(line))
			}
		}
	}
	check(root)
	walk(root, check)
}

// Help never points at a hidden flag (`session logs --help` named
// --keepalive-interval and --keepalive-deadline, which --help hides).
func TestHelpNeverMentionsHiddenFlags(t *testing.T) {
	root := NewCmdRoot(cmdutil.NewFactory(&cmdutil.IOStreams{}, "test"))
	walk(root, func(c *cobra.Command) {
		text := c.Short + "\n" + c.Long + "\n" + c.Example
		visit := func(fl *pflag.Flag) {
			if fl.Hidden && strings.Contains(text, "--"+fl.Name) {
				t.Errorf("%s: help mentions hidden flag --%s", c.CommandPath(), fl.Name)
			}
		}
		c.Flags().VisitAll(visit)
		c.InheritedFlags().VisitAll(visit)
	})
}
