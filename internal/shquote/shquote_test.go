package shquote

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":     "plain",
		"":          "''",
		"a b":       "'a b'",
		"it's":      `'it'"'"'s'`,
		"$HOME;rm":  "'$HOME;rm'",
		"/x/y-z.tx": "/x/y-z.tx",
		`a\\b\`:     `'a'\\''\\'b'\\''`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
