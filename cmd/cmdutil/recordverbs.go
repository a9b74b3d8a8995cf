package cmdutil

// The verbs every record noun has (agent, profile, host, secret): `ls`,
// `show NAME` and `rm NAME`. Each keeps its own NewCmdX(f, runF),
// XOptions and xRun; these are what they share, so the nouns cannot drift
// apart in how they parse, print or ask.

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/executor"
)

// Seam is a verb's RunE body: runF when a test gave one (it sees the
// parsed options), else run.
func Seam[O any](opts *O, runF, run func(context.Context, *O) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if runF != nil {
			return runF(ctx, opts)
		}
		return run(ctx, opts)
	}
}

// NewListCmd is `<noun> ls`: no arguments; asJSON is set from --json.
func NewListCmd(f *Factory, noun, short string, asJSON *bool, run func(context.Context) error) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   short,
		Args:    ExactArgs(0, noun+" ls takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			*asJSON = f.JSON()
			return run(c.Context())
		},
	}
}

// NewShowCmd is `<noun> show NAME`: name and asJSON are set from the
// argument and --json.
func NewShowCmd(f *Factory, noun, short string, complete cobra.CompletionFunc, name *string, asJSON *bool, run func(context.Context) error) *cobra.Command {
	return &cobra.Command{
		Use:               "show NAME",
		Short:             short,
		Args:              ExactArgs(1, noun+" show needs a NAME"),
		ValidArgsFunction: complete,
		RunE: func(c *cobra.Command, args []string) error {
			*name, *asJSON = args[0], f.JSON()
			return run(c.Context())
		},
	}
}

// NewRemoveCmd is `<noun> rm NAME`: name and yes are set from the
// argument and --yes. A noun whose rm takes --force declares it.
func NewRemoveCmd(f *Factory, noun, short string, complete cobra.CompletionFunc, name *string, yes *bool, run func(context.Context) error) *cobra.Command {
	return &cobra.Command{
		Use:               "rm NAME",
		Aliases:           []string{"remove"},
		Short:             short,
		Args:              ExactArgs(1, noun+" rm needs a NAME"),
		ValidArgsFunction: complete,
		RunE: func(c *cobra.Command, args []string) error {
			s, err := f.Settings()
			if err != nil {
				return err
			}
			*name, *yes = args[0], s.Yes
			return run(c.Context())
		},
	}
}

// ListVerb is what one `<noun> ls` lists and how its table reads.
type ListVerb[T any] struct {
	List   func(*executor.Executor, context.Context) ([]T, error)
	Empty  string         // said on stderr when there is nothing: what to run first
	Header string         // the column names, tab-separated
	Row    func(T) string // one row's cells, tab-separated
}

// Run prints the list as JSON, else as a table, else says there is
// nothing yet.
func (l ListVerb[T]) Run(ctx context.Context, ios *IOStreams, exec func() (*executor.Executor, error), asJSON bool) error {
	ex, err := exec()
	if err != nil {
		return err
	}
	items, err := l.List(ex, ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return WriteJSON(ios.Out, items)
	}
	if len(items) == 0 {
		fmt.Fprintln(ios.ErrOut, l.Empty)
		return nil
	}
	tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, l.Header)
	for _, it := range items {
		fmt.Fprintln(tw, l.Row(it))
	}
	return tw.Flush()
}

// ShowVerb is how one `<noun> show NAME` gets its record and prints it
// without --json.
type ShowVerb[T any] struct {
	Show func(*executor.Executor, context.Context, string) (T, error)
	Text func(*IOStreams, T) error
}

// Run prints the named record as JSON, else as Text does.
func (s ShowVerb[T]) Run(ctx context.Context, ios *IOStreams, exec func() (*executor.Executor, error), asJSON bool, name string) error {
	ex, err := exec()
	if err != nil {
		return err
	}
	v, err := s.Show(ex, ctx, name)
	if err != nil {
		return err
	}
	if asJSON {
		return WriteJSON(ios.Out, v)
	}
	return s.Text(ios, v)
}

// RemoveVerb is one `<noun> rm NAME`. Remove does it (a record in use is
// refused there, unless the noun's --force says otherwise).
type RemoveVerb struct {
	Noun, Name string
	Yes        bool   // --yes: do not ask
	Question   string // what to ask; "" is "Remove <noun> <name>?"
	Remove     func(*executor.Executor, context.Context) error
}

// Run asks first (without a terminal, --yes is required), removes, and
// says so on stderr.
func (r RemoveVerb) Run(ctx context.Context, ios *IOStreams, exec func() (*executor.Executor, error)) error {
	question := r.Question
	if question == "" {
		question = fmt.Sprintf("Remove %s %s?", r.Noun, r.Name)
	}
	if err := ConfirmDestructive(ios, r.Yes, question, fmt.Sprintf("remove %s %s", r.Noun, r.Name)); err != nil {
		return err
	}
	ex, err := exec()
	if err != nil {
		return err
	}
	if err := r.Remove(ex, ctx); err != nil {
		return err
	}
	fmt.Fprintf(ios.ErrOut, "Removed %s %s\n", r.Noun, r.Name)
	return nil
}
