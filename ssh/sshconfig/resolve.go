package sshconfig

import (
	"context"
	"fmt"
	"os/exec"
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
	// Cache, when set, shares identical lookups among the resolutions of
	// one command (see LookupCache).
	Cache *LookupCache
}

// Overrides are explicit settings (flags); they win over the config.
// User, Port, IdentitiesOnly and ProxyJump reach the config the way ssh's
// -l, -p, -o and -J do (so `Match user` sees the user); HostName and
// IdentityFiles are applied to the result.
type Overrides struct {
	HostName       string
	Port           int
	User           string
	IdentityFiles  []string
	IdentitiesOnly bool   // true forces IdentitiesOnly yes
	ProxyJump      string // "" keeps the config's; "none" connects directly (no ProxyJump or ProxyCommand)

	viaJump bool // a later hop of a ProxyJump list: reached through the earlier ones
}

// direct says the config's ProxyJump and ProxyCommand do not apply.
func (ov Overrides) direct() bool { return ov.viaJump || strings.EqualFold(ov.ProxyJump, "none") }

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
	if !validHostArg(name) || strings.Contains(name, "@") || strings.HasPrefix(name, "ssh://") {
		return nil, &ConfigError{Msg: fmt.Sprintf("invalid host name %q: no whitespace, '@', quotes or shell characters ('`$\\;&<>|(){},), and not starting with '-'", name)}
	}
	if ov.User != "" && !validRemoteUser(ov.User) {
		return nil, &ConfigError{Msg: fmt.Sprintf("host %q: invalid user %q", name, ov.User)}
	}
	if ov.HostName != "" && !validHostArg(ov.HostName) {
		// It reaches a ProxyCommand's %h: checked as ssh checks a host
		// name on its command line.
		return nil, &ConfigError{Msg: fmt.Sprintf("host %q: invalid HostName %q: no whitespace, quotes or shell characters", name, ov.HostName)}
	}
	if strings.ContainsAny(ov.ProxyJump, " \t\n#'\"") {
		return nil, &ConfigError{Msg: fmt.Sprintf("host %q: invalid ProxyJump %q: no blanks, quotes or '#'", name, ov.ProxyJump)}
	}
	s, err := lookup(ctx, name, ov, opts)
	if err != nil {
		return nil, err
	}
	t, err := targetFrom(name, s, ov)
	if err != nil {
		return nil, err
	}
	if t.ProxyCommand, err = proxyCommand(name, t, s); err != nil {
		return nil, &ConfigError{File: opts.ConfigFile, Msg: err.Error()}
	}
	jump := s.first("proxyjump")
	if jump == "" || jump == "none" {
		return t, nil
	}
	hops, err := jumpHops(jump, proxyTokens(name, t.HostName, s.first("hostkeyalias"), t.User, t.Port))
	if err != nil {
		return nil, &ConfigError{File: opts.ConfigFile, Msg: fmt.Sprintf("host %q: %v", name, err)}
	}
	for i, h := range hops {
		hop, err := resolve(ctx, h.host, Overrides{User: h.user, Port: h.port, viaJump: i > 0}, opts, depth+1)
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

func targetFrom(name string, s settings, ov Overrides) (*Target, error) {
	t := &Target{Name: name, HostName: s.first("hostname"), User: s.first("user"), Port: 22}
	if t.HostName == "" {
		t.HostName = name
	}
	if p := s.first("port"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, &ConfigError{Msg: fmt.Sprintf("host %q: bad port %q", name, p)}
		}
		t.Port = n
	}
	t.IdentitiesOnly = strings.EqualFold(s.first("identitiesonly"), "yes") || ov.IdentitiesOnly
	t.IdentityAgent = s.first("identityagent")
	t.HostKeyAlias = s.first("hostkeyalias")
	if ct := s.first("connecttimeout"); ct != "" && ct != "none" {
		t.ConnectTimeout, _ = strconv.Atoi(ct)
	}
	if ov.HostName != "" {
		t.HostName = ov.HostName
	}
	t.Reuse, t.ControlPersist = controlSettings(s)
	if t.User == "" {
		t.User = currentUser()
	}
	// Explicit files go first, like `ssh -i`, and the config's follow.
	me := currentLocal()
	keys := clientTokens(me, name, t.HostName, s.first("hostkeyalias"), t.User, t.Port)
	var err error
	if t.IdentityFiles, err = localPaths(append(append([]string{}, ov.IdentityFiles...), s["identityfile"]...), me, keys); err != nil {
		return nil, &ConfigError{Msg: fmt.Sprintf("host %q: IdentityFile %v", name, err)}
	}
	if t.CertificateFiles, err = localPaths(s["certificatefile"], me, keys); err != nil {
		return nil, &ConfigError{Msg: fmt.Sprintf("host %q: CertificateFile %v", name, err)}
	}
	if r := s.first("revokedhostkeys"); r != "" && !strings.EqualFold(r, "none") {
		if t.RevokedHostKeys, err = tildeExpand(r, me); err != nil {
			return nil, &ConfigError{Msg: fmt.Sprintf("host %q: RevokedHostKeys %v", name, err)}
		}
	}
	return t, nil
}

// controlSettings reads ControlMaster, ControlPath and ControlPersist as
// `ssh -G` prints them (controlmaster true/false/auto/ask/autoask,
// controlpersist no/yes/seconds, controlpath only when set) and as the
// parser keeps them (the same words, "0" for yes).
func controlSettings(s settings) (bool, time.Duration) {
	switch s.first("controlmaster") {
	case "true", "auto", "ask", "autoask":
	default:
		return false, 0
	}
	if p := s.first("controlpath"); p == "" || strings.EqualFold(p, "none") {
		return false, 0
	}
	switch p := s.first("controlpersist"); p {
	case "", "no":
		return false, 0
	case "yes":
		return true, 0
	default:
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return false, 0
		}
		return true, time.Duration(n) * time.Second
	}
}

// localPaths expands IdentityFile or CertificateFile values as ssh does
// (~, %-tokens, ${VAR}), dropping "none" and repeats.
func localPaths(values []string, me local, keys tokenKeys) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range values {
		if strings.EqualFold(f, "none") {
			continue
		}
		p, err := tildeExpand(f, me)
		if err == nil {
			p, err = expand(p, keys, true)
		}
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// proxyCommand is the config's ProxyCommand for t with its tokens
// expanded, as ssh runs it ("" for none). What ssh does with one that
// kandev-exec cannot do is refused by name.
func proxyCommand(name string, t *Target, s settings) (string, error) {
	pc := s.first("proxycommand")
	switch {
	case pc == "" || strings.EqualFold(pc, "none"):
		return "", nil
	case pc == "-":
		return "", fmt.Errorf("host %q: ProxyCommand - (ssh's own standard input and output as the connection) has no meaning for kandev-exec", name)
	case strings.EqualFold(s.first("proxyusefdpass"), "yes"):
		return "", fmt.Errorf("host %q: ProxyUseFdpass yes is not supported: kandev-exec talks over the ProxyCommand's standard input and output, so set ProxyUseFdpass no", name)
	}
	x, err := expand(pc, proxyTokens(name, t.HostName, s.first("hostkeyalias"), t.User, t.Port), false)
	if err != nil {
		return "", fmt.Errorf("host %q: ProxyCommand %v (ProxyCommand accepts %%%%, %%h, %%k, %%n, %%p and %%r)", name, err)
	}
	return x, nil
}

// lookup gets the settings for name from `ssh -G`, or from the parser when
// no OpenSSH client is available.
func lookup(ctx context.Context, name string, ov Overrides, opts ResolveOptions) (settings, error) {
	if c := opts.Cache; c != nil {
		opts.Cache = nil
		return c.get(ctx, lookupKey(name, ov), func() (settings, error) { return lookup(ctx, name, ov, opts) })
	}
	if bin := sshBinary(opts); bin != "-" {
		return sshG(ctx, bin, name, ov, opts.ConfigFile)
	}
	return parseConfigFor(name, ov, opts.ConfigFile)
}

// sshBinary is the OpenSSH client lookups ask, or "-" for the parser.
func sshBinary(opts ResolveOptions) string {
	if opts.SSHBinary != "" {
		return opts.SSHBinary
	}
	if p, err := exec.LookPath("ssh"); err == nil {
		return p
	}
	return "-"
}
