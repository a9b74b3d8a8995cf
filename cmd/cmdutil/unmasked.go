package cmdutil

import (
	"fmt"
	"strings"

	"github.com/kdlbs/kandev-exec/profiles"
)

// WarnUnmasked warns on stderr, naming their keys, about the reference
// values of entries (as profiles.Preflight left them) too short to be
// masked in the agent's log and the scripts' output (docs/profiles.md,
// "Environment values and references"). Nothing is said for none.
func WarnUnmasked(ios *IOStreams, entries []profiles.ExplainEntry) {
	keys := profiles.UnmaskedKeys(entries)
	switch len(keys) {
	case 0:
		return
	case 1:
		fmt.Fprintf(ios.ErrOut, "warning: the value of %s is shorter than %d bytes, so it is not masked in the agent's log or the scripts' output: a value that short cannot be told from ordinary text\n",
			keys[0], profiles.MinMaskedLen)
	default:
		fmt.Fprintf(ios.ErrOut, "warning: the values of %s are shorter than %d bytes, so they are not masked in the agent's log or the scripts' output: a value that short cannot be told from ordinary text\n",
			strings.Join(keys, ", "), profiles.MinMaskedLen)
	}
}
