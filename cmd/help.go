package cmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/profiles"
)

// helpTopics are what `help` knows besides the commands; `help profile`
// is the profile file, not the profile command (that is `profile --help`).
var helpTopics = map[string]func(*cmdutil.Factory) error{
	"exit-codes": printExitCodes,
	"profile":    printProfileReference,
	"config":     printConfigReference,
	"formatting": func(f *cmdutil.Factory) error { _, err := fmt.Fprint(f.IO.Out, cmdutil.FormattingHelp); return err },
}

// newCmdHelp is cobra's help plus the topics.
func newCmdHelp(root *cobra.Command, f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command | exit-codes | profile | config | formatting]",
		Short: "Help about any command, the exit codes, the profile file, the settings file or output formatting",
		Long: `Help about any command, or one of these topics:

  exit-codes   what each exit status means, and its JSON error code
  profile      every key of a profile file (and an agent preset file), with an example
  config       the global settings: flags, environment twins and config file keys
  formatting   --json, --jq and --template, and the template's functions`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 && helpTopics[args[0]] != nil {
				return helpTopics[args[0]](f)
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

// printProfileReference is `help profile`: every key of profiles'
// reference tables, then the example files.
func printProfileReference(f *cmdutil.Factory) error {
	if f.JSON() {
		return cmdutil.WriteJSON(f.IO.Out, map[string]any{
			"profile": profiles.ProfileFields, "profile_example": profiles.ExampleProfile,
			"agent": profiles.AgentFields, "agent_example": profiles.ExampleAgent,
		})
	}
	w := f.IO.Out
	fmt.Fprint(w, `A profile says where and how tasks run: which host, which repositories to
check out, which environment the agent gets. Create or update one with
"kandev-exec profile apply -f FILE.yaml" (add --dry-run to see what would
change); "kandev-exec profile show NAME" prints it back in this form, and
"kandev-exec profile env NAME --explain" shows the environment a launch
would get. The profile commands: "kandev-exec profile --help".

The file is strict YAML: an unknown key, a wrong type or a duplicate is an
error naming file, line and key (exit 2), with the key you probably meant;
a syntax error names the line and column to change (a tab used to indent
is named as a tab: YAML indents with spaces only).

PROFILE KEYS

`)
	writeFields(w, profiles.ProfileFields)
	fmt.Fprintf(w, "EXAMPLE\n\n%s\n\n", indentBy(profiles.ExampleProfile, "  "))
	fmt.Fprint(w, "AGENT PRESET KEYS (kandev-exec agent apply -f FILE.yaml)\n\n")
	writeFields(w, profiles.AgentFields)
	fmt.Fprintf(w, "EXAMPLE\n\n%s\n", indentBy(profiles.ExampleAgent, "  "))
	return nil
}

func writeFields(w io.Writer, fields []profiles.Field) {
	for _, fl := range fields {
		what := fl.Type + "; default: " + fl.Default
		if fl.Required {
			what = fl.Type + ", required"
		}
		key := fl.Key[strings.LastIndex(fl.Key, ".")+1:]
		fmt.Fprintf(w, "%s  (%s)\n%s\n    e.g. %s: %s\n\n", fl.Key, what, wrap(fl.Doc, 74, "    "), key, fl.Example)
	}
}

// printConfigReference is `help config`: the global settings table.
func printConfigReference(f *cmdutil.Factory) error {
	if f.JSON() {
		return cmdutil.WriteJSON(f.IO.Out, cmdutil.GlobalSettings)
	}
	w := f.IO.Out
	fmt.Fprint(w, `Global settings apply to every command. Each is taken from its flag, else
its environment variable, else the config file, else its default.

The config file is YAML: --config FILE, else $KANDEV_EXEC_CONFIG, else
$XDG_CONFIG_HOME/kandev-exec/config.yaml (~/.config/kandev-exec/config.yaml
without XDG_CONFIG_HOME). An absent file is fine unless named explicitly. An
unknown key, a value of the wrong type or a key only a flag may set is an
error naming the file and line (exit 2).

`)
	for _, s := range cmdutil.GlobalSettings {
		var where []string
		if !s.FileOnly {
			where = append(where, "flag --"+s.Key)
		}
		if s.Env != "" {
			where = append(where, "environment "+s.Env)
		}
		if s.InFile {
			where = append(where, "config file key "+s.Key)
		}
		what := s.Type
		if s.Default != "" {
			what += "; default: " + s.Default
		}
		fmt.Fprintf(w, "%s  (%s)\n%s\n    %s\n\n", s.Key, what, wrap(s.Doc, 74, "    "), strings.Join(where, ", "))
	}
	fmt.Fprintf(w, "Booleans in the environment take 1, true, yes or on (NO_COLOR: any value);\nin the file, true or false. Durations are Go durations: 500ms, 30s, 2m.\n\nEXAMPLE\n\n%s\n", indentBy(cmdutil.ExampleConfig, "  "))
	return nil
}

func indentBy(text, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n"+prefix)
}

// wrap breaks text into lines of at most width columns, each starting
// with prefix.
func wrap(text string, width int, prefix string) string {
	var lines []string
	line := prefix
	for _, word := range strings.Fields(text) {
		if len(line) > len(prefix) && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = prefix
		}
		if len(line) > len(prefix) {
			line += " "
		}
		line += word
	}
	return strings.Join(append(lines, line), "\n")
}
