package cmdutil

import "github.com/kdlbs/kandev-exec/internal/termsafe"

// Hosts are not trusted: remote text printed for humans goes through Safe
// or SafeText (internal/termsafe says why); JSON output carries it exact.

// Safe writes every character that is not printable text as a visible
// escape (termsafe.Line).
func Safe(s string) string { return termsafe.Line(s) }

// SafeText is Safe for multi-line text: newlines and tabs stay.
func SafeText(s string) string { return termsafe.Text(s) }
