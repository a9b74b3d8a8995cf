package sshconfig

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseJumpEntry(t *testing.T) {
	cases := []struct {
		in, host, user string
		port           int
		bad            bool
	}{
		{in: "bastion", host: "bastion"},
		{in: "me@bastion:2200", host: "bastion", user: "me", port: 2200},
		{in: "a@b@c:5", host: "c", user: "a@b", port: 5},
		{in: "bastion:ssh", host: "bastion", port: 22},
		{in: "bastion:", host: "bastion"},
		{in: "ssh://me@bastion:22", host: "bastion", user: "me", port: 22},
		{in: "ssh://a%20b;x=y@h.example./", host: "h.example", user: "a b"},
		{in: "[::1]:2222", host: "::1", port: 2222},
		{in: "[::1]", host: "::1"},
		{in: "%r@%h", host: "%h", user: "%r"},
		{in: "host:notaport", bad: true},
		{in: "host:0", bad: true},
		{in: "h/22", bad: true},
		{in: "::1", bad: true},
		{in: "[::1", bad: true},
		{in: "[a]b", bad: true},
		{in: "me@", bad: true},
		{in: "@h", bad: true},
		{in: "", bad: true},
		{in: "ssh://[::1]:5", bad: true},
		{in: "ssh://%r@h", bad: true},
		{in: "ssh://h/path", bad: true},
		{in: "ssh://", bad: true},
	}
	for _, c := range cases {
		h, err := parseJumpEntry(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: want an error, got %+v", c.in, h)
			}
			continue
		}
		if err != nil || h.host != c.host || h.user != c.user || h.port != c.port {
			t.Errorf("%q: got %+v, %v", c.in, h, err)
		}
	}
}

// OpenSSH turns ProxyJump into a ProxyCommand and expands the destination's
// %h %k %n %p %r in it; the earlier hops are expanded again by each inner
// ssh. `ssh -G` prints ProxyJump unexpanded, so this test reads what a real
// `ssh -v` executes (every hop's port is closed, so nothing connects) and
// checks the chain Resolve builds, hop by hop, against it.
func TestJumpTokensAgainstOpenSSH(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("this test needs the OpenSSH client: %v", err)
	}
	closed := closedPort(t)
	cases := map[string]string{
		"tokens in the last hop": "Host web\n  HostName 127.0.0.9\n  Port 1\n  User tu\n  HostKeyAlias hka\n" +
			"  ProxyJump %r@k%h-%k-%n-%p-%%:3\n",
		"tokens in earlier hops": "Host web\n  HostName 127.0.0.9\n  User tu\n" +
			"  ProxyJump j%h-%n:2,%r@k%h:3,last-%p\n",
		"first hop has its own ProxyJump": "Host web\n  HostName 127.0.0.8\n  ProxyJump first,second\n" +
			"Host first\n  ProxyJump %r@pre-%h:4\n" +
			// A later hop is reached with -J: its own proxy settings are ignored.
			"Host second\n  ProxyCommand nc %h %p\n",
		"uri and user default": "Host web\n  User Admin\n  ProxyJump ssh://ops@uri-host:6,plain\n",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "config", body+fmt.Sprintf(
				"Host *\n  HostName 127.0.0.1\n  Port %d\n  BatchMode yes\n  ConnectTimeout 5\n", closed))
			run := runSSH(t, cfg, "web")
			for _, bin := range []string{"", "-"} {
				got, err := Resolve(context.Background(), "web", Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: bin})
				if err != nil {
					t.Fatalf("bin %q: %v", bin, err)
				}
				if err := run.matches(got); err != nil {
					t.Errorf("bin %q: %v\nssh -v ran %+v", bin, err, run)
				}
			}
		})
	}
}

// sshRun is what `ssh -v` did: the proxy commands it executed, outermost
// first, and the one direct connection the innermost ssh made.
type sshRun struct {
	proxies []proxyCmd
	direct  string // host:port
}

// proxyCmd is "ssh [-l user] [-p port] ... host -W dest".
type proxyCmd struct{ user, port, host, dest string }

func runSSH(t *testing.T, cfg, alias string) sshRun {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "ssh", "-v", "-F", cfg, alias, "true").CombinedOutput()
	var run sshRun
	for _, m := range regexp.MustCompile(`Executing proxy command: exec (.*)`).FindAllStringSubmatch(string(out), -1) {
		var c proxyCmd
		f := strings.Fields(m[1])
		for i := 1; i < len(f); i++ {
			switch f[i] {
			case "-v":
			case "-l":
				i++
				c.user = f[i]
			case "-p":
				i++
				c.port = f[i]
			case "-W":
				i++
				c.dest = strings.Trim(f[i], "'")
			case "-J", "-F":
				i++
			default:
				c.host = f[i]
			}
		}
		run.proxies = append(run.proxies, c)
	}
	if m := regexp.MustCompile(`Connecting to \S+ \[(\S+)\] port (\d+)`).FindAllStringSubmatch(string(out), -1); len(m) == 1 {
		run.direct = net.JoinHostPort(m[0][1], m[0][2])
	}
	if len(run.proxies) == 0 || run.direct == "" {
		t.Fatalf("ssh -v shows no proxy command or no single direct connection:\n%s", out)
	}
	return run
}

// matches checks t's chain against what ssh ran: proxy i reaches hop
// n-1-i by name (with its -l and -p, when given, as that hop's user and
// port) towards the next element's address, and the first hop is the
// direct connection.
func (r sshRun) matches(t *Target) error {
	hops := t.Hops()
	if len(r.proxies) != len(hops)-1 {
		return fmt.Errorf("%d hops before the target, ssh used %d", len(hops)-1, len(r.proxies))
	}
	for i, c := range r.proxies {
		h, next := hops[len(hops)-2-i], hops[len(hops)-1-i]
		dest := "[" + next.HostName + "]:" + strconv.Itoa(next.Port)
		switch {
		case c.host != h.Name:
			return fmt.Errorf("proxy %d runs ssh for %q, Resolve has hop %q", i, c.host, h.Name)
		case c.dest != dest:
			return fmt.Errorf("proxy %d of %q forwards to %s, Resolve says %s", i, h.Name, c.dest, dest)
		case c.user != "" && c.user != h.User:
			return fmt.Errorf("hop %q: ssh passes -l %s, Resolve has user %q", h.Name, c.user, h.User)
		case c.port != "" && c.port != strconv.Itoa(h.Port):
			return fmt.Errorf("hop %q: ssh passes -p %s, Resolve has port %d", h.Name, c.port, h.Port)
		}
	}
	if r.direct != hops[0].Addr() {
		return fmt.Errorf("ssh connects first to %s, Resolve to %s", r.direct, hops[0].Addr())
	}
	return nil
}

func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestJumpHopsRefusals(t *testing.T) {
	keys := proxyTokens("web", "10.0.0.5", "", "deploy", 22)
	cases := map[string]string{
		"unknown token":              "jump-%x",
		"a %% in an earlier hop":     "j%%h,last",
		"a token yielding a blank":   "%r@h",
		"an earlier hop left broken": "%p@,last",
	}
	keys['r'] = "a b"
	for name, v := range cases {
		if _, err := jumpHops(v, keys); err == nil {
			t.Errorf("%s: jumpHops(%q) succeeded", name, v)
		}
	}
	hops, err := jumpHops("j%h,%r@k%n:3", proxyTokens("web", "10.0.0.5", "", "deploy", 2222))
	if err != nil || len(hops) != 2 || hops[0].host != "j10.0.0.5" || hops[1] != (jumpHop{user: "deploy", host: "kweb", port: 3}) {
		t.Errorf("jumpHops = %+v, %v", hops, err)
	}
}

// A ProxyCommand's tokens expand as OpenSSH's do: the command Resolve
// returns is what `ssh -v` says it executes, for the target and for the
// first jump host (whose own ProxyCommand applies).
func TestProxyCommandTokensAgainstOpenSSH(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("this test needs the OpenSSH client: %v", err)
	}
	const pc = "ProxyCommand true '%h' %p %r %n %k %% \"quoted\" # not a comment\n"
	cases := map[string]struct{ body, alias string }{
		"target": {"Host web\n  HostName 127.0.0.9\n  Port 1\n  User tu\n  HostKeyAlias hka\n  " + pc, "web"},
		"first jump host": {"Host web\n  ProxyJump ju@first:7\nHost first\n  HostName 127.0.0.8\n  " + pc +
			"Host web\n  HostName 127.0.0.9\n", "web"},
	}
	executing := regexp.MustCompile(`Executing proxy command: exec (.*)`)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "config", c.body+"Host *\n  BatchMode yes\n  ConnectTimeout 5\n")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, _ := exec.CommandContext(ctx, "ssh", "-v", "-F", cfg, c.alias, "true").CombinedOutput()
			m := executing.FindAllStringSubmatch(string(out), -1)
			if len(m) == 0 {
				t.Fatalf("ssh -v executed no proxy command:\n%s", out)
			}
			want := strings.TrimSuffix(m[len(m)-1][1], "\r") // the innermost ssh's: the first hop
			for _, bin := range []string{"", "-"} {
				got, err := Resolve(context.Background(), c.alias, Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: bin})
				if err != nil {
					t.Fatalf("bin %q: %v", bin, err)
				}
				if first := got.Hops()[0]; first.ProxyCommand != want {
					t.Errorf("bin %q: ProxyCommand %q, ssh executes %q", bin, first.ProxyCommand, want)
				}
				for _, h := range got.Hops()[1:] {
					if h.ProxyCommand != "" {
						t.Errorf("bin %q: hop %s after the first has ProxyCommand %q", bin, h.Name, h.ProxyCommand)
					}
				}
			}
		})
	}
}
