package sshconfig

import (
	"slices"
	"testing"
)

func TestLexLine(t *testing.T) {
	cases := []struct {
		line, kw, rest string
		args           []string
		bad            bool
	}{
		{line: "  Host web db  ", kw: "host", rest: "web db", args: []string{"web", "db"}},
		{line: "HostName=x", kw: "hostname", rest: "x", args: []string{"x"}},
		{line: "HostName = x", kw: "hostname", rest: "x", args: []string{"x"}},
		{line: "HostName==x", kw: "hostname", rest: "=x", args: []string{"=x"}},
		{line: `IdentityFile "/a b" 'c d' e\ f a"b c"d`, kw: "identityfile", args: []string{"/a b", "c d", "e f", "ab cd"}},
		{line: "User x#y # comment", kw: "user", args: []string{"x#y"}},
		{line: "User\r", kw: "user", rest: ""},
		{line: "# comment"},
		{line: "   "},
		{line: `User "open`, kw: "user", bad: true},
	}
	for _, c := range cases {
		kw, rest, args, err := lexLine(c.line)
		if (err != nil) != c.bad || kw != c.kw || (c.rest != "" && rest != c.rest) || (!c.bad && !slices.Equal(args, c.args)) {
			t.Errorf("lexLine(%q) = %q, %q, %q, %v", c.line, kw, rest, args, err)
		}
	}
}

func TestMatchPattern(t *testing.T) {
	cases := []struct {
		s, pat string
		want   bool
	}{
		{"web1", "web*", true}, {"web", "w?b", true}, {"wb", "w?b", false},
		{"web1", "web[12]", false}, {"web[12]", "web[12]", true}, // no character classes
		{"a.b.c", "*.c", true}, {"abc", "a**c", true}, {"", "*", true}, {"Web", "web", false},
	}
	for _, c := range cases {
		if got := MatchPattern(c.s, c.pat); got != c.want {
			t.Errorf("MatchPattern(%q, %q) = %v", c.s, c.pat, got)
		}
	}
	lists := []struct {
		s, list string
		want    int
	}{
		{"web", "db,web", 1}, {"web", "w*,!web", -1}, {"web", "!db", 0}, {"web", "", 0}, {"WEB", "web", 0},
	}
	for _, c := range lists {
		if got := matchPatternList(c.s, c.list, true); got != c.want {
			t.Errorf("matchPatternList(%q, %q) = %d", c.s, c.list, got)
		}
	}
}
