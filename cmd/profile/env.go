package profile

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/profiles"
)

// EnvOptions are `profile env`'s inputs.
type EnvOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Explain  bool
	Env      executor.EnvOptions
}

// NewCmdEnv is `profile env NAME [--agent A] [--env K=V]... [--explain]`.
func NewCmdEnv(f *cmdutil.Factory, runF func(context.Context, *EnvOptions) error) *cobra.Command {
	opts := &EnvOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "env NAME",
		Short: "Show the environment a launch would get, with origins; secrets masked",
		Long: `Show the environment a task launched with this profile would get. Runtime
values appear as placeholders and every reference ({secret}, {from_env},
{from_file}) as ***: no value is printed. A precedence conflict fails with
exit code 10, naming the key and every origin, as the launch would.

It is also the launch's preflight: each winning reference is fetched as a
launch would fetch it (the value dropped at once). One that cannot be had (a
secret never set, an unset variable, a missing file) is marked in the
--explain table's PROBLEM column and in --json ("resolved": false,
"problem"), and the command exits 1 naming what to run, such as
` + "`kandev-exec secret set NAME`" + `. A value shorter than 4 bytes is not masked in
the agent's log or the scripts' output (it cannot be told from ordinary
text): a warning names its key, and --json marks it "unmasked": true.`,
		Example: `  kandev-exec profile env prod --agent claude --explain
  kandev-exec profile env prod --env DEBUG=1 --json`,
		Args:              cmdutil.ExactArgs(1, "profile env needs a profile NAME"),
		ValidArgsFunction: completeProfiles(f, 1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Env.Profile, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return envRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Env.Agent, "agent", "", "`NAME` of the agent preset whose env joins in (tier 2)")
	fl.StringArrayVar(&opts.Env.Launch, "env", nil, "`KEY=VALUE` as task launch --env would pass it (repeatable)")
	fl.BoolVar(&opts.Explain, "explain", false, "a table of each key's tier, origins and overridden origins")
	_ = c.RegisterFlagCompletionFunc("agent", cmdutil.CompleteNames(f, 0, (*executor.Executor).AgentNames))
	return c
}

func envRun(ctx context.Context, o *EnvOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	entries, err := ex.ProfileEnv(ctx, o.Env)
	if err != nil {
		return err
	}
	switch {
	case o.JSON:
		err = cmdutil.WriteJSON(o.IO.Out, entries)
	case o.Explain:
		err = writeExplain(o.IO, entries)
	default:
		for _, e := range entries {
			fmt.Fprintf(o.IO.Out, "%s=%s\n", e.Key, printable(e.Value))
		}
	}
	if err != nil {
		return err
	}
	if !o.JSON {
		cmdutil.WarnUnmasked(o.IO, entries)
	}
	return unresolved(o.Env.Profile, entries)
}

// unresolved fails the preflight when any reference cannot be fetched,
// listing each key with what is wrong and what to run (exit 1).
func unresolved(profile string, entries []profiles.ExplainEntry) error {
	var lines []string
	for _, e := range entries {
		if !e.Resolved {
			lines = append(lines, fmt.Sprintf("  %s (%s): %s", e.Key, strings.Join(e.Origins, ", "), e.Problem))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	what := "reference"
	if len(lines) > 1 {
		what = "references"
	}
	return cmdutil.WithHint(fmt.Errorf("%d %s cannot be resolved, so a launch would fail:\n%s", len(lines), what, strings.Join(lines, "\n")),
		fmt.Sprintf("fix each, then check again with `kandev-exec profile env %s`", profile))
}

func writeExplain(ios *cmdutil.IOStreams, entries []profiles.ExplainEntry) error {
	tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTIER\tORIGINS\tVALUE\tOVERRIDDEN\tPROBLEM")
	for _, e := range entries {
		v := printable(e.Value)
		if v == "" {
			v = `""` // an empty cell would read as a missing one
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", e.Key, e.Tier, strings.Join(e.Origins, ", "),
			v, cmdutil.Dash(strings.Join(e.Overridden, ", ")), cmdutil.Dash(cmdutil.Safe(e.Problem)))
	}
	return tw.Flush()
}

// printable keeps one key per line: a value holding newlines, tabs or
// other control characters is shown Go-quoted.
func printable(v string) string {
	if strings.ContainsFunc(v, unicode.IsControl) {
		return strconv.Quote(v)
	}
	return v
}
