package sshconfig

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The built-in parser is checked against the real client: random configs
// (Host and Match patterns, negation, Include, first-value-wins, tokens)
// are resolved both ways and every field kandev-exec uses must agree.
// Raise -sshcfg.n for a longer soak; a failure prints the seed to replay.
var (
	diffSeed = flag.Uint64("sshcfg.seed", 20260211, "seed of TestParserDifferential")
	diffN    = flag.Int("sshcfg.n", 60, "configs TestParserDifferential generates")
)

var diffAliases = []string{"web", "web-1", "Web", "db.example.com", "10.0.0.5", "bastion", "jump"}

func TestParserDifferential(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	t.Setenv("HOME", home) // Include's ~ and relative paths follow $HOME
	t.Setenv("KDX_DIFF_VAR", "from-env")
	os.Unsetenv("KDX_DIFF_UNSET")
	for i := 0; i < *diffN; i++ {
		seed := *diffSeed + uint64(i)
		g := &cfgGen{r: rand.New(rand.NewPCG(seed, 7)), root: root, files: map[string]string{}}
		g.generate()
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		for rel, body := range g.files {
			writeFile(t, root, rel, body)
		}
		cfg := filepath.Join(root, "config")
		for _, alias := range diffAliases {
			ov := g.overrides()
			viaG := describeResult(Resolve(context.Background(), alias, ov, ResolveOptions{ConfigFile: cfg}))
			viaParser := describeResult(Resolve(context.Background(), alias, ov, ResolveOptions{ConfigFile: cfg, SSHBinary: "-"}))
			if viaG != viaParser {
				t.Fatalf("seed %d (replay: go test ./ssh/sshconfig -run TestParserDifferential -sshcfg.seed=%d -sshcfg.n=1), alias %q, overrides %+v:\nssh -G: %s\nparser: %s\n%s",
					seed, seed, alias, ov, viaG, viaParser, g.dump())
			}
		}
	}
}

// describeResult is every field of every hop kandev-exec dials with, or
// only "error" (the two paths word their errors differently).
func describeResult(t *Target, err error) string {
	if err != nil {
		return "error"
	}
	var b strings.Builder
	for _, h := range t.Hops() {
		fmt.Fprintf(&b, "%s=%s@%s io=%v agent=%q ct=%d keys=%q certs=%q pc=%q hka=%q rev=%q reuse=%v persist=%s; ", h.Name, h.User, h.Addr(),
			h.IdentitiesOnly, h.IdentityAgent, h.ConnectTimeout, h.IdentityFiles, h.CertificateFiles, h.ProxyCommand,
			h.HostKeyAlias, h.RevokedHostKeys, h.Reuse, h.ControlPersist)
	}
	return b.String()
}

// cfgGen writes one random config tree: "config", includes under
// home/.ssh/inc (reached relatively and through ~) and under abs/.
type cfgGen struct {
	r     *rand.Rand
	root  string
	files map[string]string
}

func (g *cfgGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }
func (g *cfgGen) chance(p float64) bool    { return g.r.Float64() < p }

func (g *cfgGen) generate() {
	g.files["config"] = g.body(0)
	for _, inc := range []string{"home/.ssh/inc/a.conf", "home/.ssh/inc/b.conf", "home/.ssh/inc/.hidden.conf", "abs/x1.conf", "abs/x2.conf"} {
		if g.chance(0.6) {
			g.files[inc] = g.body(1)
		}
	}
}

// overrides are the explicit settings of `host add`, now and then.
func (g *cfgGen) overrides() Overrides {
	var ov Overrides
	if g.chance(0.7) {
		return ov
	}
	switch g.r.IntN(5) {
	case 0:
		ov.User = g.pick("ops", "root", "Deploy")
	case 1:
		ov.Port = 2022
	case 2:
		ov.ProxyJump = g.pick("none", "bastion", "admin@jump:2200", "%r@bastion", "ssh://ops@jump")
	case 3:
		ov.IdentitiesOnly = true
		ov.IdentityFiles = []string{"/keys/explicit-%h"}
	default:
		ov.HostName = "override.example"
	}
	return ov
}

func (g *cfgGen) body(depth int) string {
	var b strings.Builder
	defer func() {
		if g.chance(0.1) {
			crlf := strings.ReplaceAll(b.String(), "\n", "\r\n")
			b.Reset()
			b.WriteString(crlf)
		}
	}()
	if g.chance(0.3) {
		g.directives(&b, depth, "")
	}
	for n := 1 + g.r.IntN(4); n > 0; n-- {
		if g.chance(0.6) {
			fmt.Fprintf(&b, "%s %s\n", g.pick("Host", "host", "HOST"), g.hostPatterns())
		} else {
			fmt.Fprintf(&b, "%s %s\n", g.pick("Match", "match"), g.matchCriteria())
		}
		g.directives(&b, depth, g.pick("  ", "\t", ""))
	}
	return b.String()
}

func (g *cfgGen) hostPatterns() string {
	var ps []string
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		ps = append(ps, g.pick("web", "web-1", "Web", "WEB", "web*", "*", "w?b", "*.example.com", "db.example.com",
			"!web-1", "!*.example.com", "10.0.0.*", "10.0.0.5", "bastion", "jump", "b*", "web,jump", "!jump", "127.0.0.1", "target-*"))
	}
	return strings.Join(ps, " ")
}

func (g *cfgGen) matchCriteria() string {
	if g.chance(0.15) {
		return g.pick("all", "final all", "canonical all", "!all", "final", "canonical", "!final", "all host web",
			"host web all", "all # comment", "host=web", "localnetwork 10.0.0.0/8")
	}
	var cs []string
	for n := 1 + g.r.IntN(2); n > 0; n-- {
		c := g.pick("host", "originalhost", "user", "localuser", "Host", "final", "canonical")
		if g.chance(0.2) {
			c = "!" + c
		}
		switch strings.TrimPrefix(strings.ToLower(c), "!") {
		case "user", "localuser":
			c += " " + g.list("root", "deploy", "r*", "Deploy", "admin", "*")
		case "host", "originalhost":
			c += " " + g.list("web", "web*", "WEB", "10.0.0.*", "*.example.com", "web.example.com", "target-*", "127.0.0.1", "jump", "bastion")
		}
		cs = append(cs, c)
	}
	return strings.Join(cs, " ")
}

func (g *cfgGen) list(xs ...string) string {
	var out []string
	for n := 1 + g.r.IntN(2); n > 0; n-- {
		p := g.pick(xs...)
		if g.chance(0.2) {
			p = "!" + p
		}
		out = append(out, p)
	}
	return strings.Join(out, ",")
}

func (g *cfgGen) directives(b *strings.Builder, depth int, indent string) {
	for n := 1 + g.r.IntN(4); n > 0; n-- {
		kw, v := g.directive(depth)
		if v == "" {
			kw, v, _ = strings.Cut(kw, " ")
		}
		sep := g.pick(" ", " ", "=", " = ", "\t")
		if g.chance(0.1) && !strings.ContainsAny(v, `" `) {
			v = `"` + v + `"`
		}
		tail := ""
		if g.chance(0.1) {
			tail = " # note"
		}
		fmt.Fprintf(b, "%s%s%s%s%s\n", indent, kw, sep, v, tail)
	}
}

func (g *cfgGen) directive(depth int) (string, string) {
	switch g.r.IntN(14) {
	case 0, 1:
		return g.pick("HostName", "hostname"), g.pick("%h.example.com", "%h", "target-%h", "10.0.0.9", "127.1",
			"UPPER.Example.COM", "h%%x", "db.example.com", "FE80:0::1", "127.0.0.1", "%x", "10.0.0.%%", `esc\ aped`, "010.0.0.1")
	case 2:
		return "User", g.pick("deploy", "root", "Admin", "u-%h", "%%r")
	case 3:
		return "Port", g.pick("2222", "22", "ssh", "+2200", "2200", "0", "http")
	case 4, 5:
		if g.chance(0.3) {
			return "CertificateFile", g.pick("~/.ssh/id_%h-cert.pub", "/certs/%r@%h:%p", "${HOME}/c", "/certs/%C", "~/.ssh/shared-cert.pub")
		}
		return "IdentityFile", g.pick("~/.ssh/id_%h", "/keys/%r@%h:%p", "%d/k-%u", "/keys/%C", "${HOME}/k",
			"/keys/%n-%k-%i-%L-%l", "none", "~/.ssh/shared", "/keys/%x", "${KDX_DIFF_VAR}/k", "~root/k")
	case 6:
		return "IdentitiesOnly", g.pick("yes", "no", "true", "FALSE")
	case 7:
		return "IdentityAgent", g.pick("~/agent/%h.sock", "none", "SSH_AUTH_SOCK", "/run/%i/%L-%l-%C", "${HOME}/a",
			"$SSH_AUTH_SOCK", "/a/%n-%k-%r-%p-%u-%d", "${KDX_DIFF_UNSET}/x", "/a/%%")
	case 8:
		return "ConnectTimeout", g.pick("5", "1m30s", "none", "0", "2h", "7")
	case 9, 10:
		var hops []string
		for n := 1 + g.r.IntN(2); n > 0; n-- {
			hops = append(hops, g.pick("bastion", "admin@bastion:2200", "jump", "%r@jump", "jump:%p", "ssh://ops@jump:22",
				"[10.0.0.7]:2222", "10.0.0.7", "%h-jump", "bastion:ssh"))
		}
		if g.chance(0.1) {
			return "ProxyJump", "none"
		}
		return g.pick("ProxyJump", "proxyjump"), strings.Join(hops, ",")
	case 11:
		if g.chance(0.3) {
			return "RevokedHostKeys", g.pick("~/.ssh/revoked", "/etc/ssh/revoked", "none")
		}
		return "HostKeyAlias", g.pick("KeyAlias", "ka-%h")
	case 12:
		if depth == 0 && g.chance(0.7) {
			return "Include", g.pick("inc/*.conf", "~/.ssh/inc/a.conf", filepath.Join(g.root, "abs", "x?.conf"),
				"inc/.*.conf", filepath.Join(g.root, "abs", "none-*.conf"), "inc/*")
		}
		if depth == 1 && g.chance(0.3) {
			// From inside an include: a further level, now and then a loop.
			return "Include", g.pick("inc/b.conf", filepath.Join(g.root, "abs", "x2.conf"), "inc/*.conf")
		}
		return g.pick("ServerAliveInterval 30", "ForwardAgent no", "Compression yes"), ""
	default:
		return g.pick("ProxyCommand nc %h %p", "ProxyCommand none", "Frobnicate yes", "IgnoreUnknown Frob*"), ""
	}
}

func (g *cfgGen) dump() string {
	names := make([]string, 0, len(g.files))
	for n := range g.files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "-- %s --\n%s", n, g.files[n])
	}
	return b.String()
}
