package ssh

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
			if got, want := describe(viaParser), describe(viaG); got != want {
				t.Errorf("parser and ssh -G disagree\nparser: %s\nssh -G: %s", got, want)
			}
		})
	}
}

func describe(t *Target) string {
	var b strings.Builder
	for _, h := range t.Hops() {
		b.WriteString(h.Name + "=" + h.User + "@" + h.Addr())
		if h.IdentitiesOnly {
			b.WriteString(" io")
		}
		if h.ConnectTimeout > 0 {
			b.WriteString(" ct")
		}
		b.WriteString(" [" + strings.Join(filterKeys(h.IdentityFiles), ",") + "]; ")
	}
	return b.String()
}

// filterKeys keeps the explicit /keys files: ssh -G lists more defaults
// (id_xmss, id_dsa, ...) than the parser's three.
func filterKeys(files []string) []string {
	var out []string
	for _, f := range files {
		if strings.HasPrefix(f, "/keys/") {
			out = append(out, f)
		}
	}
	return out
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
		t.Errorf("jump chain: %s", describe(j))
	}
	ov, _ := Resolve(context.Background(), "web", Overrides{User: "me", Port: 22, ProxyJump: "none"}, opts)
	if ov.User != "me" || ov.Port != 22 || len(ov.Jumps) != 0 {
		t.Errorf("explicit overrides must win: %+v", ov)
	}
}

func TestParserErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ body, want string }{
		"unknown keyword": {"Host a\n  HostName x\n  Frobnicate yes\n", ":3: unsupported ssh config keyword \"frobnicate\""},
		"match exec":      {"Match exec \"true\"\n  User x\n", ":1: unsupported Match criterion \"exec\""},
		"unterminated":    {"Host a\n  IdentityFile \"/x\n", ":2: unterminated quote"},
		"proxycommand":    {"Host a\n  ProxyCommand nc %h %p\n", "ProxyCommand"},
		"bad port":        {"Host a\n  Port 99999\n", "bad port"},
		"jump loop":       {"Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n", "ProxyJump chain"},
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

func TestParseJumpSpec(t *testing.T) {
	cases := []struct {
		in, host, user string
		port           int
		bad            bool
	}{
		{in: "bastion", host: "bastion"},
		{in: "me@bastion:2200", host: "bastion", user: "me", port: 2200},
		{in: "ssh://me@bastion:22", host: "bastion", user: "me", port: 22},
		{in: "[::1]:2222", host: "::1", port: 2222},
		{in: "[::1]", host: "::1"},
		{in: "host:notaport", bad: true},
		{in: "[::1", bad: true},
		{in: "me@", bad: true},
	}
	for _, c := range cases {
		host, ov, err := parseJumpSpec(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: want error", c.in)
			}
			continue
		}
		if err != nil || host != c.host || ov.User != c.user || ov.Port != c.port {
			t.Errorf("%q: got %q %+v %v", c.in, host, ov, err)
		}
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
