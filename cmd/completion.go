package cmd

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

func newCmdCompletion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script. Names complete from local state only
(nothing is dialled): hosts, profiles, agents and secrets, and tasks by ID
or name and sessions by ID, each described by its state and host.

  bash:  source <(kandev-exec completion bash)
  zsh:   kandev-exec completion zsh > "${fpath[1]}/_kandev-exec"
  fish:  kandev-exec completion fish > ~/.config/fish/completions/kandev-exec.fish`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cmdutil.ExactArgs(1, "completion needs one shell: bash, zsh, fish or powershell"),
		RunE: func(c *cobra.Command, args []string) error {
			root, out := c.Root(), f.IO.Out
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return cmdutil.FlagErrorf("unknown shell %q: use bash, zsh, fish or powershell", args[0])
		},
	}
}
