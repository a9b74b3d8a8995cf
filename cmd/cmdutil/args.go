package cmdutil

// Argument checks. Every wrong argument count, every unknown subcommand
// and every bad flag is a usage error (exit 2) that names the command and
// shows how it is used: cobra's own checks would exit 1, or print help and
// exit 0 for `kandev-exec host bogus`.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kdlbs/kandev-exec/internal/suggest"
)

// ExactArgs accepts exactly n arguments; msg says what they are.
func ExactArgs(n int, msg string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError(c, "%s (got %s)", msg, countArgs(len(args)))
		}
		return nil
	}
}

// NoArgs accepts no arguments.
func NoArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError(c, "%s takes no arguments (got %q)", verb(c), args[0])
	}
	return nil
}

// CommandArgs accepts n arguments (what says which), then `--` and a
// command: required when need, else optional. Without the `--`, a stray
// word is never taken for the command.
func CommandArgs(n int, need bool, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		before := c.ArgsLenAtDash()
		if before < 0 {
			before = len(args)
		}
		switch {
		case before != n:
			return usageError(c, "%s takes %s before -- (got %s)", verb(c), what, countArgs(before))
		case need && len(args) == n:
			return usageError(c, "%s needs the command to run after --", verb(c))
		}
		return nil
	}
}

// RequireFlags is a usage error naming the first of names not given.
// (cobra's MarkFlagRequired fails with exit 1.)
func RequireFlags(c *cobra.Command, names ...string) error {
	for _, n := range names {
		if !c.Flags().Changed(n) {
			return usageError(c, "%s needs --%s", verb(c), n)
		}
	}
	return nil
}

// RequireSubcommands makes every command of the tree that has
// subcommands print its help when run alone, and refuse an unknown one
// as a usage error.
func RequireSubcommands(root *cobra.Command) {
	if root.HasSubCommands() && root.Run == nil && root.RunE == nil {
		root.Args = unknownSubcommand
		root.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	for _, c := range root.Commands() {
		RequireSubcommands(c)
	}
}

func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return WithHint(&FlagError{Err: errors.New(msg)}, fmt.Sprintf("`%s --help` lists its commands", c.CommandPath()))
}

// FlagErrorFunc is the root's answer to a flag that cannot be parsed, a
// usage error everywhere. After a mistyped subcommand (`task lauch
// --profile p`) cobra parses the flags for the noun, which has none of
// them: the mistyped command is what to report, as without flags. An
// unknown flag names the flags it is close to.
func FlagErrorFunc(c *cobra.Command, err error) error {
	if args := c.Flags().Args(); c.HasSubCommands() && len(args) > 0 {
		return unknownSubcommand(c, args)
	}
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return &FlagError{Err: err}
	}
	msg := err.Error()
	if ne.GetSpecifiedShortnames() == "" {
		// The inherited flags are merged into c.Flags() by the parse.
		var known []string
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if !fl.Hidden {
				known = append(known, fl.Name)
			}
		})
		if near := suggest.Closest(ne.GetSpecifiedName(), known); len(near) > 0 {
			msg += " (did you mean --" + strings.Join(near, " or --") + "?)"
		}
	}
	return WithHint(&FlagError{Err: errors.New(msg)}, fmt.Sprintf("`%s --help` lists its flags", c.CommandPath()))
}

// verb names c as users type it after the program name: "task exec".
func verb(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

func usageError(c *cobra.Command, format string, a ...any) error {
	return WithHint(FlagErrorf(format, a...), "usage: "+c.UseLine())
}

func countArgs(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}
