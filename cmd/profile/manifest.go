package profile

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/profiles"
)

// ReadManifest reads an -f argument: a file, or stdin for "-". The name
// returned is what file:line errors will show. At most one byte past
// profiles.MaxFileSize is read, so an oversized file is refused by the
// decoder, naming the limit, without being read whole.
func ReadManifest(ios *cmdutil.IOStreams, file string) (string, []byte, error) {
	if file == "" {
		return "", nil, cmdutil.FlagErrorf("-f FILE is required (use -f - for stdin)")
	}
	if file == "-" {
		b, err := readBounded(ios.In)
		if err != nil {
			return "", nil, cmdutil.FlagErrorf("reading stdin: %v", err)
		}
		return "<stdin>", b, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", nil, &cmdutil.FlagError{Err: err}
	}
	defer f.Close()
	b, err := readBounded(f)
	if err != nil {
		return "", nil, &cmdutil.FlagError{Err: err}
	}
	return file, b, nil
}

func readBounded(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, profiles.MaxFileSize+1))
}

// PrintApply reports an apply: the action, then the names of the changed
// fields and env keys. Values are never printed. A dry run says what
// would happen.
func PrintApply(w io.Writer, r executor.ApplyResult) {
	switch {
	case r.DryRun && r.Action == executor.ActionCreated:
		fmt.Fprintf(w, "%s %s would be created (dry run)", r.Kind, r.Name)
	case r.DryRun && r.Action == executor.ActionUpdated:
		fmt.Fprintf(w, "%s %s would be updated from revision %d (dry run)", r.Kind, r.Name, r.Revision)
	case r.DryRun:
		fmt.Fprintf(w, "%s %s unchanged (revision %d, dry run)", r.Kind, r.Name, r.Revision)
	default:
		fmt.Fprintf(w, "%s %s %s (revision %d)", r.Kind, r.Name, r.Action, r.Revision)
	}
	if len(r.Changed) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(r.Changed, ", "))
	}
	fmt.Fprintln(w)
	for _, l := range []struct {
		label string
		keys  []string
	}{{"env added:  ", r.EnvAdded}, {"env removed:", r.EnvRemoved}, {"env changed:", r.EnvChanged}} {
		if len(l.keys) > 0 {
			fmt.Fprintf(w, "  %s %s\n", l.label, strings.Join(l.keys, ", "))
		}
	}
}
