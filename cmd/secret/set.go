package secret

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/vault"
)

// SetOptions are `secret set`'s inputs.
type SetOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
	FromFile string
	// ReadHidden reads one line from the terminal without echo; nil when
	// stdin is not a terminal.
	ReadHidden func() ([]byte, error)
}

// NewCmdSet is `secret set NAME [--from-file F]`.
func NewCmdSet(f *cmdutil.Factory, runF func(context.Context, *SetOptions) error) *cobra.Command {
	opts := &SetOptions{IO: f.IO, Executor: f.Executor}
	if in, ok := f.IO.In.(*os.File); ok && term.IsTerminal(int(in.Fd())) {
		opts.ReadHidden = func() ([]byte, error) { return term.ReadPassword(int(in.Fd())) }
	}
	c := &cobra.Command{
		Use:   "set NAME [--from-file F]",
		Short: "Store a secret read from stdin or a file (never from the command line)",
		Long: `Store a secret under NAME, replacing any previous value. The value is read from
--from-file, else from stdin (typed without echo on a terminal). Exactly one
trailing newline is dropped. It is kept in the state directory with mode 0600
and never printed. Each value is written whole to a new file before the
secret switches to it, so a set that fails or is interrupted leaves the
previous value in force; what an interrupted set leaves behind is removed by
the next set or rm of that secret, and ` + "`kandev-exec doctor`" + ` reports it.`,
		Example: `  kandev-exec secret set api-token < token.txt
  pass show api | kandev-exec secret set api-token
  kandev-exec secret set deploy-key --from-file ~/.config/deploy.key`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return cmdutil.FlagErrorf("secret set needs a NAME")
			case len(args) > 1:
				// Never quote the extra arguments: one is likely the value.
				return cmdutil.FlagErrorf("secret set takes only a NAME: the value comes from stdin or --from-file, never from the command line, where other users can see it")
			}
			return nil
		},
		ValidArgsFunction: completeSecrets(f, 1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return setRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.FromFile, "from-file", "", "read the value from `FILE`")
	// A mistyped flag may be a pasted value: never echo it back.
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return cmdutil.FlagErrorf("secret set takes only NAME and --from-file (the unknown flag is not shown: it may hold a value; pipe secrets on stdin)")
	})
	return c
}

func setRun(ctx context.Context, o *SetOptions) error {
	value, err := readValue(o)
	if err != nil {
		return err
	}
	// Ctrl-C at the hidden prompt does not end the read; honour it here.
	if err := ctx.Err(); err != nil {
		return err
	}
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	s, created, err := ex.Vault().SetSecret(ctx, o.Name, value)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, s)
	}
	verb := "Updated"
	if created {
		verb = "Created"
	}
	fmt.Fprintf(o.IO.Out, "%s secret %s\n", verb, s.Name)
	return nil
}

// readValue gets the value from the file, the terminal (no echo) or
// stdin, and drops one trailing newline, which `echo` and editors add.
func readValue(o *SetOptions) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	switch {
	case o.FromFile != "":
		var f *os.File
		if f, err = os.Open(o.FromFile); err != nil {
			return nil, &cmdutil.FlagError{Err: err}
		}
		defer f.Close()
		b, err = readLimited(f)
	case o.ReadHidden != nil:
		fmt.Fprintf(o.IO.ErrOut, "Value for secret %s (input hidden): ", o.Name)
		b, err = o.ReadHidden()
		fmt.Fprintln(o.IO.ErrOut)
	default:
		b, err = readLimited(o.IO.In)
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b, []byte("\n")), nil
}

// readLimited reads one byte past the limit, so an oversized value is
// refused by SetSecret rather than silently cut.
func readLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, vault.MaxSecretSize+1))
}
