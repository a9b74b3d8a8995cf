// Package termsafe makes untrusted text safe to show on a terminal.
//
// Hosts are not trusted: what they say (uname, git --version, a script's
// output quoted in an error, a reason typed by someone else) may carry a
// \r or an escape sequence that rewrites what the user reads, such as the
// fingerprint they are about to compare or the host a confirmation names.
// Every text printed for humans, by a command or by the live view, goes
// through Line or Text; JSON output carries it exact.
package termsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line writes every character that is not printable text as a visible
// escape: \r, \n and \t by name, other ASCII controls and DEL as \xNN, C1
// controls and invisible format characters (bidi overrides, zero widths)
// as \uNNNN, bytes that are not UTF-8 as \xNN. Printable text in any
// script passes unchanged.
func Line(s string) string { return escapeControls(s, false) }

// Text is Line for multi-line text: newlines and tabs stay.
func Text(s string) string { return escapeControls(s, true) }

func escapeControls(s string, keepLines bool) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !printable(r, keepLines) }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case printable(r, keepLines):
			b.WriteString(s[i : i+n])
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}

// printable: graphic characters and the ASCII space (unicode.IsPrint),
// plus newline and tab for text.
func printable(r rune, keepLines bool) bool {
	return unicode.IsPrint(r) || keepLines && (r == '\n' || r == '\t')
}
