package ssh

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ResolveOptions says where ssh settings come from.
type ResolveOptions struct {
	// ConfigFile is the OpenSSH client config to read. Empty means
	// OpenSSH's own defaults (~/.ssh/config, then the system file).
	ConfigFile string
	// SSHBinary is the OpenSSH client used for `ssh -G`. Empty looks up
	// "ssh" in PATH; "-" never uses it and parses the config directly.
	SSHBinary string
}

// Overrides are explicit settings (flags); they win over the config.
type Overrides struct {
	HostName       string
	Port           int
	User           string
	IdentityFiles  []string
	IdentitiesOnly bool   // true forces IdentitiesOnly yes
	ProxyJump      string // "" keeps the config's; "none" disables it
}

// settings is the flattened keyword -> values view that `ssh -G` prints and
// the fallback parser produces. Keys are lower case.
type settings map[string][]string

func (s settings) first(k string) string {
	if v := s[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

const maxJumpDepth = 10

// Resolve turns a host name or alias into a Target with its jump chain,
// resolving every hop with its own settings, as OpenSSH does.
func Resolve(ctx context.Context, name string, ov Overrides, opts ResolveOptions) (*Target, error) {
	return resolve(ctx, name, ov, opts, 0)
}

func resolve(ctx context.Context, name string, ov Overrides, opts ResolveOptions, depth int) (*Target, error) {
	if depth > maxJumpDepth {
		return nil, &ConfigError{File: opts.ConfigFile, Msg: fmt.Sprintf("ProxyJump chain deeper than %d hops at %q (a loop?)", maxJumpDepth, name)}
	}
	if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, " \t\n'\"\\") {
		return nil, &ConfigError{Msg: fmt.Sprintf("invalid host name %q", name)}
	}
	s, err := lookup(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	if pc := s.first("proxycommand"); pc != "" && pc != "none" {
		return nil, &ConfigError{File: opts.ConfigFile, Msg: fmt.Sprintf("host %q uses ProxyCommand, which kandev-exec does not support; use ProxyJump", name)}
	}
	t, err := targetFrom(name, s, ov)
	if err != nil {
		return nil, err
	}
	jump := s.first("proxyjump")
	if ov.ProxyJump != "" {
		jump = ov.ProxyJump
	}
	if jump == "" || jump == "none" {
		return t, nil
	}
	specs := strings.Split(jump, ",")
	for i, spec := range specs {
		hopName, hopOv, err := parseJumpSpec(spec)
		if err != nil {
			return nil, err
		}
		hop, err := resolve(ctx, hopName, hopOv, opts, depth+1)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			// Only the first hop is reached with its own ProxyJump; later
			// hops are reached through the earlier ones (ssh -J semantics).
			t.Jumps = append(t.Jumps, hop.Jumps...)
		}
		hop.Jumps = nil
		t.Jumps = append(t.Jumps, hop)
	}
	if len(t.Jumps) > maxJumpDepth {
		return nil, &ConfigError{File: opts.ConfigFile, Msg: fmt.Sprintf("ProxyJump chain of %q is longer than %d hops", name, maxJumpDepth)}
	}
	return t, nil
}

// parseJumpSpec splits "[user@]host[:port]" (or an ssh:// URI; IPv6 in
// brackets).
func parseJumpSpec(spec string) (string, Overrides, error) {
	var ov Overrides
	orig := spec
	spec = strings.TrimPrefix(strings.TrimSpace(spec), "ssh://")
	if i := strings.LastIndex(spec, "@"); i >= 0 {
		ov.User, spec = spec[:i], spec[i+1:]
	}
	host, port := spec, ""
	if strings.HasPrefix(spec, "[") {
		end := strings.Index(spec, "]")
		if end < 0 || (end+1 < len(spec) && spec[end+1] != ':') {
			return "", ov, &ConfigError{Msg: fmt.Sprintf("bad ProxyJump entry %q", orig)}
		}
		host = spec[1:end]
		port = strings.TrimPrefix(spec[end+1:], ":")
	} else if i := strings.LastIndex(spec, ":"); i >= 0 {
		host, port = spec[:i], spec[i+1:]
	}
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return "", ov, &ConfigError{Msg: fmt.Sprintf("bad port in ProxyJump entry %q", orig)}
		}
		ov.Port = p
	}
	if host == "" {
		return "", ov, &ConfigError{Msg: fmt.Sprintf("empty host in ProxyJump entry %q", orig)}
	}
	return host, ov, nil
}

func targetFrom(name string, s settings, ov Overrides) (*Target, error) {
	t := &Target{Name: name, HostName: s.first("hostname"), User: s.first("user")}
	if t.HostName == "" {
		t.HostName = name
	}
	t.Port = 22
	if p := s.first("port"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, &ConfigError{Msg: fmt.Sprintf("host %q: bad port %q", name, p)}
		}
		t.Port = n
	}
	t.IdentitiesOnly = strings.EqualFold(s.first("identitiesonly"), "yes")
	t.IdentityAgent = s.first("identityagent")
	if ct := s.first("connecttimeout"); ct != "" && ct != "none" {
		t.ConnectTimeout, _ = strconv.Atoi(ct)
	}
	files := s["identityfile"]
	if ov.HostName != "" {
		t.HostName = ov.HostName
	}
	if ov.Port != 0 {
		t.Port = ov.Port
	}
	if ov.User != "" {
		t.User = ov.User
	}
	if t.User == "" {
		t.User = currentUser()
	}
	if len(ov.IdentityFiles) > 0 {
		// Explicit files go first, like `ssh -i`, and the config's follow.
		files = append(append([]string{}, ov.IdentityFiles...), files...)
	}
	if ov.IdentitiesOnly {
		t.IdentitiesOnly = true
	}
	seen := map[string]bool{}
	for _, f := range files {
		p := expandTokens(f, t)
		if !seen[p] {
			seen[p] = true
			t.IdentityFiles = append(t.IdentityFiles, p)
		}
	}
	return t, nil
}

// expandTokens expands ~ and the % tokens OpenSSH allows in IdentityFile.
func expandTokens(p string, t *Target) string {
	home, _ := os.UserHomeDir()
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	r := strings.NewReplacer("%%", "%", "%d", home, "%u", currentUser(), "%h", t.HostName,
		"%r", t.User, "%p", strconv.Itoa(t.Port))
	return r.Replace(p)
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// lookup gets the settings for name from `ssh -G`, or from the parser when
// no OpenSSH client is available.
func lookup(ctx context.Context, name string, opts ResolveOptions) (settings, error) {
	bin := opts.SSHBinary
	if bin == "" {
		if p, err := exec.LookPath("ssh"); err == nil {
			bin = p
		}
	}
	if bin == "" || bin == "-" {
		return parseConfigFor(name, opts.ConfigFile)
	}
	return sshG(ctx, bin, name, opts.ConfigFile)
}

var sshErrLine = regexp.MustCompile(`^(.+?):? line (\d+): (.+)$`)

func sshG(ctx context.Context, bin, name, file string) (settings, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := []string{"-G"}
	if file != "" {
		if _, err := os.Stat(file); err != nil {
			return nil, &ConfigError{File: file, Msg: "cannot read ssh config: " + err.Error()}
		}
		args = append(args, "-F", file)
	}
	args = append(args, "--", name)
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		for _, l := range strings.Split(msg, "\n") {
			if m := sshErrLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				n, _ := strconv.Atoi(m[2])
				return nil, &ConfigError{File: m[1], Line: n, Msg: m[3]}
			}
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, &ConfigError{File: file, Msg: fmt.Sprintf("ssh -G %s failed: %s", name, msg)}
	}
	s := settings{}
	for _, l := range strings.Split(out.String(), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), " ")
		if ok {
			s[k] = append(s[k], v)
		}
	}
	return s, nil
}
