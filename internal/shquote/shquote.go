// Package shquote quotes words for a shell: the commands the product
// runs on a host, and the ones it suggests to an operator to paste.
package shquote

import "strings"

// Safe are the bytes no shell gives a meaning to: a word made of them
// alone is left unquoted.
const Safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@%+,"

// Quote quotes s for a POSIX shell, and for fish and tcsh, which read
// it the same way: fish gives \\ and \' a meaning inside single quotes,
// so a backslash is written outside them, where every shell reads \\ as
// one backslash.
func Quote(s string) string {
	if s != "" && strings.Trim(s, Safe) == "" {
		return s
	}
	return "'" + quoteReplacer.Replace(s) + "'"
}

var quoteReplacer = strings.NewReplacer("'", `'"'"'`, `\`, `'\\'`)
