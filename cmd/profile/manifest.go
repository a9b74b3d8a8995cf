package profile

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// ReadManifest reads an -f argument: a file, or stdin for "-". The name
// returned is what file:line errors will show.
func ReadManifest(ios *cmdutil.IOStreams, file string) (string, []byte, error) {
	if file == "" {
		return "", nil, cmdutil.FlagErrorf("-f FILE is required (use -f - for stdin)")
	}
	if file == "-" {
		b, err := io.ReadAll(ios.In)
		if err != nil {
			return "", nil, cmdutil.FlagErrorf("reading stdin: %v", err)
		}
		return "<stdin>", b, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", nil, &cmdutil.FlagError{Err: err}
	}
	return file, b, nil
}

// PrintApply reports an apply: the action, then the names of the changed
// fields and env keys. Values are never printed.
func PrintApply(w io.Writer, r executor.ApplyResult) {
	fmt.Fprintf(w, "%s %s %s (revision %d)", r.Kind, r.Name, r.Action, r.Revision)
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
