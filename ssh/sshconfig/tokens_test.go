package sshconfig

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	t.Setenv("KDX_EXPAND", "val")
	keys := tokenKeys{'h': "host", 'p': "22"}
	cases := []struct {
		in, want string
		dollar   bool
		bad      bool
	}{
		{in: "%h:%p", want: "host:22"},
		{in: "100%%", want: "100%"},
		{in: "%%h", want: "%h"},
		{in: "${KDX_EXPAND}/%h", want: "val/host", dollar: true},
		{in: "${KDX_EXPAND}", want: "${KDX_EXPAND}"},
		{in: "$KDX_EXPAND", want: "$KDX_EXPAND", dollar: true},
		{in: "%r", bad: true},
		{in: "a%", bad: true},
		{in: "${KDX_NOT_SET_AT_ALL}", dollar: true, bad: true},
		{in: "${}", dollar: true, bad: true},
		{in: "${OPEN", dollar: true, bad: true},
	}
	for _, c := range cases {
		got, err := expand(c.in, keys, c.dollar)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("expand(%q) = %q, %v", c.in, got, err)
		}
	}
}

func TestTildeExpand(t *testing.T) {
	me := local{home: "/home/me"}
	for in, want := range map[string]string{"~": "/home/me/", "~/x": "/home/me/x", "~//x": "/home/me/x", "/abs": "/abs", "rel/~": "rel/~"} {
		if got, err := tildeExpand(in, me); err != nil || got != want {
			t.Errorf("tildeExpand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := tildeExpand("~kdx-no-such-user/x", me); err == nil {
		t.Error("an unknown ~user must be an error")
	}
}

func TestConvtimeAndPort(t *testing.T) {
	for in, want := range map[string]int{"5": 5, "1m30s": 90, "+1h1": 3601, "1W": 604800, "": -1, "5x": -1, "-5": -1, "1m-1": -1, "99999999999": -1} {
		if got := convtime(in); got != want {
			t.Errorf("convtime(%q) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[string]int{"22": 22, "+2200": 2200, "0022": 22, "ssh": 22, "SSH": 0, "0": 0, "65536": 0, "-1": 0, "x1": 0} {
		if got := a2port(in); got != want {
			t.Errorf("a2port(%q) = %d, want %d", in, got, want)
		}
	}
}

// The destination name is written the way ssh writes it: checked against
// `ssh -G` itself, addresses in every form the C library reads.
func TestCanonicalHostAgainstSSH(t *testing.T) {
	names := []string{"Web.Example", "010.0.0.1", "10.1", "0x0a.0.0.1", "127.1", "4294967295", "1.2.3.4", "FE80:0::1",
		"::FFFF:1.2.3.4", "::0102:0304", "A%B", "Foo:Bar", "1e1", "256.1.1.1", "08.1.1.1", "1.2.3.4.5", "[::1]", "0x"}
	var body strings.Builder
	for i, n := range names {
		fmt.Fprintf(&body, "Host h%d\n  HostName %s\n", i, strings.ReplaceAll(n, "%", "%%"))
	}
	cfg := writeFile(t, t.TempDir(), "config", body.String())
	for i, n := range names {
		s, err := lookup(context.Background(), fmt.Sprintf("h%d", i), Overrides{}, ResolveOptions{ConfigFile: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonicalHost(n), s.first("hostname"); got != want {
			t.Errorf("canonicalHost(%q) = %q, ssh -G says %q", n, got, want)
		}
	}
}

func TestHostArgAndUserChecks(t *testing.T) {
	for _, ok := range []string{"web", "10.0.0.1", "a%b", "a:b", "h_1.example"} {
		if !validHostArg(ok) {
			t.Errorf("validHostArg(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "-oProxyCommand=x", "a b", "a;b", "a$b", "a,b", "a`b", "a\nb"} {
		if validHostArg(bad) {
			t.Errorf("validHostArg(%q) = true", bad)
		}
	}
	for _, ok := range []string{"deploy", "a b", "a$b", `a\b`} {
		if !validRemoteUser(ok) {
			t.Errorf("validRemoteUser(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "-a", "a -b", `a\`, "a;b", "a{b"} {
		if validRemoteUser(bad) {
			t.Errorf("validRemoteUser(%q) = true", bad)
		}
	}
}
