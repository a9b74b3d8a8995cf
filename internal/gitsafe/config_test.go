package gitsafe

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseConfigRemotes(t *testing.T) {
	cfg := strings.Join([]string{
		"[core]",
		"\tbare = false",
		"\turl = not-a-remote",
		`[remote "origin"]`,
		"\turl = git@example.com:a/b.git",
		"\tfetch = +refs/heads/*:refs/remotes/origin/*",
		`[Remote "Spaced"]`,
		`	URL = "/srv/with space.git" ; a comment`,
		"[remote.legacy]",
		"\turl=https://example.com/c.git # trailing",
		`[remote "quoted"] url = "a\"b\\c"`,
		"[remote]",
		"\turl = /not/a/remote/section",
		`[url "https://mirror/"]`,
		"\tinsteadOf = https://example.com/",
		"",
	}, "\n")
	entries, err := Parse([]byte(cfg), "config")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range entries.Remotes() {
		got = append(got, r.Name+"="+r.URL)
	}
	want := []string{"Spaced=/srv/with space.git", `quoted=a"b\c`, "origin=git@example.com:a/b.git", "legacy=https://example.com/c.git"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	// What the parser does not understand is an error, never a guess.
	for _, bad := range []string{"[remote \"o\"]\n\turl = /a\\\n/b\n", "[remote \"o\"]\n\turl = \"/a\n", "[remote \"o\"\n",
		"key = outside\n", "[core]\n\tbad key = 1\n", "[remote o]\n"} {
		if _, err := Parse([]byte(bad), "config"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Every spelling git accepts for a key is read as git reads it: the
// section and name in any case, the subsection as written (quoted, with
// escapes and a ']' inside), or lower-cased in the old dotted form.
func TestParseConfigKeys(t *testing.T) {
	cfg := strings.Join([]string{
		"\xef\xbb\xbf[Filter \"Evil]\\\"One\"]",
		"\tClean = touch marker",
		"[FILTER.Two]",
		"\tprocess",
		"[includeIf \"gitdir:/x/\"]",
		"\tpath = other.cfg",
		"",
	}, "\n")
	entries, err := Parse([]byte(cfg), "config")
	if err != nil {
		t.Fatal(err)
	}
	c := entries
	if got := c.FilterDrivers(); !reflect.DeepEqual(got, []string{`Evil]"One`, "two"}) {
		t.Fatalf("filter drivers %q", got)
	}
	if got := c.Include(); got != "includeif.gitdir:/x/.path (config:6)" {
		t.Fatalf("include %q", got)
	}
	if got := c[0].Key() + "=" + c[0].Value; got != `filter.Evil]"One.clean=touch marker` {
		t.Fatalf("first key %q", got)
	}
}
