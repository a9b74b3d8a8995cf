package sshconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const sampleConfig = `# comment
Host web
    HostName 10.0.0.5
    User deploy
    Port 2222
    IdentityFile /keys/web
Host web* !web-legacy
    User ignored-first-wins
    IdentityFile /keys/shared
    IdentitiesOnly yes
Host jumpy
    ProxyJump admin@bastion:2200,web
Host bastion
    HostName 192.0.2.1
Host quoted
    HostName="q.example"
    IdentityFile "/keys/with space"
Match host 10.0.0.5
    ConnectTimeout 7
Match final host q.example
    Port 2022
Host *
    ServerAliveInterval 30
    ForwardAgent no
`

// Both resolvers read the same file the same way: the parser is the
// fallback for machines without an OpenSSH client.
func TestResolveParserMatchesSSHG(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config", sampleConfig)
	for _, name := range []string{"web", "web-2", "web-legacy", "jumpy", "quoted", "other.example"} {
		t.Run(name, func(t *testing.T) {
			viaG, err := Resolve(context.Background(), name, Overrides{}, ResolveOptions{ConfigFile: cfg})
			if err != nil {
				t.Fatalf("ssh -G: %v", err)
			}
			viaParser, err := Resolve(context.Background(), name, Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: "-"})
			if err != nil {
				t.Fatalf("parser: %v", err)
			}
			if got, want := describeResult(viaParser, nil), describeResult(viaG, nil); got != want {
				t.Errorf("parser and ssh -G disagree\nparser: %s\nssh -G: %s", got, want)
			}
		})
	}
}

func TestParserSemantics(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config", sampleConfig)
	opts := ResolveOptions{ConfigFile: cfg, SSHBinary: "-"}
	web, err := Resolve(context.Background(), "web", Overrides{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if web.User != "deploy" || web.Port != 2222 || web.HostName != "10.0.0.5" || !web.IdentitiesOnly || web.ConnectTimeout != 7 {
		t.Errorf("web resolved to %+v", web)
	}
	if !slices.Equal(web.IdentityFiles, []string{"/keys/web", "/keys/shared"}) {
		t.Errorf("IdentityFile must accumulate in order, got %v", web.IdentityFiles)
	}
	legacy, _ := Resolve(context.Background(), "web-legacy", Overrides{}, opts)
	if legacy.IdentitiesOnly {
		t.Error("a negated pattern must exclude web-legacy")
	}
	q, _ := Resolve(context.Background(), "quoted", Overrides{}, opts)
	if q.HostName != "q.example" || q.Port != 2022 || q.IdentityFiles[0] != "/keys/with space" {
		t.Errorf("quoted/key=value/Match final: got %+v", q)
	}
	j, _ := Resolve(context.Background(), "jumpy", Overrides{}, opts)
	if len(j.Jumps) != 2 || j.Jumps[0].User != "admin" || j.Jumps[0].Port != 2200 || j.Jumps[0].HostName != "192.0.2.1" || j.Jumps[1].Port != 2222 {
		t.Errorf("jump chain: %s", describeResult(j, nil))
	}
	ov, _ := Resolve(context.Background(), "web", Overrides{User: "me", Port: 22, ProxyJump: "none"}, opts)
	if ov.User != "me" || ov.Port != 22 || len(ov.Jumps) != 0 {
		t.Errorf("explicit overrides must win: %+v", ov)
	}
}

func TestParserErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ body, want string }{
		"unknown keyword":         {"Host a\n  HostName x\n  Frobnicate yes\n", ":3: unsupported ssh config keyword \"frobnicate\""},
		"match exec":              {"Match exec \"true\"\n  User x\n", ":1: bad Match condition: Match exec runs a command"},
		"match unknown":           {"Match localnetwork 10.0.0.0/8\n  User x\n", ":1: bad Match condition: unsupported Match criterion \"localnetwork\""},
		"unterminated":            {"Host a\n  IdentityFile \"/x\n", ":2: invalid quotes"},
		"extra argument":          {"Host a\n  HostName x y\n", ":2: keyword hostname extra arguments"},
		"no argument":             {"Host a\n  User\n", ":2: no argument after keyword \"user\""},
		"bad port inactive block": {"Host other\n  Port 0\n", ":2: bad port"},
		"bad jump inactive block": {"Host other\n  ProxyJump h:x\n", ":2: invalid ProxyJump"},
		"proxycommand stdio":      {"Host a\n  ProxyCommand -\n", "ProxyCommand - ("},
		"proxycommand fdpass":     {"Host a\n  ProxyCommand nc %h %p\n  ProxyUseFdpass yes\n", "ProxyUseFdpass yes is not supported"},
		"proxycommand token":      {"Host a\n  ProxyCommand nc %d\n", "unknown token %d"},
		"bad port":                {"Host a\n  Port 99999\n", "bad port"},
		"jump loop":               {"Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n", "ProxyJump chain"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := writeFile(t, dir, strings.ReplaceAll(name, " ", "_"), c.body)
			_, err := Resolve(context.Background(), "a", Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: "-"})
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want *ConfigError, got %v", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestParserIgnoreUnknownAndInclude(t *testing.T) {
	dir := t.TempDir()
	inc := writeFile(t, dir, "inc/a.conf", "Host a\n  User fromincl\n  UseKeychain yes\n  FancyFuture on\n")
	cfg := writeFile(t, dir, "config", "IgnoreUnknown FancyFuture\nInclude "+filepath.Dir(inc)+"/*.conf\nHost a\n  User later\n")
	a, err := Resolve(context.Background(), "a", Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if a.User != "fromincl" {
		t.Errorf("included value must win (first obtained), got %q", a.User)
	}
}

func TestAliasDefined(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config", sampleConfig)
	for _, bin := range []string{"", "-"} {
		for name, want := range map[string]bool{"web": true, "jumpy": true, "nosuch": false, "other.example": false} {
			got, err := AliasDefined(context.Background(), name, ResolveOptions{ConfigFile: cfg, SSHBinary: bin})
			if err != nil || got != want {
				t.Errorf("bin %q: AliasDefined(%q) = %v, %v; want %v", bin, name, got, err, want)
			}
		}
	}
}

// The bug from the field: without an OpenSSH client, %h and %% stayed in
// HostName, so the parser dialled another host than `ssh -G` named.
func TestParserExpandsHostNameTokens(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config",
		"Host web\n  HostName %h.example.com\nHost lit\n  HostName 10.0.0.%%\nHost UP\n  HostName Db.%h.EXAMPLE\n")
	for name, want := range map[string]string{"web": "web.example.com", "lit": "10.0.0.%", "UP": "db.up.example"} {
		for _, bin := range []string{"", "-"} {
			got, err := Resolve(context.Background(), name, Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: bin})
			if err != nil || got.HostName != want {
				t.Errorf("bin %q: %s resolved to %+v, %v; want HostName %q", bin, name, got, err, want)
			}
		}
	}
}

// What the parser cannot do as OpenSSH would is refused, naming the line.
func TestParserRefusals(t *testing.T) {
	t.Setenv("KDX_UNSET_FOR_TEST", "")
	os.Unsetenv("KDX_UNSET_FOR_TEST")
	cases := map[string]struct{ body, want string }{
		"canonicalize":     {"Host a\n  CanonicalizeHostname yes\n", "config:2: canonicalizehostname needs DNS lookups"},
		"canonical always": {"Host a\n  CanonicalizeHostname always\n", "config:2: canonicalizehostname needs DNS lookups"},
		"permitted cnames": {"CanonicalizePermittedCNAMEs *.a.example:*.b.example\n", "config:1: canonicalizepermittedcnames needs DNS"},
		"hostname token":   {"Host a\n  HostName %p.example\n", "config:2: HostName \"%p.example\": unknown token %p"},
		"lone percent":     {"Host a\n  HostName a%\n", "config:2: HostName \"a%\" ends in a lone %"},
		"agent variable":   {"Host a\n  IdentityAgent ${KDX_UNSET_FOR_TEST}/s\n", "config:2: IdentityAgent: invalid environment expansion"},
		"identity token":   {"Host a\n  IdentityFile /k/%f\n", "IdentityFile \"/k/%f\": unknown token %f"},
		"twice-expanded %": {"Host a\n  ProxyJump b%%c,d\n", "is expanded twice by OpenSSH"},
		"jump loop":        {"Host a\n  HostName x\n  ProxyJump x\n", "config:3: jumphost loop via x"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "config", c.body)
			_, err := Resolve(context.Background(), "a", Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: "-"})
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want a *ConfigError containing %q", err, c.want)
			}
		})
	}
	// Off is not a request for DNS.
	cfg := writeFile(t, t.TempDir(), "config", "CanonicalizeHostname no\nCanonicalizePermittedCNAMEs none\n")
	if _, err := Resolve(context.Background(), "a", Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: "-"}); err != nil {
		t.Errorf("canonicalization switched off: %v", err)
	}
}

// Keywords of newer or vendor builds are accepted and ignored, so one
// config serves every machine (OpenSSH 9.2 itself rejects them).
func TestParserAcceptsNewerKeywords(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config", "UseKeychain yes\nTag work\nObscureKeystrokeTiming no\nChannelTimeout session=5m\nHost a\n  User u\n")
	a, err := Resolve(context.Background(), "a", Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: "-"})
	if err != nil || a.User != "u" {
		t.Errorf("got %+v, %v", a, err)
	}
}

// In the final pass Host lines see the final host name, and only `Match
// final` (not `Match canonical`) asks for that pass.
func TestParserFinalPass(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config", "Host web\n  HostName 10.0.0.1\nMatch final all\n  Port 9\n"+
		"Host 10.0.0.1\n  User fin\nHost only\n  HostName 10.0.0.2\nMatch canonical host 10.0.0.2\n  Port 8\n")
	for _, bin := range []string{"", "-"} {
		opts := ResolveOptions{ConfigFile: cfg, SSHBinary: bin}
		web, err := Resolve(context.Background(), "web", Overrides{}, opts)
		if err != nil || web.User != "fin" || web.Port != 9 {
			t.Errorf("bin %q: web = %+v, %v; want user fin, port 9", bin, web, err)
		}
	}
	noFinal := writeFile(t, t.TempDir(), "config", "Host only\n  HostName 10.0.0.2\nMatch canonical host 10.0.0.2\n  Port 8\n")
	for _, bin := range []string{"", "-"} {
		only, err := Resolve(context.Background(), "only", Overrides{}, ResolveOptions{ConfigFile: noFinal, SSHBinary: bin})
		if err != nil || only.Port != 22 {
			t.Errorf("bin %q: Match canonical without a final pass must not apply: %+v, %v", bin, only, err)
		}
	}
}

// Include: relative to ~/.ssh ($HOME, as glob does), hidden files left
// out, files reached from an inactive block checked but never applied, and
// an included Host line ends with its file.
func TestParserInclude(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeFile(t, home, ".ssh/inc/a.conf", "Host a\n  Port 2201\nHost nothing\n")
	writeFile(t, home, ".ssh/inc/.hidden.conf", "Host a\n  User hidden\n")
	writeFile(t, home, ".ssh/never.conf", "Host a\n  User never\n")
	writeFile(t, home, ".ssh/broken.conf", "Frobnicate yes\n")
	cfg := writeFile(t, t.TempDir(), "config", "Host a\n  Include inc/*\n  User after-include\n"+
		"Host other\n  Include never.conf\nHost a\n  User last\n")
	for _, bin := range []string{"", "-"} {
		a, err := Resolve(context.Background(), "a", Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: bin})
		if err != nil || a.Port != 2201 || a.User != "after-include" {
			t.Errorf("bin %q: a = %+v, %v; want port 2201, user after-include", bin, a, err)
		}
	}
	broken := writeFile(t, t.TempDir(), "config", "Host other\n  Include broken.conf\n")
	for _, bin := range []string{"", "-"} {
		if _, err := Resolve(context.Background(), "a", Overrides{}, ResolveOptions{ConfigFile: broken, SSHBinary: bin}); err == nil ||
			!strings.Contains(err.Error(), "broken.conf") {
			t.Errorf("bin %q: an error in a file included from an inactive block must surface, got %v", bin, err)
		}
	}
}

// Explicit settings reach the config as ssh's -l and -p do: `Match user`
// sees the user, and they win over every file.
func TestParserOverridesAsCommandLine(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config", "Match user ops\n  IdentitiesOnly yes\nHost a\n  User cfg\n  Port 2\n  ProxyJump b\n  ProxyCommand nc\n")
	for _, bin := range []string{"", "-"} {
		opts := ResolveOptions{ConfigFile: cfg, SSHBinary: bin}
		a, err := Resolve(context.Background(), "a", Overrides{User: "ops", Port: 3, ProxyJump: "none"}, opts)
		if err != nil || a.User != "ops" || a.Port != 3 || !a.IdentitiesOnly || len(a.Jumps) != 0 {
			t.Errorf("bin %q: %+v, %v", bin, a, err)
		}
		if _, err := Resolve(context.Background(), "a", Overrides{User: "a;b"}, opts); err == nil {
			t.Errorf("bin %q: a user with shell characters must be refused", bin)
		}
		// A stored HostName reaches a ProxyCommand's %h, run by a shell.
		if _, err := Resolve(context.Background(), "a", Overrides{HostName: "$(touch pwned)"}, opts); err == nil {
			t.Errorf("bin %q: a HostName with shell characters must be refused", bin)
		}
	}
}
